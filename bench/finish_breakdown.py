#!/usr/bin/env python3
"""Splits the writer's finish stage: on a copy of an ingested database with
its indexes and statistics dropped, re-runs each CREATE INDEX of
sql/indexes.sql and the ANALYZE of store/writer.c with the writer's load
pragmas, timing each (best of --reps). Also times a full scan of slices and
reports how much of the table is args JSON. Stdlib only (sqlite3 module).

usage: finish_breakdown.py DB [--sql sql/indexes.sql] [--reps 2]
Output: one "key value" per line (read by bench/run.sh)."""
import argparse
import os
import re
import shutil
import sqlite3
import time

PRAGMAS = ["PRAGMA journal_mode = OFF", "PRAGMA synchronous = OFF",
           "PRAGMA locking_mode = EXCLUSIVE", "PRAGMA cache_size = -262144", "PRAGMA threads = 4"]


def statements(path):
    text = re.sub(r"--[^\n]*", "", open(path).read())
    return [s.strip() for s in text.split(";") if s.strip()]


def writer_pragmas(root):
    p = os.path.join(root, "store", "writer.c")
    try:
        src = open(p).read()
    except OSError:
        return PRAGMAS
    found = re.findall(r'"(PRAGMA (?:journal_mode|synchronous|locking_mode|cache_size|threads)'
                       r' = [^"]+)"', src)
    found = [p for p in found if "%" not in p] or PRAGMAS[:-1]
    if not any("threads" in p for p in found):   # writer.c computes it: one per core
        found.append("PRAGMA threads = %d" % (os.cpu_count() or 1))
    return found


def run_once(db, stmts, pragmas):
    work = db + ".finish"
    shutil.copyfile(db, work)
    con = sqlite3.connect(work, isolation_level=None)
    try:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                   "AND sql IS NOT NULL").fetchall():
            con.execute('DROP INDEX "%s"' % name)
        for t in ("sqlite_stat1", "sqlite_stat4"):
            con.execute("DROP TABLE IF EXISTS %s" % t)
        con.close()
        con = sqlite3.connect(work, isolation_level=None)
        for p in pragmas:
            con.execute(p).fetchall()
        out = {}
        con.execute("BEGIN")
        for s in stmts:
            m = re.match(r"CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)", s,
                         re.I)
            t0 = time.perf_counter()
            con.execute(s)
            out["index_" + (m.group(1) if m else "other")] = time.perf_counter() - t0
        t0 = time.perf_counter()
        con.execute("PRAGMA analysis_limit = 1000").fetchall()
        con.execute("ANALYZE")
        out["analyze"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        con.execute("COMMIT")
        out["commit"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        n, a = con.execute("SELECT count(*), sum(length(args)) FROM slices").fetchone()
        out["scan_slices"] = time.perf_counter() - t0
        out["slices_rows"] = n
        out["slices_args_bytes"] = a or 0
        out["slices_table_bytes"] = con.execute(
            "SELECT sum(pgsize) FROM dbstat WHERE name = 'slices'").fetchone()[0] \
            if has_dbstat(con) else -1
        return out
    finally:
        con.close()
        os.remove(work)


def has_dbstat(con):
    try:
        con.execute("SELECT 1 FROM dbstat LIMIT 1").fetchall()
        return True
    except sqlite3.Error:
        return False


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--sql", default=os.path.join(root, "sql", "indexes.sql"))
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    stmts = statements(a.sql)
    pragmas = writer_pragmas(root)
    best = {}
    for _ in range(a.reps):
        for k, v in run_once(a.db, stmts, pragmas).items():
            best[k] = v if k not in best else min(best[k], v)
    for k, v in best.items():
        print("%s %s" % (k, ("%.4f" % v) if isinstance(v, float) else v))


if __name__ == "__main__":
    main()
