"""How the Python hooks carry out a capture plan of steps, without torch or
a GPU: the hooks module with its ring library and the capture library
replaced by recorders. Checks the word given to CUPTI at each step
boundary (attach for the window's steps, detach after, none repeated),
that steps which contain a switch give no A/B sample, the medians
published, and that a request of steps forces CUPTI on under a plan in
time. Exits 1 with the differences on failure.

Then the same windows driven through _htamerge_steps (steps.c), as a
training loop drives them: the steps whose boundaries C leaves alone give
the same words and their A/B samples, with Python asked only near the
windows' edges.

usage: hooks_plan_check.py HOOKS_DIR LIBHTAMERGE_PY [_HTAMERGE_STEPS_SO]
(the plan's formula is the library's hmpy_capture_step, as in a real run)"""
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


def through_c(so):
    """A hand-updated loop (forward, backward) under windows of 3 steps in
    every 6 from step 10; attached steps sleep longer."""
    import importlib.machinery
    import importlib.util
    import time
    loader = importlib.machinery.ExtensionFileLoader("_htamerge_steps", so)
    fast = importlib.util.module_from_spec(importlib.util.spec_from_file_location("_htamerge_steps", so, loader=loader))
    loader.exec_module(fast)
    ring, inj, C = reset({"id": 1, "mode": 3, "base_step": 10, "on_steps": 3, "period_steps": 6})
    gen = ctypes.c_uint64(ring.gen)
    h._gen_word = gen
    h._Steps.fast = fast
    calls = [0]
    boundary = C.boundary.__func__

    def counted(cls, step, t):
        calls[0] += 1
        return boundary(cls, step, t)

    C.boundary = classmethod(counted)
    ptr = ctypes.c_void_p
    hooks = {}
    fast.install(ctypes.cast(_real.hmpy_range, ptr).value, ctypes.cast(_real.hmpy_step, ptr).value,
                 ctypes.addressof(gen), (1, 2, 3, 4, 5, 6), 1, h._slow, h._pending, hooks, -0x6874)
    check("armed after install", list(hooks), [-0x6874])
    steps = 80
    for i in range(steps):
        inj.step = i
        fast.on_forward(None, ())
        fast.backward(time.sleep, (0.002 if C.cupti else 0.001,), None)
    fast.at_exit()
    h._drain()
    check("words through C", inj.words[:5], [(0, 0), (10, 1), (13, 0), (16, 1), (19, 0)])
    check("no word repeated through C", all(a[1] != b[1] for a, b in zip(inj.words, inj.words[1:])), True)
    check("A/B published through C", ring.ab is not None and ring.ab[1] > 0 and ring.ab[3] > 0, True)
    if ring.ab:
        check("attached steps slower through C", ring.ab[0] > ring.ab[2], True)
        check("windows measured through C", ring.ab[5] >= 2, True)
    # A call a step without C's share; the edges of 23 windows need about 25.
    check("Python asked only at edges (%d calls for %d steps)" % (calls[0], steps), calls[0] < 40, True)
    check("steps ended", fast.state()[0], steps)


if len(sys.argv) > 3:
    _real.hmpy_range.restype = ctypes.c_int
    _real.hmpy_step.restype = ctypes.c_int
    through_c(sys.argv[3])

if fails:
    print("\n".join(fails))
    sys.exit(1)
print("ok")
