#!/usr/bin/env python3
"""Writes the committed seed corpora fuzz/corpus/<target>/ from the test
fixtures (real Kineto traces, the bad-trace fixtures, the SQL the server
runs). Deterministic; rerun after changing it:
    python3 fuzz/make_seeds.py            # text seeds
    build-fuzz/fuzz/make_wire_seeds fuzz/corpus/fuzz_wire fuzz/corpus/fuzz_kineto_file/*
The wire seeds need the encoder, so a small C tool writes them."""
import glob
import gzip
import hashlib
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures")
OUT = os.path.join(ROOT, "fuzz", "corpus")
MAX_SEED = 4096

TRACES = [
    "gloo/ddp4_none/rank-0.pt.trace.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/rank_non_gpu/rank_non_gpu.json.gz",
    "hta/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
]


def write(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= MAX_SEED * 2, (target, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def pick_events(events):
    """One event per (ph, cat), the step markers, a flow pair, a collective
    and an event with the longest args: the shapes the reader handles."""
    seen, out = set(), []
    flows = {}
    for e in events:
        if not isinstance(e, dict):
            continue
        args = e.get("args", {}) if isinstance(e.get("args"), dict) else {}
        key = (e.get("ph"), e.get("cat"), "Collective name" in args,
               str(e.get("name", "")).startswith("ProfilerStep"), "correlation" in args)
        if e.get("ph") in ("s", "f"):
            flows.setdefault(e.get("id"), []).append(e)
            continue
        if key not in seen:
            seen.add(key)
            out.append(e)
    pair = next((v for v in flows.values() if len(v) == 2), None)
    return out + (pair or [])


def small_trace(top, events, budget):
    doc = {k: v for k, v in top.items() if k != "traceEvents"}
    if isinstance(doc.get("deviceProperties"), list):
        doc["deviceProperties"] = doc["deviceProperties"][:1]
    doc.pop("INFO", None)
    evs = []
    for e in events:
        trial = dict(doc, traceEvents=evs + [e])
        if len(json.dumps(trial, indent=1)) > budget:
            continue
        evs.append(e)
    doc["traceEvents"] = evs
    return json.dumps(doc, indent=1)


def kineto_seeds():
    for rel in TRACES:
        top = json.loads(gzip.open(os.path.join(FIX, rel)).read())
        base = os.path.basename(rel).split(".")[0]
        evs = pick_events(top.get("traceEvents", []))
        text = small_trace(top, evs, MAX_SEED)
        write("fuzz_kineto_file", base + ".json", text)
        for i, e in enumerate(evs[:12]):
            write("fuzz_kineto_event", "%s_%02d.json" % (base, i), json.dumps(e, indent=1))
        # gzip seeds: odd mode byte = compressed bytes after the magic;
        # even mode byte = JSON the harness compresses itself
        gz = gzip.compress(text.encode(), 6, mtime=0)
        write("fuzz_gzip", base + "_raw", b"\x01" + gz[2:])
        write("fuzz_gzip", base + "_json", b"\x0a" + text.encode())
    for f in sorted(glob.glob(os.path.join(FIX, "kineto_bad", "*"))):
        data = open(f, "rb").read()
        if len(data) > MAX_SEED:
            continue
        name = os.path.basename(f)
        write("fuzz_kineto_file", "bad_" + name, data)
        if data[:2] == b"\x1f\x8b":
            write("fuzz_gzip", "bad_" + name, b"\x01" + data[2:])
    # a launch and its kernel share a correlation id: one seed with both
    write("fuzz_kineto_event", "launch_kernel_pair.json",
          '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":10,'
          '"dur":5,"args":{"correlation":7,"External id":3}},'
          '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":20,"dur":9,'
          '"args":{"correlation":7,"stream":7,"device":0}}')
    write("fuzz_kineto_event", "memory_counter.json",
          '{"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":1,"tid":1,"ts":3,'
          '"s":"t","args":{"Total Allocated":1024,"Total Reserved":4096,"Device Id":0,"Bytes":8}}')
    write("fuzz_kineto_event", "thread_name.json",
          '{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"python"}}')


def params_seeds():
    values = ["0", "-5", "9223372036854775807", "-9223372036854775808", "0012", "65535",
              "0,2-5", "1-3,7,9", "4096", "true", "YES", "off", "/index.html",
              "/a/../b", "/static/./x.js", "127.0.0.1:8080", "[::1]:80", ":9000", "localhost",
              "t0=0&t1=1000000&px=800&ranks=0,1", "top=10&all_steps=1&steps=551,553-560",
              "token=s3cr3t-token&ranks=0-3"]
    for i, v in enumerate(values):
        write("fuzz_params", "p%02d" % i, bytes([i % 11, (i * 7) % 11]) + v.encode())


def sql_seeds():
    # The project's own queries (sql/queries/*.sql) are seeds too: the fuzz
    # scripts pass that folder as a second corpus, so they are not copied.
    refused = ["DELETE FROM slices", "UPDATE meta SET value='2'", "ATTACH 'x.db' AS x",
               "PRAGMA writable_schema=1", "SELECT load_extension('x')", "CREATE TEMP TABLE t(x)",
               "BEGIN", "VACUUM", "VACUUM INTO '/tmp/x.db'", "SELECT 1; DELETE FROM meta",
               "INSERT INTO strings VALUES (9,'x')", "REINDEX", "ANALYZE",
               "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c",
               "SELECT s.str, count(*) FROM slices JOIN strings s ON s.id = slices.name GROUP BY 1",
               "SELECT * FROM temp.sqlite_master", "SELECT json_extract(args,'$.stream') FROM slices"]
    for i, q in enumerate(refused):
        write("fuzz_sql_guard", "q%02d.sql" % i, q)


def api_seeds():
    targets = ["/api/run", "/api/ranks", "/api/timeline", "/api/timeline?t0=0&t1=100000&px=50",
               "/api/timeline?t0=-5&t1=9000000&px=8192&ranks=1", "/api/timeline?t0=2000&t1=2001&px=1",
               "/api/timeline?ranks=0-1&px=700&t0=1000000", "/api/slice/12", "/api/slice/99999",
               "/api/collective/1", "/api/collective/find?pg=0&seq=3", "/api/nope",
               "/api/report/nope", "/api/sql", "/api/../etc/passwd", "/api/timeline?t0=%31&px=%2B5",
               "/api/sql\nSELECT count(*), min(ts) FROM slices",
               '/api/sql\n{"sql": "SELECT name, dur FROM slices ORDER BY dur DESC LIMIT 3"}',
               "/api/sql\nDELETE FROM slices"]
    for topic in ("summary", "temporal", "overlap", "idle", "kernels", "steps", "clocks",
                  "stragglers", "collectives", "nvtx"):
        targets.append("/api/report/%s?ranks=0,1&all_steps=1&steps=1&top=3" % topic)
        targets.append("/api/report/" + topic)
    for i, t in enumerate(targets):
        write("fuzz_api", "r%02d" % i, t)


def main():
    for t in ("fuzz_kineto_file", "fuzz_kineto_event", "fuzz_gzip", "fuzz_params", "fuzz_sql_guard",
              "fuzz_api"):
        shutil.rmtree(os.path.join(OUT, t), ignore_errors=True)
    kineto_seeds()
    params_seeds()
    sql_seeds()
    api_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
