"""What a capture under the cost budget recorded, from its database, as one
JSON line: run length, slices and kernels, the database's size per minute,
records per second, the share of the run CUPTI was attached, and for each
rank the steps (hooks' step numbers) that lie inside CUPTI's recording
windows, so that ranks can be compared; and each rank's mean step time by
where the step lies in the budget's cycle (inside a window, the first steps
after one, the rest of the pause), to see what a window costs after it ends;
and what CUPTI cost inside the process: the steps' total against as many
steps at the mean detached step (from step 10 on, and from step 100 on, as
the loops' own ms/batch are taken), start-up and windows included; steps
over 5x the median (an evaluation between epochs) left out of both, and
counted under long_steps [count, seconds].

usage: budget_summary.py FILE.db LABEL"""
import json
import os
import sqlite3
import sys


def by_position(rs, iv):
    """Mean step ms (and count) inside windows, k steps after a window's
    end (1..5), and later in the pause; steps before the first window's end
    left out (start-up)."""
    if len(iv) < 2:
        return {}
    groups, w, k, pause_of = {}, 0, 0, None
    for n, a, b in rs:
        while w < len(iv) and iv[w][1] <= a:
            w += 1
        if w == 0:
            continue
        if w < len(iv) and iv[w][0] <= b - 2e6:
            key = "window"
        else:
            if pause_of != w:
                pause_of, k = w, 0
            k += 1
            key = "after_%d" % k if k <= 5 else "pause"
        groups.setdefault(key, []).append((b - a) / 1e6)
    return {k: [round(sum(v) / len(v), 3), len(v)] for k, v in sorted(groups.items())}


def training(rs):
    """The steps less those over 5x the median: the hooks' step that holds
    an evaluation or a checkpoint between epochs (no backward in it, so no
    new step) would count seconds as one detached step."""
    if not rs:
        return rs
    med = sorted(b - a for n, a, b in rs)[len(rs) // 2]
    return [(n, a, b) for n, a, b in rs if b - a <= 5 * med]


def excess(rs, iv, first):
    """Sum of the training steps rs from `first` on over as many detached
    steps, minus 1; detached = steps that touch no recording interval."""
    rs = [(n, a, b) for n, a, b in rs if n is not None and n >= first]
    off = [b - a for n, a, b in rs if not any(x < b and a < y for x, y in iv)]
    if not rs or len(off) < 10:
        return None
    return round(sum(b - a for n, a, b in rs) / (len(rs) * sum(off) / len(off)) - 1, 4)


def series(rs, iv, n):
    out, cur, at = [], [], 0
    for k, a, b in rs:
        if k is None:
            continue
        if k // n != at:
            out.append(round(sum(cur) / len(cur) / 1e6, 3) if cur else None)
            cur, at = [], k // n
        if not any(x < b and a < y for x, y in iv):
            cur.append(b - a)
    if cur:
        out.append(round(sum(cur) / len(cur) / 1e6, 3))
    return out


def main():
    db, label = sys.argv[1], sys.argv[2]
    c = sqlite3.connect(db)
    q = lambda s, *a: c.execute(s, a).fetchall()
    t0, t1 = q("SELECT min(ts), max(ts + dur) FROM slices")[0]
    secs = (t1 - t0) / 1e9 if t0 else 0
    slices = q("SELECT count(*) FROM slices")[0][0]
    kernels = q("SELECT count(*) FROM slices s JOIN categories c ON c.id = s.cat WHERE c.name = 'kernel'")[0][0]
    rec = q("""SELECT c.rank, c.ts, c.value FROM counters c JOIN strings n ON n.id = c.name
               WHERE n.str = 'htamerge/cupti recording' ORDER BY c.rank, c.ts""")
    steps = q("""SELECT t.rank, json_extract(s.args, '$.step'), s.ts, s.ts + s.dur FROM slices s
                 JOIN tracks t ON t.id = s.track JOIN strings n ON n.id = s.name
                 WHERE n.str = 'step' AND json_extract(s.args, '$.domain') = 'htamerge'
                 ORDER BY t.rank, s.ts""")
    ranks = sorted({r for r, *_ in steps} | {r for r, *_ in rec})
    out = {"label": label, "seconds": round(secs, 2), "slices": slices, "kernels": kernels,
           "db_mb": round(os.path.getsize(db) / 1e6, 1),
           "db_mb_per_min": round(os.path.getsize(db) / 1e6 / (secs / 60), 1) if secs else None,
           "records_per_s": round(slices / secs) if secs else None, "ranks": {}}
    for r in ranks:
        # recording intervals: attached from the start until a 0, again from each 1
        iv, on_since = [], t0
        for rr, ts, v in rec:
            if rr != r:
                continue
            if v == 0 and on_since is not None:
                iv.append((on_since, ts))
                on_since = None
            elif v == 1 and on_since is None:
                on_since = ts
        if on_since is not None:
            iv.append((on_since, t1))
        rs = [(n, a, b) for rr, n, a, b in steps if rr == r]
        tr = training(rs)
        inside = [n for n, a, b in rs if any(x <= a + 2e6 and b - 2e6 <= y for x, y in iv)]
        attached = sum(y - x for x, y in iv) / 1e9
        out["ranks"][r] = {"steps": len(rs), "recorded_steps": len(inside),
                           "step_ms_by_position": by_position(tr, iv),
                           "long_steps": [len(rs) - len(tr), round((sum(b - a for n, a, b in rs) -
                                                                   sum(b - a for n, a, b in tr)) / 1e9, 2)],
                           "recorded_step_list": inside[:400], "attached_s": round(attached, 2),
                           "attached_share": round(attached / secs, 4) if secs else None,
                           "windows": len(iv), "excess_from_10": excess(tr, iv, 10),
                           "excess_from_100": excess(tr, iv, 100),
                           # detached steps' mean ms per 250 steps: a cost that grows with the run
                           "detached_ms_by_250": series(tr, iv, 250)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
