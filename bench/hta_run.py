#!/usr/bin/env python3
"""HTA's side of bench/run.sh (issue 21): Holistic Trace Analysis loads a
trace folder and computes the three analyses `htamerge report` is timed on
(temporal, idle, overlap), as a user of HTA would. Prints key-value lines:
hta_load_s, hta_analyses_s, hta_total_s (seconds, wall).

    python3 bench/hta_run.py HTA_CHECKOUT TRACE_DIR

HTA_CHECKOUT is a clone of facebookresearch/HolisticTraceAnalysis (its
`hta` package is imported from there); it runs with Debian's
python3-pandas, python3-plotly, python3-pydot and python3-networkx."""
import os
import sys
import time


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.path.insert(0, sys.argv[1])
    import logging
    logging.disable(logging.WARNING)   # HTA logs per-rank progress
    from hta.trace_analysis import TraceAnalysis

    t0 = time.time()
    ta = TraceAnalysis(trace_dir=os.path.abspath(sys.argv[2]))
    t1 = time.time()
    ta.get_temporal_breakdown(visualize=False)
    ta.get_idle_time_breakdown(visualize=False)
    ta.get_comm_comp_overlap(visualize=False)
    t2 = time.time()
    print(f"hta_load_s {t1 - t0:.3f}")
    print(f"hta_analyses_s {t2 - t1:.3f}")
    print(f"hta_total_s {t2 - t0:.3f}")


if __name__ == "__main__":
    main()
