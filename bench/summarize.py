#!/usr/bin/env python3
"""Turns bench/run.sh's raw measurements into a markdown table, prints it, and
(with --results) writes it as today's section of bench/RESULTS.md, replacing a
section of the same day and keeping everything above the first dated section.

Raw format: one "key value" per line; a key repeated once per round.
Stdlib only."""
import argparse
import datetime
import os
import re
import statistics
import sys

# Targets (issue 2, item 7) and the HTA anchor measured on this machine kind.
PARSE_TARGET_MB_S = 400.0
E2E_VS_ZCAT_TARGET = 1.4   # issue 21 (was 2.5, issue 2)
RSS_FACTOR = 1.5
HTA_LOAD_S, HTA_ANALYSES_S, HTA_WALL_S = 24.0, 2.3, 29.9
HTA_RSS_MB, HTA_WORKER_MB = 775.0, 237.0
SPEEDUP_AIM = 20.0

HEADER = """# htamerge benchmarks

What is measured (issue 2, item 7), all by `bash bench/run.sh` from the repository root
(environment: `BUILD_DIR` build folder, default `build`; `REPS`, default 3; see the
script's head):

- **Corpus**: `bench/make_corpus.py` turns the real trace
  `tests/fixtures/hta/nccl_parser_config/nccl_data.json.gz` (9.8 MB of JSON, rank 0 of 2)
  into 8 ranks x ~35 MB of JSON: its events repeated 3.56 times, each copy shifted by the
  trace's span with step numbers, correlation, External and flow ids offset, every rank
  skewed by 137 us x rank, `distributedInfo.rank` set; gzip level 6 as torch writes it;
  deterministic. It lives in `/tmp/htamerge-bench/corpus` and is reused.
- **Floor**: `zcat` of the 8 files to /dev/null (one process, as a user would).
- **End to end**: `htamerge ingest -q -o X.db corpus/` (parse on worker threads, the
  temporal, idle, overlap and kernel analyses at ingest, SQLite write, indexes), wall time
  and peak RSS from `/usr/bin/time -v`.
- **Parse only**: `bench/bench_parse.c` calls `src_kineto_read` on one rank file on one
  thread; MB/s of decompressed JSON, on a plain `.json` copy (JSON parsing alone) and on
  the `.json.gz` (inflate included). Median of `PARSE_RUNS` runs per round.
- **Read back**: `htamerge report X.db temporal`.
- **Stages**: `bench/bench_stages.c` makes ingest's calls on one thread and times each
  stage (read = load + inflate + parse; analyse; insert = SQLite rows; finish = indexes,
  ANALYZE, commit, fsync, rename).

Every figure is the median of `REPS` rounds (best in brackets); MB = 10^6 bytes.
Targets: parse >= 400 MB/s per core; end to end within 2.5x of zcat; peak RSS below
1.5x the largest decompressed file plus the SQLite page cache the writer asks for
(`PRAGMA cache_size` in store/writer.c). Anchor: HTA on this machine kind took 24.0 s
to load 8 x 34.8 MB, 2.3 s for the three analyses, 29.9 s wall, 775 MB + 237 MB per
worker; we aim at 20x HTA or better.

The machine is shared: `load` is the 1-minute load average before and after the run.
On a busy machine wall times rise; the CPU-time parse figure and the best-of values
are the steadier ones.
"""

DATED = re.compile(r"^## (\d{4}-\d{2}-\d{2})\b", re.M)


def load(path):
    d = {}
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        k, _, v = line.partition(" ")
        d.setdefault(k, []).append(v)
    return d


def nums(d, k):
    out = []
    for v in d.get(k, []):
        try:
            out.append(float(v))
        except ValueError:
            pass
    return out


def med(d, k):
    v = nums(d, k)
    return statistics.median(v) if v else None


def best(d, k, hi=False):
    v = nums(d, k)
    return (max(v) if hi else min(v)) if v else None


def one(d, k, default=""):
    v = d.get(k)
    return v[-1] if v else default


def f(x, fmt="%.2f"):
    return "n/a" if x is None else fmt % x


def verdict(ok):
    return "n/a" if ok is None else ("**met**" if ok else "**missed**")


