-- wrk script for bench/wrk.sh: one fixed request (the URL given to wrk),
-- and a machine-readable result line at the end:
--   WRK rps=.. p50_ms=.. p95_ms=.. p99_ms=.. max_ms=.. requests=.. errors=..
-- errors counts connect/read/write/timeout errors and non-2xx/3xx answers.

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "WRK rps=%.1f p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f max_ms=%.3f requests=%d errors=%d\n",
      summary.requests / (summary.duration / 1e6),
      latency:percentile(50) / 1000, latency:percentile(95) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, summary.requests,
      e.connect + e.read + e.write + e.timeout + e.status))
end
