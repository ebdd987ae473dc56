#!/usr/bin/env python3
"""Cuts a merged htamerge database down to a window of ProfilerSteps, for a
fixture small enough to commit (tests/fixtures/gpu/nccl2_*.db.gz).

usage: trim_db.py IN.db OUT.db --steps FIRST:LAST --reanalyse PATH [--gzip]

Each rank's window is [start of its ProfilerStep FIRST, end of its
ProfilerStep LAST], in aligned ns: one window for all ranks would keep the
tail of the step before on a rank that runs behind, and shift the
occurrences NVTX stitching pairs. What stays:
  * slices that overlap the window (a parent contains its children, so
    every kept slice keeps its parent), plus GPU work whose correlation id
    is that of a kept CPU launch on the same rank (a step's last kernels may
    end after the CPU range), plus their parents;
  * collectives whose slice stays, counters inside the window, the steps
    FIRST..LAST, every rank, track, file (its slice count updated) and
    skipped row, and the strings something still names;
  * not the a_* analyses: they describe the whole capture (the step
    columns of `steps` describe one step each and stay).
The cross-rank tables are then rebuilt by htamerge-reanalyse (PATH), meta
gets trimmed_from, and the file is VACUUMed. --gzip also writes OUT.db.gz
(mtime 0, so the same input gives the same bytes). Python 3 standard
library only.
"""
import argparse
import gzip
import os
import shutil
import sqlite3
import subprocess
import sys

A_TABLES = ("a_temporal", "a_overlap", "a_idle", "a_kernel_class", "a_kernel_labels", "a_kernels")


def die(msg):
    print("trim_db.py: " + msg, file=sys.stderr)
    sys.exit(1)


def windows(db, first, last):
    """Fills temp table win (rank, lo, hi); every rank needs both steps."""
    db.execute("""
        CREATE TEMP TABLE win AS
        SELECT r.rank, a.ts AS lo, b.ts + b.dur AS hi FROM ranks r
        LEFT JOIN steps a ON a.rank = r.rank AND a.number = ?1
        LEFT JOIN steps b ON b.rank = r.rank AND b.number = ?2""", (first, last))
    bad = db.execute("SELECT rank FROM win WHERE lo IS NULL OR hi IS NULL OR hi <= lo").fetchall()
    if bad:
        have = [r[0] for r in db.execute("SELECT DISTINCT number FROM steps ORDER BY 1")]
        die("steps %d:%d are not on rank(s) %s (steps there: %s)"
            % (first, last, [r[0] for r in bad], have))
    return db.execute("SELECT min(lo), max(hi) FROM win").fetchone()


def trim(db, first, last, lo, hi):
    db.execute("CREATE TEMP TABLE keep (id INTEGER PRIMARY KEY)")
    db.execute("""CREATE TEMP TABLE track_rank AS
                  SELECT t.id, t.rank, t.kind, w.lo, w.hi FROM tracks t JOIN win w ON w.rank = t.rank""")
    # Slices overlapping their rank's window.
    db.execute("""INSERT INTO keep SELECT s.id FROM slices s JOIN track_rank t ON t.id = s.track
                  WHERE s.ts < t.hi AND s.ts + s.dur > t.lo""")
    # GPU work launched by a kept CPU slice of the same rank.
    db.execute("""
        INSERT OR IGNORE INTO keep
        SELECT g.id FROM slices g JOIN track_rank gt ON gt.id = g.track AND gt.kind = 'gpu_stream'
        WHERE g.correlation IS NOT NULL AND EXISTS (
            SELECT 1 FROM keep k JOIN slices c ON c.id = k.id
            JOIN track_rank ct ON ct.id = c.track AND ct.kind = 'cpu_thread'
            WHERE c.correlation = g.correlation AND ct.rank = gt.rank)""")
    # Their parents, up to the top.
    while db.execute("""INSERT OR IGNORE INTO keep
                        SELECT s.parent FROM slices s JOIN keep k ON k.id = s.id
                        WHERE s.parent IS NOT NULL""").rowcount > 0:
        pass
    db.execute("DELETE FROM slices WHERE id NOT IN (SELECT id FROM keep)")
    db.execute("DELETE FROM collectives WHERE slice NOT IN (SELECT id FROM keep)")
    db.execute("""DELETE FROM counters WHERE NOT EXISTS (
                      SELECT 1 FROM win w WHERE w.rank = counters.rank
                      AND counters.ts BETWEEN w.lo AND w.hi)""")
    db.execute("DELETE FROM steps WHERE number < ?1 OR number > ?2", (first, last))
    db.execute("UPDATE steps SET slice = NULL WHERE slice NOT IN (SELECT id FROM keep)")
    for t in A_TABLES:
        db.execute("DELETE FROM %s" % t)
    # A rank's slice count moves to its only file (live captures have one).
    db.execute("""
        UPDATE files SET slices = (SELECT count(*) FROM slices s JOIN track_rank t ON t.id = s.track
                                   WHERE t.rank = files.rank)
        WHERE (SELECT count(*) FROM files f WHERE f.rank = files.rank) = 1""")
    db.execute("""
        DELETE FROM strings WHERE id NOT IN (
            SELECT name FROM slices WHERE name IS NOT NULL
            UNION SELECT cat_name FROM slices WHERE cat_name IS NOT NULL
            UNION SELECT name FROM tracks WHERE name IS NOT NULL
            UNION SELECT name FROM counters WHERE name IS NOT NULL)""")
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('trimmed_from', ?)",
               ("ProfilerSteps %d..%d of the capture: aligned ns within [%d, %d] "
                "(tests/tools/trim_db.py); a_* analyses removed" % (first, last, lo, hi),))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--steps", required=True, help="FIRST:LAST ProfilerStep numbers, inclusive")
    ap.add_argument("--reanalyse", required=True, help="path of the htamerge-reanalyse tool")
    ap.add_argument("--gzip", action="store_true", help="also write OUTPUT.gz")
    a = ap.parse_args()
    try:
        first, last = (int(x) for x in a.steps.split(":"))
    except ValueError:
        die("--steps must be FIRST:LAST, e.g. 4:7")
    if os.path.abspath(a.input) == os.path.abspath(a.output):
        die("output must differ from input")
    shutil.copyfile(a.input, a.output)
    db = sqlite3.connect(a.output, isolation_level=None)
    try:
        db.execute("BEGIN")
        lo, hi = windows(db, first, last)
        trim(db, first, last, lo, hi)
        db.execute("COMMIT")
    except sqlite3.Error as e:
        die("%s: %s" % (a.output, e))
    db.close()
    r = subprocess.run([a.reanalyse, a.output])
    if r.returncode != 0:
        die("%s failed on %s" % (a.reanalyse, a.output))
    db = sqlite3.connect(a.output, isolation_level=None)
    db.execute("VACUUM")
    db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    if a.gzip:
        with open(a.output, "rb") as src, open(a.output + ".gz", "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as z:
                shutil.copyfileobj(src, z)


if __name__ == "__main__":
    main()