def build(d, work):
    mb = 1e6
    largest = med(d, "largest_json_bytes")
    total = med(d, "total_json_bytes")
    cache = med(d, "sqlite_cache_bytes")
    zc, zc_b = med(d, "zcat_wall"), best(d, "zcat_wall")
    e2e, e2e_b = med(d, "ingest_wall_hr"), best(d, "ingest_wall_hr")
    rss_kb, rss_max = med(d, "ingest_rss_kb"), best(d, "ingest_rss_kb", hi=True)
    rss = rss_kb * 1024 / mb if rss_kb is not None else None
    cpu = None
    if nums(d, "ingest_user") and nums(d, "ingest_sys"):
        cpu = statistics.median(u + s for u, s in zip(nums(d, "ingest_user"), nums(d, "ingest_sys")))
    pj, pj_b = med(d, "parse_json_median_mb_s"), best(d, "parse_json_best_mb_s", hi=True)
    pjc = med(d, "parse_json_cpu_median_mb_s")
    pg, pg_b = med(d, "parse_gz_median_mb_s"), best(d, "parse_gz_best_mb_s", hi=True)
    pgc = med(d, "parse_gz_cpu_median_mb_s")
    rep = med(d, "report_temporal_wall")
    # End to end with the three reports, per round (issue 21), and HTA measured
    # in the same rounds when bench/run.sh found a checkout.
    reps = [nums(d, k) for k in ("ingest_wall_hr", "report_temporal_wall", "report_idle_wall",
                                 "report_overlap_wall")]
    full = [sum(x) for x in zip(*reps)] if all(reps) else []
    full_m = statistics.median(full) if full else None
    hta, hta_load, hta_an = med(d, "hta_total_s"), med(d, "hta_load_s"), med(d, "hta_analyses_s")
    j1 = med(d, "ingest_j1_wall")
    noargs = med(d, "ingest_noargs_wall")
    db = med(d, "db_bytes")
    dbn = med(d, "db_noargs_bytes")
    ratio = e2e / zc if e2e and zc else None
    jobs = ("`%s`" % one(d, "ingest_args") if one(d, "ingest_args", "none") != "none"
            else "-j %s (the default here)" % one(d, "default_jobs"))
    bound = RSS_FACTOR * largest + cache if largest is not None and cache is not None else None
    rss_b = rss_kb * 1024 if rss_kb is not None else None

    rows = [
        ("corpus", "%d files, %.1f MB JSON (largest %.1f MB), %.1f MB gzip" % (
            med(d, "files") or 0, total / mb, largest / mb, med(d, "total_gz_bytes") / mb), "", ""),
        ("zcat floor (wall)", "%s s (%s)" % (f(zc), f(zc_b)),
         "%.0f MB/s" % (total / mb / zc) if zc else "", ""),
        ("**ingest end to end** (wall)", "%s s (%s)" % (f(e2e), f(e2e_b)),
         "%.0f MB/s JSON; CPU %s s" % (total / mb / e2e, f(cpu)) if e2e else "", ""),
        ("end to end / zcat", f(ratio) + "x", "<= %.1fx" % E2E_VS_ZCAT_TARGET,
         verdict(ratio <= E2E_VS_ZCAT_TARGET if ratio else None)),
        ("**ingest + reports temporal, idle, overlap** (wall)", "%s s (%s)" % (
            f(full_m), f(min(full) if full else None)),
         "%s x zcat" % f(full_m / zc if full_m and zc else None),
         verdict(full_m / zc <= E2E_VS_ZCAT_TARGET if full_m and zc else None)),
        ("**HTA measured** (load + temporal, idle, overlap), same rounds",
         "%s s (load %s + analyses %s)" % (f(hta), f(hta_load), f(hta_an)) if hta else "n/a (no HTA_DIR)",
         "speedup %sx" % f(hta / full_m if hta and full_m else None, "%.1f"),
         verdict(hta / full_m >= SPEEDUP_AIM if hta and full_m else None)),
        ("peak RSS (ingest)", "%s MB (max %s)" % (f(rss, "%.0f"),
                                                  f(rss_max * 1024 / mb if rss_max else None, "%.0f")),
         "< 1.5 x %.1f + %.0f cache = %.0f MB" % (largest / mb, cache / mb, bound / mb) if bound else "",
         verdict(rss_b < bound if rss_b and bound else None)),
        ("peak RSS / largest decompressed file", f(rss_b / largest if rss_b and largest else None)
         + "x", "(bound without the cache: 1.5x)", ""),
        ("**parse only, plain JSON, 1 core**", "%s MB/s (best %s)" % (f(pj, "%.0f"), f(pj_b, "%.0f")),
         ">= %.0f MB/s" % PARSE_TARGET_MB_S, verdict(pj >= PARSE_TARGET_MB_S if pj else None)),
        ("parse only, plain JSON, per CPU-second", f(pjc, "%.0f") + " MB/s",
         ">= %.0f MB/s" % PARSE_TARGET_MB_S, verdict(pjc >= PARSE_TARGET_MB_S if pjc else None)),
        ("parse only, .json.gz (inflate included), 1 core",
         "%s MB/s (best %s); CPU %s MB/s" % (f(pg, "%.0f"), f(pg_b, "%.0f"), f(pgc, "%.0f")), "", ""),
        ("`report temporal` (read back)", f(rep, "%.3f") + " s", "", ""),
        ("database size", "%.1f MB (%.1f MB with --no-args)" % (db / mb, dbn / mb) if db else "n/a",
         "", ""),
        ("ingest -j 1 / --no-args (wall)", "%s s / %s s" % (f(j1), f(noargs)),
         "end to end above ran with " + jobs, ""),
        ("**speedup vs HTA** (29.9 s wall)", f(HTA_WALL_S / e2e if e2e else None, "%.1f") + "x",
         ">= %.0fx" % SPEEDUP_AIM, verdict(HTA_WALL_S / e2e >= SPEEDUP_AIM if e2e else None)),
        ("vs HTA load + analyses (24.0 + 2.3 s)",
         f((HTA_LOAD_S + HTA_ANALYSES_S) / e2e if e2e else None, "%.1f") + "x", "", ""),
        ("memory vs HTA (775 MB + 237 MB/worker)",
         f(HTA_RSS_MB / rss if rss else None, "%.1f") + "x less than HTA's main process alone", "",
         ""),
    ]
    out = ["| measure | ours | target / reference | |", "|---|---|---|---|"]
    out += ["| %s | %s | %s | %s |" % r for r in rows]

    st = {k: med(d, "stages_" + k) for k in ("read_s", "analyse_s", "insert_s", "finish_s",
                                             "free_s", "open_s", "total_s")}
    if st["total_s"]:
        tot = st["total_s"]
        out += ["", "Where the time goes (`bench_stages`: ingest's calls on ONE thread, median):", "",
                "| stage | s | share | MB/s of JSON |", "|---|---|---|---|"]
        for name, k in (("read (load + inflate + parse)", "read_s"),
                        ("analyse (an_hta_run x2)", "analyse_s"),
                        ("insert (SQLite rows)", "insert_s"),
                        ("finish (indexes, ANALYZE, commit, fsync)", "finish_s"),
                        ("free + open", None)):
            v = (st["free_s"] or 0) + (st["open_s"] or 0) if k is None else st[k]
            out.append("| %s | %.3f | %.0f%% | %s |" % (
                name, v, 100 * v / tot, "%.0f" % (total / mb / v) if v and k else ""))
        out.append("| total, one thread | %.3f | 100%% | %.0f |" % (tot, total / mb / tot))
        ra, ins, fin_s = ((st["read_s"] or 0) + (st["analyse_s"] or 0), st["insert_s"] or 0,
                          st["finish_s"] or 0)
        out += ["", "Ingest runs read + analyse on parser threads while the calling thread "
                "inserts, then finishes alone. Best cases from these stage times: one parser "
                "thread, max(read + analyse, insert) + finish = %.2f s; unlimited parser "
                "threads, the writer's floor insert + finish = %.2f s. Measured end to end: "
                "%s s with %s, %s s with -j 1." % (
                    max(ra, ins) + fin_s, ins + fin_s, f(e2e), jobs, f(j1))]
    fin = {k[len("finish_"):]: med(d, k) for k in d if k.startswith("finish_")}
    if fin:
        idx = sorted(((v, k[len("index_"):]) for k, v in fin.items()
                      if k.startswith("index_") and v is not None), reverse=True)
        out += ["", "Finish, statement by statement (`finish_breakdown.py`: the writer's "
                "indexes and ANALYZE re-run on a copy of the database, best of 2):", "",
                "| statement | s |", "|---|---|"]
        for v, k in idx[:3]:
            out.append("| CREATE INDEX %s | %.3f |" % (k, v))
        if len(idx) > 3:
            out.append("| the other %d indexes | %.3f |" % (len(idx) - 3,
                                                          sum(v for v, _ in idx[3:])))
        out.append("| ANALYZE + COMMIT | %.3f |" % ((fin.get("analyze") or 0) + (fin.get("commit") or 0)))
        if fin.get("slices_table_bytes") and fin.get("slices_args_bytes"):
            out += ["", "The slices table is %.1f MB for %d rows, %.1f MB of it args JSON (%.0f%%)." % (
                fin["slices_table_bytes"] / mb, fin.get("slices_rows") or 0,
                fin["slices_args_bytes"] / mb,
                100 * fin["slices_args_bytes"] / fin["slices_table_bytes"])]
    for name, title in (("perf_thread.txt", "CPU by thread and library (perf, one default "
                         "ingest; the lower thread id is the writer, i.e. main, thread)"),
                        ("perf_sym.txt", "Hottest symbols by thread (self time)")):
        p = os.path.join(work, name)
        if os.path.exists(p) and os.path.getsize(p) > 0:
            out += ["", title + ":", "", "```"] + \
                [l.rstrip() for l in open(p)] + ["```"]
    return "\n".join(out)


