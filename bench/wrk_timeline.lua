-- wrk script for bench/wrk.sh: timeline windows at one zoom level, at
-- pseudo-random places, so that no answer comes from the server's cache.
--   SPAN_NS  the run's span (from /api/run)
--   ZOOM     window = SPAN_NS / ZOOM (1: the whole run)
--   PX       columns per window (default 1500, a wide screen)
--   RANKS    optional ranks filter, e.g. "0-3"
-- Prints the same WRK result line as wrk_report.lua.

local span = tonumber(os.getenv("SPAN_NS") or "0")
local zoom = tonumber(os.getenv("ZOOM") or "1")
local px = tonumber(os.getenv("PX") or "1500")
local ranks = os.getenv("RANKS")
local width = math.max(1, math.floor(span / zoom))
local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("seed", counter)
end

function init(args)
   math.randomseed(1000 + (seed or 0))
end

function request()
   local t0 = 0
   if span > width then
      t0 = math.random(0, span - width)
   end
   local path = string.format("/api/timeline?t0=%d&t1=%d&px=%d", t0, t0 + width, px)
   if ranks and ranks ~= "" then
      path = path .. "&ranks=" .. ranks
   end
   return wrk.format("GET", path)
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "WRK rps=%.1f p50_ms=%.3f p95_ms=%.3f p99_ms=%.3f max_ms=%.3f requests=%d errors=%d\n",
      summary.requests / (summary.duration / 1e6),
      latency:percentile(50) / 1000, latency:percentile(95) / 1000,
      latency:percentile(99) / 1000, latency.max / 1000, summary.requests,
      e.connect + e.read + e.write + e.timeout + e.status))
end
