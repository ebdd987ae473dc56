#!/bin/bash
# --cupti-window on the PyTorch step (issue 6): CUPTI records only inside
# its windows, NVTX throughout. Prints the windows the database holds, the
# kernels inside and outside them (a kernel launched just before a window
# closed may run after it: up to 50 ms late is counted as inside), and the
# train_step ranges (NVTX, never paused).
#
# Also writes every train_step after the first window to
# OUT/window_steps-LABEL.csv (start ms, duration ms, attached 1 / detached 0 /
# straddling -1) for medians and per-window statistics.
#
# usage: [CAPTURE=all,cupti-lean] [LABEL=x] [KINDS=...] \
#        tests/gpu/window_check.sh CARRY OUT ON/PERIOD [torch_train.py args]
# CAPTURE is htamerge's --capture; KINDS sets HTAMERGE_CUPTI_KINDS.
set -u
C=$(realpath "${1:?carry}"); O=$(realpath "${2:?out}"); WIN=${3:?ON/PERIOD}; shift 3
T=$(dirname "$(realpath "$0")")
W=$(mktemp -d /tmp/hmwin.XXXX)
. "$T/carry_env.sh"
hm_carry_env "$C" "$W"
mkdir -p "$O"
H=$C/htamerge
R=$O/window_check.txt
# The recording windows: t0 = counter "htamerge/cupti recording" at 1,
# t1 = the next sample at 0, or the end of the capture.
WINDOWS="with rec as (select c.ts, c.value from counters c join strings s on s.id = c.name
             where s.str = 'htamerge/cupti recording'),
     w as (select ts as t0, coalesce((select min(r2.ts) from rec r2 where r2.ts > r.ts and r2.value = 0),
                                     (select max(ts + dur) from slices)) as t1
           from rec r where value = 1),"
CAPTURE=${CAPTURE:-all,cupti-lean}
LABEL=${LABEL:-$(echo "$CAPTURE-$WIN" | tr ',/' '_-')}
timeout 300 env ${KINDS:+HTAMERGE_CUPTI_KINDS=$KINDS} "$H" -o "$W/win.db" --capture "$CAPTURE" --cupti-window "$WIN" \
    "$T/torch_train.py" plain "$@" >"$W/out.txt" 2>&1
echo "[$LABEL] capture $CAPTURE${KINDS:+ kinds $KINDS} window $WIN $*: rc=$? $(grep '^RESULT' "$W/out.txt")" | tee -a "$R"
"$H" sql "$W/win.db" "$WINDOWS
     k as (select s.ts from v_slices s where s.category = 'kernel')
select (select count(*) from w) windows,
       (select round(avg(t1 - t0) / 1e6, 1) from w) mean_window_ms,
       (select count(*) from k) kernels,
       (select count(*) from k where not exists (select 1 from w where k.ts >= w.t0 and k.ts <= w.t1 + 50000000)) outside,
       (select count(*) from v_slices where name = 'train_step' and category = 'nvtx') nvtx_train_steps" 2>&1 | tee -a "$R"
# The kernel-based report of the windowed run (pauses left out of idle).
"$H" report "$W/win.db" temporal 2>&1 | tee -a "$R"
# The window edges as recorded (ms from the first): on = 1, off = 0.
"$H" sql "$W/win.db" "select round((c.ts - (select min(ts) from counters)) / 1e6, 1) ms, c.value from counters c
                      join strings s on s.id = c.name where s.str = 'htamerge/cupti recording' order by c.ts" 2>&1 | tee -a "$R"
# In-process on/off: the NVTX train_steps wholly inside a later window (CUPTI
# attached) against those wholly between windows (detached), after the first
# window (it holds start-up and warm-up). Same process, same warm state.
"$H" sql "$W/win.db" "$WINDOWS
     first_off as (select min(ts) t from rec where value = 0),
     st as (select s.ts, s.dur, exists (select 1 from w where s.ts >= w.t0 and s.ts + s.dur <= w.t1) inside,
                   exists (select 1 from w where s.ts < w.t1 and s.ts + s.dur > w.t0) touches
            from v_slices s where s.name = 'train_step' and s.category = 'nvtx' and s.rank = 0
              and s.ts > (select t from first_off))
select sum(inside) steps_attached, round(avg(case when inside then dur end) / 1e6, 3) ms_attached,
       sum(not touches) steps_detached, round(avg(case when not touches then dur end) / 1e6, 3) ms_detached,
       round(avg(case when inside then dur end) / avg(case when not touches then dur end), 4) ratio
from st" 2>&1 | tee -a "$R"
"$H" sql "$W/win.db" --format csv "$WINDOWS
     first_off as (select min(ts) t from rec where value = 0)
select round((s.ts - (select t from first_off)) / 1e6, 3) start_ms, round(s.dur / 1e6, 4) dur_ms,
       case when exists (select 1 from w where s.ts >= w.t0 and s.ts + s.dur <= w.t1) then 1
            when exists (select 1 from w where s.ts < w.t1 and s.ts + s.dur > w.t0) then -1 else 0 end attached
from v_slices s where s.name = 'train_step' and s.category = 'nvtx' and s.rank = 0
  and s.ts > (select t from first_off) order by s.ts" >"$O/window_steps-$LABEL.csv" 2>&1
rm -rf "$W"