def section(d, body, label=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    if one(d, "measured_at"):     # written by run.sh at the end of the run (UTC)
        now = datetime.datetime.strptime(one(d, "measured_at"), "%Y-%m-%dT%H:%M")
    cpu = one(d, "cpu").replace("_", " ")
    note = one(d, "build_note")
    if not label:
        label = "%s cores, %s" % (one(d, "nproc"), cpu)
        if one(d, "cpus", "all") != "all":
            label += ", pinned"
    head = "## %s · %s\n\n" % (now.strftime("%Y-%m-%d"), label)
    if one(d, "git_rev", "none") != "none":
        head += "Built from %s.\n" % one(d, "git_rev").replace("_", " ")
    pin = ""
    if one(d, "cpus", "all") != "all":
        pin = " (pinned to CPUs %s of %s)" % (one(d, "cpus"), one(d, "nproc_all"))
    if one(d, "ingest_args", "none") != "none":
        pin += "; ingest options `%s`" % one(d, "ingest_args")
    built = one(d, "binary_built")
    head += ("Machine: %s cores%s (%s), %s GB RAM; build %s%s; load %s before, %s after; "
             "measured %s UTC.%s\n\n" % (
                 one(d, "nproc"), pin, cpu, one(d, "mem_gb"), one(d, "build_type"),
                 ", binary of %s UTC" % built.replace("_", " ") if built else "",
                 one(d, "load_start"), one(d, "load_end"), now.strftime("%H:%M"),
                 " Build failed, measured the existing binary." if note else ""))
    line = one(d, "ingest_line")
    if line:
        head += "Ingest said: `%s`\n\n" % line
    return head + body + "\n"


def write_results(path, sec):
    text = open(path).read() if os.path.exists(path) else ""
    m = DATED.search(text)
    header = text[:m.start()] if m else text
    if not header.strip():
        header = HEADER + "\n"
    # Sections keyed by their heading line (date + machine label), newest first;
    # a run replaces the section with the same heading, where it is.
    keys, sections = [], {}
    if m:
        starts = [x.start() for x in DATED.finditer(text)] + [len(text)]
        for a, b in zip(starts, starts[1:]):
            chunk = text[a:b]
            k = chunk.split("\n", 1)[0]
            if k not in sections:
                keys.append(k)
            sections[k] = chunk.rstrip("\n") + "\n\n"
    k = sec.split("\n", 1)[0]
    if k not in sections:          # a new section goes on top; a rerun stays in place
        keys.insert(0, k)
    sections[k] = sec.rstrip("\n") + "\n\n"
    body = "".join(sections[x] for x in keys)
    with open(path + ".tmp", "w") as fh:
        fh.write(header.rstrip("\n") + "\n\n" + body.rstrip("\n") + "\n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--work", default=".")
    ap.add_argument("--results")
    ap.add_argument("--label", help="machine label for the section heading")
    a = ap.parse_args()
    d = load(a.raw)
    sec = section(d, build(d, a.work), a.label)
    print(sec)
    if a.results:
        write_results(a.results, sec)
        print("bench: wrote %s" % a.results, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
