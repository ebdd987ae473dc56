"""How the Python hooks carry out a capture plan of steps, without torch or
a GPU: the hooks module with its ring library and the capture library
replaced by recorders. Checks the word given to CUPTI at each step
boundary (attach for the window's steps, detach after, none repeated),
that steps which contain a switch give no A/B sample, the medians
published, and that a request of steps forces CUPTI on under a plan in
time. Exits 1 with the differences on failure.

usage: hooks_plan_check.py HOOKS_DIR LIBHTAMERGE_PY (the plan's formula is
the library's hmpy_capture_step, as in a real run)"""
import ctypes
import sys

sys.path.insert(0, sys.argv[1])
import _htamerge_hooks as h  # noqa: E402

_real = ctypes.CDLL(sys.argv[2])
_real.hmpy_capture_step.argtypes = [ctypes.POINTER(h._Plan), ctypes.c_int64]
_real.hmpy_capture_step.restype = ctypes.c_int
_real.hmpy_capture_next_change.argtypes = [ctypes.POINTER(h._Plan), ctypes.c_int64]
_real.hmpy_capture_next_change.restype = ctypes.c_int64

fails = []


def check(what, got, want):
    if got != want:
        fails.append("%s: got %r, want %r" % (what, got, want))


class Ring:
    def __init__(self, plan):
        self.plan, self.gen, self.ab, self.counters = plan, 2, None, []

    def hmpy_plan_gen(self):
        return self.gen

    def hmpy_plan(self, ref):
        for k, v in self.plan.items():
            setattr(ref._obj, k, v)
        return self.gen

    def hmpy_capture_step(self, ref, step):
        return _real.hmpy_capture_step(ref, step)

    def hmpy_capture_next_change(self, ref, step):
        return _real.hmpy_capture_next_change(ref, step)

    def hmpy_step_ab(self, *a):
        self.ab = a

    def hmpy_counter(self, ts, value, name, dev):
        self.counters.append((ts, value))

    def hmpy_string(self, *a):
        return 7


class Inject:
    def __init__(self):
        self.words = []

    def htamerge_cupti_record(self, on):
        self.words.append((self.step, on))
        return 0


def reset(plan):
    ring, inj = Ring(plan), Inject()
    h._lib, h._inject = ring, inj
    C = h._Capture
    C.gen, C.plan, C.cupti, C.no_cupti, C.req, C.switched_at, C.ab_new = 0, None, None, False, 0, None, 0
    C.state_of, C.durs, C.win, C.wins = {}, ([], []), None, []
    C.f_from = C.f_until = None
    C.busy = False
    return ring, inj, C


# Windows of 3 steps in every 6 from step 10: attached steps cost 10 % more.
ring, inj, C = reset({"id": 1, "mode": 3, "base_step": 10, "on_steps": 3, "period_steps": 6})
t = 0
for step in range(0, 80):
    inj.step = step
    C.boundary(step, t)
    dur = (1100 if C.cupti else 1000) + (500 if inj.words[-1][0] == step else 0)   # a switch: +500
    t += dur
    C.step_done(step, dur)
check("first words", inj.words[:5], [(0, 0), (10, 1), (13, 0), (16, 1), (19, 0)])
check("no word repeated", all(a[1] != b[1] for a, b in zip(inj.words, inj.words[1:])), True)
check("A/B medians", ring.ab[0:4:2], (1100, 1000))
# A window: steps 10-12 attached (1100; 10 attaches, +500), 13 detaches
# (1000 + 500), 14 after it: 6300 for 5 steps of 1000 detached.
check("a window's cost over detached steps", ring.ab[4], 1300)
check("windows measured", ring.ab[5] >= 2 and ring.ab[5] <= 8, True)
check("A/B: only steps without a switch", ring.ab[1] <= 2 * 12 and ring.ab[3] <= 2 * 12 + 9, True)

# A rank that learns of a new plan (everything from step 40) in the middle
# of a window of the old one (3 in every 6 from 10: steps 34-36) keeps the
# old windows until step 40, as every other rank does.
ring, inj, C = reset({"id": 1, "mode": 3, "base_step": 10, "on_steps": 3, "period_steps": 6})
for step in range(30, 46):
    if step == 35:
        ring.plan = {"id": 2, "mode": 3, "base_step": 40, "on_steps": 1, "period_steps": 1,
                     "prev_base_step": 10, "prev_on_steps": 3, "prev_period_steps": 6}
        ring.gen += 2
    inj.step = step
    C.boundary(step, step * 1000)
check("old windows until the new plan's step", inj.words, [(30, 1), (31, 0), (34, 1), (37, 0), (40, 1)])

# A request of steps 20-21 under a plan in time: CUPTI forced on, then released.
ring, inj, C = reset({"id": 2, "mode": 2, "on_ms": 500, "period_ms": 5000, "req_id": 1,
                      "req_from_step": 20, "req_steps": 2})
for step in range(15, 26):
    inj.step = step
    C.boundary(step, step * 1000)
check("request words", inj.words, [(20, 1), (22, 0)])
check("capture window counter", ring.counters, [(20000, 1.0), (22000, 0.0)])

if fails:
    print("\n".join(fails))
    sys.exit(1)
print("ok")
