# htamerge's Python hooks (armed by sitecustomize.py in this folder). Once
# the program imports torch they mark, through htamerge's shared-memory
# ring (libhtamerge-py.so, $HTAMERGE_PY_LIB):
#
#   NVTX ranges of domain "htamerge" on the thread that made the calls,
#   args {"domain":"htamerge"} (the step's also its number):
#     step       one training iteration: from the end of the previous one
#                (for the first, its first forward) to the end of its last
#                optimizer.step before the next forward or backward, so
#                several optimizers and gradient accumulation give one step;
#                args {"domain":"htamerge","step":N}, N counting from 0
#     forward    from the first module call after a step or a backward began
#                to the next backward (one per micro-batch)
#     backward   each torch.autograd.backward / Tensor.backward call
#     optimizer  each optimizer.step call (outermost)
#   collectives of non-NCCL backends (gloo, ...): the calling thread's
#     enter and exit (a finished call's return, else the first moment the
#     caller is seen with the work done), op, process group name and ranks,
#     sequence number, elements and bytes. torch.distributed's collective
#     functions are wrapped, and DistributedDataParallel gets a process
#     group that forwards to the real one, since its Reducer calls
#     ProcessGroup::allreduce from C++.
#   trace files torch.profiler exports (export_chrome_trace, which
#     tensorboard_trace_handler calls), wherever the program writes them,
#     once written: the collector reads them in place and never changes
#     them. Only with Kineto: without it torch writes the legacy
#     profiler's JSON array, which htamerge does not read.
#   GPU memory, once the program has initialised CUDA: the counters Total
#     Allocated and Total Reserved of its current device at the start and
#     end of each backward and optimizer range and the end of each forward,
#     and, when the allocator's peak rose during the range, that peak just
#     before the range's end (never reset: the program's own peak figures
#     stay its own). So the phase that set each new peak is known exactly,
#     without torch.profiler's profile_memory. Every step of the first 8,
#     then one step in 8 ($HTAMERGE_MEMORY_EVERY; 0: never), and at most
#     one in each 200 ms ($HTAMERGE_MEMORY_GAP_MS): a sampled step reads the
#     allocator's statistics five times, tens of us each.
#   the capture plan rank 0 sends (htamerge's cost budget, and requests of
#     `htamerge capture --steps N`), carried out at step boundaries, so that
#     every rank records the same steps: CUPTI attached or detached for the
#     coming step (htamerge_cupti_record in the capture library); for a
#     requested step without htamerge's CUPTI (the CPU), torch's profiler
#     records the CPU ops of those steps and the hooks send them as slices.
#     A requested capture is the counter "htamerge/capture window", 1 from
#     its first step's start, 0 after its last. The hooks report the step in
#     progress for rank 0 to place the next plan ahead of every rank.
#   steps of scripts that construct no optimizer (a manual update such as
#     p.data.add_): each forward after a backward starts a step.
#   CUPTI, handed to torch.profiler for each session that records CUDA,
#     from its warm-up to its stop (CUPTI serves one client at a time):
#     the program's trace keeps its GPU kernels, htamerge's capture pauses
#     meanwhile, and the merger takes that window's kernels from the trace.
#
# Every hook is wrapped in try/except: a failure disables the hooks with one
# line "htamerge: python hooks disabled: REASON" on stderr, and the program
# runs on with the original functions' results.
import ctypes
import functools
import os
import sys
import threading
import time
import weakref

_DOMAIN = "htamerge"

_lib = None
_gen_word = None   # the capture plan's generation, read in place (ctypes.c_uint64)
_disabled = False
_pid = os.getpid()
_tls = threading.local()
_strings = {}
_lock = threading.Lock()


def _disable(reason):
    global _disabled
    if _disabled:
        return
    _disabled = True
    try:
        if _Steps.fast is not None:
            _Steps.fast.set_disabled(True)
    except Exception:
        pass
    try:
        sys.stderr.write("htamerge: python hooks disabled: %s\n" % reason)
    except Exception:
        pass


def _why(e):
    return "%s: %s" % (type(e).__name__, e)


_now = time.time_ns


def _tid():
    # Cached: gettid is a system call, and a slow one in some sandboxes
    # (4.5 us under gVisor).
    try:
        return _tls.tid
    except AttributeError:
        _tls.tid = threading.get_native_id()
        return _tls.tid


def _str(text):
    sid = _strings.get(text)
    if sid is None:
        b = text.encode("utf-8", "replace")
        sid = _lib.hmpy_string(b, len(b))
        if sid:
            _strings[text] = sid
    return sid or 0


_ARGS = '{"domain":"%s"}' % _DOMAIN
_S_STEP = _S_FWD = _S_BWD = _S_DOM = _S_ARGS = 0   # their string ids, once attached


def install():
    """Loads the library, attaches to the ring, and waits for torch."""
    global _lib
    path = os.environ.get("HTAMERGE_PY_LIB")
    if not path or not os.environ.get("HTAMERGE_RING"):
        return
    try:
        lib = ctypes.CDLL(path)
        i64, i32, u32 = ctypes.c_int64, ctypes.c_int32, ctypes.c_uint32
        lib.hmpy_attach.restype = ctypes.c_int
        lib.hmpy_string.argtypes = [ctypes.c_char_p, u32]
        lib.hmpy_string.restype = u32
        lib.hmpy_range.argtypes = [i64, i64, i64, i32, u32, u32, u32, i32]
        lib.hmpy_cpu_coll.argtypes = [i64, i64, i64, i32, i64, i64, i64, u32, u32, u32, u32, u32,
                                      i32, i32, u32]
        lib.hmpy_trace_file.argtypes = [ctypes.c_char_p, u32]
        lib.hmpy_counter.argtypes = [i64, ctypes.c_double, u32, i32]
        lib.hmpy_slice.argtypes = [i64, i64, i64, i32, u32, u32, u32]
        lib.hmpy_plan_gen.restype = ctypes.c_uint64
        lib.hmpy_plan.argtypes = [ctypes.POINTER(_Plan)]
        lib.hmpy_plan.restype = ctypes.c_uint64
        lib.hmpy_capture_step.argtypes = [ctypes.POINTER(_Plan), i64]
        lib.hmpy_capture_step.restype = ctypes.c_int
        lib.hmpy_capture_next_change.argtypes = [ctypes.POINTER(_Plan), i64]
        lib.hmpy_capture_next_change.restype = i64
        lib.hmpy_step_ab.argtypes = [i64, i64, i64, i64, i64, i64, i64, i64]
        lib.hmpy_step_ab.restype = None
        lib.hmpy_plan_gen_addr.restype = ctypes.c_void_p
        lib.hmpy_step.argtypes = [i64, i64, i64, i64, i32, u32, u32]
        if lib.hmpy_attach() != 0:
            _disable("cannot attach to the ring %s" % os.environ.get("HTAMERGE_RING"))
            return
        _lib = lib
        global _gen_word, _S_STEP, _S_FWD, _S_BWD, _S_DOM, _S_ARGS
        _S_STEP, _S_FWD, _S_BWD, _S_DOM, _S_ARGS = (_str(x) for x in ("step", "forward", "backward", _DOMAIN, _ARGS))
        addr = lib.hmpy_plan_gen_addr()
        _gen_word = ctypes.c_uint64.from_address(addr) if addr else None
        os.register_at_fork(after_in_child=_after_fork)
        _wrap_exit()
        if "torch" in sys.modules:
            _on_torch()
        else:
            sys.meta_path.insert(0, _TorchFinder())
    except Exception as e:
        _disable(_why(e))


def _wrap_exit():
    """os._exit skips atexit (scripts that end so to skip a slow NCCL
    teardown): the last step is closed first, as at a normal exit."""
    real = os._exit

    @functools.wraps(real)
    def _exit(code):
        try:
            if _Steps.torch is not None:
                _Steps.at_exit()
        except Exception:
            pass
        real(code)

    os._exit = _exit


def _after_fork():
    global _pid
    _pid = os.getpid()
    _tls.__dict__.pop("tid", None)   # the forking thread is another thread now
    if _Steps.fast is not None:
        _Steps.fast.after_fork(_pid)


class _TorchFinder:
    """Finds nothing itself: when `torch` is about to be imported, it wraps
    that module's loader so that the hooks go in once torch is whole."""

    busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self.busy:
            return None
        self.busy = True
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        finally:
            self.busy = False
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        orig = spec.loader.exec_module

        def exec_module(module):
            orig(module)
            try:
                del spec.loader.exec_module
            except Exception:
                pass
            _on_torch()

        spec.loader.exec_module = exec_module
        return spec


def _on_torch():
    global _Tensor
    try:
        import torch
        _Tensor = torch.Tensor
        _Steps.install(torch)
        _Memory.cuda = getattr(torch, "cuda", None)
        _Memory.version = getattr(torch, "version", None)
        _Memory.stats = getattr(torch._C, "_cuda_memoryStats", None)
        _Memory.every = int(os.environ.get("HTAMERGE_MEMORY_EVERY", "8"))
        _Memory.gap_ns = int(float(os.environ.get("HTAMERGE_MEMORY_GAP_MS", "200")) * 1e6)
        _Steps.fast.memory(_Memory.cuda is not None, _Memory.every, _Memory.gap_ns)
        _install_profiler(torch)
        _install_distributed(torch)
    except Exception as e:
        _disable(_why(e))


# ---- GPU memory at phase boundaries -----------------------------------------

class _Memory:
    cuda = None         # torch.cuda, once torch is imported
    version = None      # torch.version until the first sample asked it
    stats = None        # torch._C._cuda_memoryStats: one call for the three figures
    peak = 0            # the allocator's peak when last read
    # Steps sampled: every step of the first EVERY, then one in EVERY (0: none),
    # and sampled steps at least gap_ns apart, decided by _htamerge_steps
    # once a step (all of a step's samples or none, so phases stay whole).
    # A sampled step costs five reads of the allocator's statistics, each
    # ~20 us (torch.cuda.memory_allocated() alone builds them all: ~170 us).
    every = 8
    gap_ns = 200 * 10**6

    @classmethod
    def read(cls, dev):
        if cls.stats is not None:
            d = cls.stats(dev)
            a = d["allocated_bytes"]["all"]
            return a["current"], a["peak"], d["reserved_bytes"]["all"]["current"]
        c = cls.cuda
        return c.memory_allocated(dev), c.max_memory_allocated(dev), c.memory_reserved(dev)

    @classmethod
    def sample(cls, t, phase_end=False, baseline=False):
        """Allocated and reserved now; at a phase's end first the peak
        reached during it, if higher than when last read (baseline: only
        read it, at a sampled step's first forward). Only after the program
        initialised CUDA: the hooks never do."""
        c = cls.cuda
        if cls.version is not None:
            # A build of torch without CUDA samples nothing, ever: from then
            # on the hooks skip the calls (asked at the first sample, after
            # the program's own set-up).
            if not getattr(cls.version, "cuda", None):
                cls.cuda = None
                _Steps.fast.memory(False, 0, 0)
                return
            cls.version = None
        if c is None or not c.is_initialized():
            return
        dev = c.current_device()
        cur, peak, resv = cls.read(dev)
        if phase_end and peak > cls.peak:
            _lib.hmpy_counter(t - 1, float(peak), _str("Total Allocated"), dev)
        cls.peak = peak   # lower after the program reset it: rises count from there
        if baseline:
            return
        _lib.hmpy_counter(t, float(cur), _str("Total Allocated"), dev)
        _lib.hmpy_counter(t, float(resv), _str("Total Reserved"), dev)


# ---- the capture plan: budget windows and requested steps -------------------

class _Plan(ctypes.Structure):
    """common/capture_plan.h's struct hm_capture_plan, field for field."""
    _fields_ = [(n, ctypes.c_int64) for n in (
        "id", "mode", "on_ms", "period_ms", "epoch_ns", "base_step", "on_steps", "period_steps",
        "req_id", "req_from_step", "req_steps", "req_t0_ns", "req_t1_ns")] + [
        ("budget_pct", ctypes.c_double), ("est_cost_pct", ctypes.c_double)] + [
        (n, ctypes.c_int64) for n in ("prev_base_step", "prev_on_steps", "prev_period_steps")]


_STEPS_MODE = 3   # HM_CAPTURE_STEPS
_F_WINDOW, _F_REQUEST = 1, 2   # HM_CAPTURE_F_WINDOW, HM_CAPTURE_F_REQUEST
_CAT_CPU_OP = 1   # HM_CAT_CPU_OP


class _Capture:
    gen = 0
    plan = None
    # A plan in force: boundary() has work at each step. Its callers test
    # this and the generation word before calling (a call costs microseconds).
    busy = False
    f = 0               # the plan's flags for steps f_from .. f_until - 1
    f_from = f_until = None
    cupti = None        # the last word given to htamerge_cupti_record, None: none yet
    no_cupti = False    # htamerge holds no CUPTI here: requests use torch's profiler
    req = 0             # the request being recorded, 0: none
    prof = None         # torch's profiler during a requested capture on the CPU
    mark_ns = enter_ns = 0
    # A/B: each step's CUPTI state under a plan of steps (1 attached, 0
    # detached; none when the state changed at its start, whose switch
    # would count), and the recent durations of each, whose medians rank 0
    # compares for CUPTI's measured cost.
    state_of = {}
    durs = ([], [])
    AB_KEEP, AB_EVERY = 64, 16
    # The hooks' own ns per step, and over how many steps: published after
    # the first 8 steps, since rank 0 plans no windows until it has it,
    # then every 64 (_htamerge_steps counts them).
    hooks_pub = (0, 0)
    ab_new = 0
    switched_at = None
    # What whole windows cost: [first step, last step or None while open,
    # sum of durations, steps], counted from the step that attaches through
    # the step after the one that detaches; the last WIN_KEEP of them as
    # (sum, steps). Windows that held requested steps are left out.
    win = None
    wins = []
    WIN_KEEP = 8

    @classmethod
    def boundary(cls, step, t):
        """Step `step` starts at t (or is about to): carry out the plan for it."""
        g = _gen_word.value if _gen_word is not None else _lib.hmpy_plan_gen()
        if g != cls.gen and not g & 1:   # odd: a plan is being written; the next step sees it
            if cls.plan is None:
                cls.plan = _Plan()
            cls.gen = _lib.hmpy_plan(ctypes.byref(cls.plan))
            cls.f_from = None
        p = cls.plan
        cls.busy = p is not None and (p.id != 0 or p.req_id != 0)
        if not cls.busy:
            return
        # The plan's one formula (common/capture_plan.c), the same on every
        # rank, asked again only where its answer changes.
        if cls.f_from is not None and cls.f_from <= step < cls.f_until:
            f = cls.f
        else:
            r = ctypes.byref(p)
            f = cls.f = _lib.hmpy_capture_step(r, step)
            cls.f_from, cls.f_until = step, _lib.hmpy_capture_next_change(r, step)
        req = bool(f & _F_REQUEST)
        if p.mode == _STEPS_MODE:
            win = bool(f & _F_WINDOW)
            before = cls.cupti
            cls.cupti_word(win or req)
            if before != cls.cupti:
                cls.switched_at = step   # this step pays the switch: no A/B sample
                if cls.cupti and win and not req:
                    if cls.win is not None and cls.win[1] is not None:
                        cls.close_window()   # it ends where the next begins
                    cls.win = [step, None, 0, 0]
                elif not cls.cupti and cls.win is not None:
                    cls.win[1] = step + 1
            if req and cls.win is not None:
                cls.win = None   # a request's steps would count as the window's
            if cls.cupti is not None and cls.switched_at != step and not cls.no_cupti:
                if len(cls.state_of) > 8:
                    cls.state_of.clear()
                cls.state_of[step] = 1 if cls.cupti else 0
        elif req or cls.cupti:
            cls.cupti_word(req)
        if req and cls.req != p.req_id:
            cls.end_request(t)
            cls.begin_request(p.req_id, t)
        elif not req and cls.req:
            cls.end_request(t)

    @classmethod
    def step_done(cls, step, dur, pub_due=False, state=-2):
        """Step `step` took dur ns: one more A/B sample when its CUPTI
        state held throughout, and part of a window's cost; pub_due: the
        hooks' own time is due to be published. state: the step's sample
        state as _htamerge_steps kept it (0/1, -1: none) for a step whose
        boundary it left alone; -2: the one boundary() noted."""
        w = cls.win
        if w is not None and step >= w[0] and dur > 0:
            w[2] += dur
            w[3] += 1
            if w[1] is not None and step >= w[1]:
                cls.close_window()
                cls.ab_new = cls.AB_EVERY   # publish now
        st = cls.state_of.pop(step, None)
        if state != -2:
            st = state if state >= 0 else None
        if st is not None and dur > 0:
            d = cls.durs[st]
            d.append(dur)
            if len(d) > cls.AB_KEEP:
                del d[0]
            cls.ab_new += 1
        if (cls.ab_new >= cls.AB_EVERY and cls.durs[0]) or pub_due:
            cls.ab_new = 0
            cls.publish()

    @classmethod
    def settled(cls, step):
        """(first, end, state): after boundary(step), the steps whose
        boundaries have nothing to do (the plan's answer and CUPTI's state
        hold), and the A/B sample state of each (-1: none); (0, 0, -1):
        ask again at the next step."""
        p = cls.plan
        if not cls.busy or p is None or cls.f_from is None:
            return 0, 0, -1
        steps = p.mode == _STEPS_MODE
        want = bool(cls.f & ((_F_WINDOW | _F_REQUEST) if steps else _F_REQUEST))
        if not (cls.no_cupti or cls.cupti == want or (cls.cupti is None and not want)):
            return 0, 0, -1   # a switch not made yet (CUDA not initialised): try each step
        sample = steps and cls.cupti is not None and not cls.no_cupti
        return step + 1, cls.f_until, (1 if cls.cupti else 0) if sample else -1

    @classmethod
    def close_window(cls):
        cls.wins.append((cls.win[2], cls.win[3]))
        del cls.wins[:-cls.WIN_KEEP]
        cls.win = None

    @classmethod
    def publish(cls):
        on, off = sorted(cls.durs[1]), sorted(cls.durs[0])
        off_med = off[len(off) // 2] if off else 0
        # The hooks' own time per step, over the last 8 or 64 steps.
        pub = _Steps.fast.pub_take() if _Steps.fast is not None else None
        if pub:
            cls.hooks_pub = (pub[0] // pub[1], pub[1])
            # stored too, for report summary's python_hooks
            _lib.hmpy_counter(_now(), float(cls.hooks_pub[0]), _str("htamerge/hooks ns per step"), -1)
        # Each window over as many detached steps, at today's detached median;
        # the upper quartile of them (the dearest of the first few), since
        # a window measured cheap by chance brings the next ones closer
        # and a budget errs on the safe side (a window of 2.7 ms among ones
        # of 30 put 20 steps in every 25 under CUPTI on the H200).
        ex = sorted(total - n * off_med for total, n in cls.wins)
        _lib.hmpy_step_ab(on[len(on) // 2] if on else 0, len(on), off_med, len(off),
                          ex[len(ex) * 3 // 4] if ex and off else 0, len(ex) if off else 0,
                          cls.hooks_pub[0], cls.hooks_pub[1])

    @classmethod
    def cupti_word(cls, on):
        on = bool(on)
        if cls.no_cupti or on == cls.cupti:
            return
        lib = _inject_lib()
        if lib is None:
            return   # CUDA not (yet) initialised: nothing to switch
        t = _now()
        rc = lib.htamerge_cupti_record(1 if on else 0)
        # An attach is the window's cost (measured as such), not the hooks'.
        _Steps.self_sub(_now() - t)
        if rc != 0:
            cls.no_cupti = True   # htamerge holds no CUPTI in this process
            return
        cls.cupti = on

    @classmethod
    def begin_request(cls, req, t):
        t0 = _now()
        try:
            cls.start_request(req, t)
        finally:
            _Steps.self_sub(_now() - t0)   # a requested capture's cost, not the hooks'

    @classmethod
    def start_request(cls, req, t):
        cls.req = req
        _lib.hmpy_counter(t, 1.0, _str("htamerge/capture window"), -1)
        if cls.cupti:
            return   # CUPTI records the GPU in full
        torch = _Steps.torch
        try:
            prof = torch.autograd.profiler.profile()
            cls.enter_ns = _now()
            prof.__enter__()
        except Exception as e:   # e.g. the program's own profiler is running
            sys.stderr.write("htamerge: capture request %d: torch's profiler did not start (%s); "
                             "its steps are marked, without their CPU ops\n" % (req, _why(e)))
            return
        # The marker's start is a moment of known wall time: the profiler's
        # times are relative. Read just before it, so that ops err early
        # (into the window, which opened before the profiler did).
        cls.mark_ns = _now()
        with torch.autograd.profiler.record_function("htamerge/capture start"):
            pass
        cls.prof = prof

    @classmethod
    def end_request(cls, t):
        if not cls.req:
            return
        prof, cls.prof = cls.prof, None
        t0 = _now()
        if prof is not None:
            prof.__exit__(None, None, None)
            t = max(t, _now())   # the window holds all the profiler recorded
            cls.send_ops(prof, t)
        _lib.hmpy_counter(t, 0.0, _str("htamerge/capture window"), -1)
        cls.req = 0
        _Steps.self_sub(_now() - t0)   # a requested capture's cost, not the hooks'

    @classmethod
    def send_ops(cls, prof, stop_ns):
        """The profiler's CPU ops as slices on their threads, on the hooks'
        clock: times are relative to the profiler's start, so they are
        placed by the marker range opened at a known time, kept between the
        profiler's start and stop as this clock saw them."""
        evs = prof.function_events
        mark = next((e for e in evs if e.name == "htamerge/capture start"), None)
        if mark is None or not evs:
            return
        base = cls.mark_ns - int(mark.time_range.start * 1000)
        first = min(e.time_range.start for e in evs)
        last = max(e.time_range.end for e in evs)
        base = max(base, cls.enter_ns - int(first * 1000))
        base = min(base, stop_ns - int(last * 1000))
        main, me = mark.thread, _tid()
        for e in evs:
            if e is mark:
                continue
            tid = me if e.thread == main else (e.thread if e.thread > 65535 else 0x7fff0000 + e.thread)
            ts = base + int(e.time_range.start * 1000)
            _lib.hmpy_slice(ts, int((e.time_range.end - e.time_range.start) * 1000), tid, _pid,
                            _str(e.name), _CAT_CPU_OP, 0)

    @classmethod
    def finish(cls):
        if cls.req:
            cls.end_request(_now())


def _inject_lib():
    """The capture library CUDA loaded (CUDA_INJECTION64_PATH), or None."""
    global _inject
    if _inject is None:
        path = os.environ.get("CUDA_INJECTION64_PATH")
        if not path:
            return None
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            return None   # CUDA not initialised: nothing of ours holds CUPTI
        lib.htamerge_cupti_handover.argtypes = [ctypes.c_int]
        lib.htamerge_cupti_record.argtypes = [ctypes.c_int]
        _inject = lib
    return _inject


# ---- steps, forward, backward, optimizer -----------------------------------

def _load_steps():
    """_htamerge_steps, built beside this file (which is off sys.path by
    now: sitecustomize.py leaves the program's path as it was)."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_htamerge_steps.abi3.so")
    loader = importlib.machinery.ExtensionFileLoader("_htamerge_steps", path)
    spec = importlib.util.spec_from_file_location("_htamerge_steps", path, loader=loader)
    if spec is None:
        raise RuntimeError("no %s" % path)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class _Steps:
    """The step path is _htamerge_steps (steps.c): its state, and the calls
    torch makes each iteration. Here: installing it, and what it asks of
    Python (_slow)."""
    torch = None
    fast = None         # the _htamerge_steps module, once installed
    ARM_KEY = -0x6874   # our key in torch's dict of global forward pre-hooks (its handles count up from 0)

    @classmethod
    def install(cls, torch):
        cls.torch = torch
        import atexit
        import torch.nn.modules.module as mm
        hooks = getattr(mm, "_global_forward_pre_hooks", None)
        if not isinstance(hooks, dict):
            raise RuntimeError("this torch has no dict of global forward pre-hooks: no steps")
        fast = _load_steps()
        bw = fast.backward
        orig_backward = torch.autograd.backward

        @functools.wraps(orig_backward)
        def backward(*a, **k):
            return bw(orig_backward, a, k)

        orig_tbackward = torch.Tensor.backward

        @functools.wraps(orig_tbackward)
        def tbackward(*a, **k):
            return bw(orig_tbackward, a, k)

        ptr = ctypes.c_void_p
        fast.install(ctypes.cast(_lib.hmpy_range, ptr).value, ctypes.cast(_lib.hmpy_step, ptr).value,
                     ctypes.addressof(_gen_word) if _gen_word is not None else 0,
                     (_S_STEP, _S_FWD, _S_BWD, _str("optimizer"), _S_DOM, _S_ARGS), _pid,
                     _slow, _pending, hooks, cls.ARM_KEY)
        cls.fast = fast
        torch.autograd.backward = backward
        torch.Tensor.backward = tbackward
        import torch.optim.optimizer as oo
        global_hooks = hasattr(oo, "register_optimizer_step_pre_hook")   # torch >= 2.0
        if global_hooks:
            oo.register_optimizer_step_pre_hook(fast.opt_enter)
            oo.register_optimizer_step_post_hook(fast.opt_exit)
        orig_init = oo.Optimizer.__init__

        # At construction: that an optimizer exists (a script without one
        # updates by hand), and on 1.13 its class's step wrapped.
        @functools.wraps(orig_init)
        def __init__(self, *a, **k):
            orig_init(self, *a, **k)
            fast.opt_exists()
            if not global_hooks:
                try:
                    cls.wrap_step(type(self))
                except Exception as e:
                    _disable(_why(e))

        oo.Optimizer.__init__ = __init__
        atexit.register(cls.at_exit)

    @classmethod
    def wrap_step(cls, klass):
        step = klass.__dict__.get("step")
        if step is None or getattr(step, "_htamerge", False):
            return
        enter, exit_ = cls.fast.opt_enter, cls.fast.opt_exit

        @functools.wraps(step)   # keeps torch's own "hooked" mark
        def wrapped(*a, **k):
            enter()
            try:
                return step(*a, **k)
            finally:
                exit_()

        wrapped._htamerge = True
        klass.step = wrapped

    @classmethod
    def self_ns(cls):
        return cls.fast.state()[1] if cls.fast is not None else 0

    @classmethod
    def self_sub(cls, ns):
        if cls.fast is not None:
            cls.fast.self_sub(ns)

    @classmethod
    def at_exit(cls):
        if not _disabled:
            try:
                if cls.fast is not None:
                    cls.fast.at_exit()
                    _drain()
                _Capture.finish()
                _flush_pending(final=True)
            except Exception:
                pass


def _hold(quiet):
    """The hooks held quiet (passing straight through) or let go on, for
    bench/inprocess_ab.py and bench/python_hooks_cost.py; let go on, the
    step left open is dropped, so that no step spans the pause."""
    global _disabled
    _disabled = quiet
    if _Steps.fast is not None:
        _drain()
        _Steps.fast.set_disabled(quiet)
        if not quiet:
            _Steps.fast.restart()


def _drain(pub_due=False):
    """The steps _htamerge_steps ended under a plan, in order."""
    done = _Steps.fast.take_done()
    for i, (step, dur, state) in enumerate(done):
        _Capture.step_done(step, dur, pub_due and i == len(done) - 1, state)


_SLOW_BOUNDARY, _SLOW_STEP_DONE, _SLOW_MEMORY, _SLOW_PENDING, _SLOW_ERROR = 1, 2, 3, 4, 5


def _slow(what, a, b, c):
    """What _htamerge_steps asks of Python, rarely: the plan at a step
    boundary (a, b: step, time), a step's end under a plan or when the
    hooks' own time is due (step, duration, due), a memory sample (step,
    time, flags), collectives to complete, or an error (its text)."""
    try:
        if what == _SLOW_BOUNDARY:
            _drain()   # the steps before, under the plan as it was
            _Capture.boundary(a, b)
            _Steps.fast.settle(*_Capture.settled(a))
        elif what == _SLOW_STEP_DONE:
            _drain(c)
        elif what == _SLOW_MEMORY:
            _Memory.sample(b, phase_end=bool(c & 1), baseline=bool(c & 2))
            return
        elif what == _SLOW_PENDING:
            _flush_pending()
            return
        elif what == _SLOW_ERROR:
            _disable("steps: %s" % a)
            return
        _Steps.fast.capture(_Capture.busy, _Capture.gen, _Capture.win is not None)
    except Exception as e:
        _disable(_why(e))


# ---- torch.profiler trace files --------------------------------------------

def _report_trace(path):
    if _disabled or not path:
        return
    try:
        p = os.path.abspath(os.fspath(path)).encode()
        if os.path.isfile(p):
            _lib.hmpy_trace_file(p, len(p))
    except Exception as e:
        _disable(_why(e))


_legacy_said = False


def _say_legacy(path):
    """Without Kineto, torch's profiler writes the legacy JSON array, which
    htamerge does not read: say so once rather than leave the files unread
    in silence."""
    global _legacy_said
    if _legacy_said or not path:
        return
    _legacy_said = True
    try:
        import torch
        ver = torch.__version__
    except Exception:
        ver = "?"
    sys.stderr.write("htamerge: %s: this torch (%s) has no Kineto, so its profiler writes the "
                     "legacy trace format, which htamerge does not read (the file stays as "
                     "written); steps, phases and collectives come from htamerge's hooks\n"
                     % (os.fspath(path), ver))


def _wrap_export(klass, after):
    orig = klass.__dict__.get("export_chrome_trace")
    if orig is None or getattr(orig, "_htamerge", False):
        return

    @functools.wraps(orig)
    def export_chrome_trace(self, path, *a, **k):
        r = orig(self, path, *a, **k)
        after(path)
        return r

    export_chrome_trace._htamerge = True
    klass.export_chrome_trace = export_chrome_trace


_inject = None
_handover_said = False
_debug = bool(os.environ.get("HTAMERGE_INJECT_DEBUG"))


def _say_debug(text):
    if _debug:
        sys.stderr.write("htamerge: python hooks: %s\n" % text)


def _handover(to_profiler):
    """Lends CUPTI to torch.profiler (1) or takes it back (0) through the
    capture library CUDA loaded (CUDA_INJECTION64_PATH); nothing when CUDA
    has not loaded it. Returns True when handed over."""
    global _handover_said
    try:
        if _inject_lib() is None:
            _say_debug("the capture library is not loaded: CUPTI is not htamerge's")
            return False
        rc = _inject.htamerge_cupti_handover(1 if to_profiler else 0)
        _say_debug("CUPTI %s torch.profiler: %d" % ("to" if to_profiler else "back from", rc))
        return rc == 0
    except Exception as e:
        if not _handover_said:
            _handover_said = True
            sys.stderr.write("htamerge: CUPTI stays with htamerge during torch.profiler (%s); "
                             "the profiler's trace has no GPU kernels\n" % _why(e))
        return False


def _records_cuda(prof, torch):
    acts = getattr(prof, "kineto_activities", None)
    if acts is not None:
        return torch.profiler.ProfilerActivity.CUDA in acts
    return bool(getattr(prof, "use_cuda", False))


def _wrap_sessions(klass, torch):
    """torch.autograd.profiler.profile, which torch.profiler's sessions
    run on: CUPTI goes to it before _prepare_trace (Kineto enables its
    activities at warm-up) and comes back after __exit__ (the stop)."""
    prep, exit_ = klass.__dict__.get("_prepare_trace"), klass.__dict__.get("__exit__")
    if prep is None or exit_ is None or getattr(prep, "_htamerge", False):
        return

    @functools.wraps(prep)
    def _prepare_trace(self, *a, **k):
        if not _disabled and not getattr(self, "_htamerge_cupti", False):
            try:
                cuda = _records_cuda(self, torch)
                _say_debug("profiler session prepares, CUDA %s" % ("on" if cuda else "off"))
                self._htamerge_cupti = cuda and _handover(True)
            except Exception as e:
                _say_debug("hand-over failed: %s" % _why(e))
                self._htamerge_cupti = False
        return prep(self, *a, **k)

    @functools.wraps(exit_)
    def __exit__(self, *a, **k):
        try:
            return exit_(self, *a, **k)
        finally:
            if getattr(self, "_htamerge_cupti", False):
                self._htamerge_cupti = False
                _handover(False)

    _prepare_trace._htamerge = True
    klass._prepare_trace = _prepare_trace
    klass.__exit__ = __exit__


def _install_profiler(torch):
    # Without Kineto (e.g. Debian's CPU build) torch exports the legacy
    # profiler's JSON array, which htamerge does not read: reporting it would
    # only refuse it (and make the run exit 3), so the hooks say so instead.
    after = _report_trace if torch.autograd.kineto_available() else _say_legacy
    import torch.profiler
    _wrap_export(torch.profiler.profile, after)
    try:
        import torch.profiler.profiler as pp
        if hasattr(pp, "_KinetoProfile"):
            _wrap_export(pp._KinetoProfile, after)
    except Exception:
        pass
    import torch.autograd.profiler as ap
    _wrap_export(ap.profile, after)
    _wrap_sessions(ap.profile, torch)


# ---- collectives of non-NCCL backends --------------------------------------

# Function or ProcessGroup method name -> (slice title as torch's own
# profiling titles give it, "gloo:all_reduce"; collective name as Kineto's
# record_param_comms gives it).
_OPS = {}
for _names, _title, _op in (
        (("all_reduce", "allreduce"), "all_reduce", "allreduce"),
        (("allreduce_coalesced",), "allreduce_coalesced", "allreduce_coalesced"),
        (("broadcast",), "broadcast", "broadcast"),
        (("reduce",), "reduce", "reduce"),
        (("all_gather", "allgather"), "all_gather", "all_gather"),
        (("all_gather_into_tensor", "_all_gather_base", "_allgather_base"), "_allgather_base",
         "_allgather_base"),
        (("allgather_coalesced",), "allgather_coalesced", "allgather_coalesced"),
        (("reduce_scatter",), "reduce_scatter", "reduce_scatter"),
        (("reduce_scatter_tensor", "_reduce_scatter_base"), "_reduce_scatter_base",
         "_reduce_scatter_base"),
        (("gather",), "gather", "gather"),
        (("scatter",), "scatter", "scatter"),
        (("all_to_all", "alltoall"), "all_to_all", "all_to_all"),
        (("all_to_all_single", "alltoall_base"), "all_to_allv", "all_to_allv"),
        (("barrier",), "barrier", "barrier")):
    for _n in _names:
        _OPS[_n] = (_title, _op)


def _weak(pg):
    """A reference to a process group that does not keep it alive. A group
    kept past its owners' end lives into the interpreter's shutdown: a gloo
    worker that then frees the last tensor of a finished call (the
    script's own, whose Python object torch handed to C++) takes the GIL
    of a finalizing interpreter, and the process aborts (torch 1.13:
    "terminate called without an active exception", from
    ProcessGroupGloo::runLoop). Freed with its owners, the group joins its
    workers first, as without the hooks."""
    try:
        return weakref.ref(pg)
    except TypeError:
        return lambda: pg


class _Groups:
    info = {}   # id(pg) -> (weak pg, name id, ranks id, rank, size, backend, description id)
    seq = {}    # id(pg) -> last sequence number recorded

    @classmethod
    def of(cls, pg):
        i = cls.info.get(id(pg))
        if i is not None and i[0]() is pg:
            return i
        import torch.distributed.distributed_c10d as c10d
        name, ranks, backend = None, None, "gloo"
        w = getattr(c10d, "_world", None)
        names = getattr(w, "pg_names", None) if w is not None else getattr(c10d, "_pg_names", None)
        granks = (getattr(w, "pg_group_ranks", None) if w is not None
                  else getattr(c10d, "_pg_group_ranks", None))
        try:
            name = names.get(pg) if names is not None else None
        except Exception:
            pass
        try:
            g = granks.get(pg) if granks is not None else None
            if g:
                ranks = sorted(g.keys())
        except Exception:
            pass
        try:
            backend = str(c10d.get_backend(pg))
        except Exception:
            pass
        if name is None:
            name = str(getattr(pg, "group_name", "") or "") or None
        desc = None
        try:   # torch >= 2.3: new_group(group_desc=), DeviceMesh's "mesh_tp"
            desc = getattr(pg, "group_desc", None)
        except Exception:
            pass
        i = (_weak(pg), _str(str(name)) if name is not None else 0,
             _str("[" + ", ".join(str(r) for r in ranks) + "]") if ranks else 0,
             pg.rank(), pg.size(), backend,
             _str(str(desc)) if desc and str(desc) != "undefined" else 0)
        cls.info[id(pg)] = i
        return i

    @classmethod
    def next_seq(cls, pg):
        """The group's sequence number after a call: torch's own counter
        when it moves, else one more than the last (the same on every
        rank: each rank makes the same calls)."""
        last = cls.seq.get(id(pg))
        s = None
        try:
            s = int(pg._get_sequence_number_for_group())
        except Exception:
            pass
        if s is None or (last is not None and s <= last):
            s = 0 if last is None else last + 1
        cls.seq[id(pg)] = s
        return s


_Tensor = None   # torch.Tensor, once torch is imported


def _tensors(x):
    if isinstance(x, _Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        out = []
        for y in x:
            out.extend(_tensors(y))
        return out
    return []


# (id(group), op, dtype) -> (weak group, string ids of title, op, name, ranks, dtype)
_coll_ids = {}


def _record(op, pg, inputs, t0, tid, result):
    """Records one call on pg (the real group) entered at t0 on thread
    tid; the exit is now for a finished call (result None), else when the
    caller is first seen with result (a Work) done (_flush_pending)."""
    if _pending:
        _flush_pending()
    g = _Groups.of(pg)
    seq = _Groups.next_seq(pg)
    ts = _tensors(inputs)
    nel = nbytes = -1
    dtype = None
    if ts:
        nel = nbytes = 0
        for t in ts:
            n = t.numel()
            nel += n
            nbytes += n * t.element_size()
        dtype = ts[0].dtype
    key = (id(pg), op, dtype)
    ids = _coll_ids.get(key)
    if ids is None or ids[0]() is not pg:
        title, kop = _OPS.get(op, (op, op))
        backend = g[5].split(":")[-1] if g[5] else "gloo"
        dname = str(dtype).replace("torch.", "") if dtype is not None else ""
        ids = (_weak(pg), _str("%s:%s" % (backend, title)), _str(kop), g[1], g[2], _str(dname) if dname else 0)
        _coll_ids[key] = ids

    def emit(t1):
        _lib.hmpy_cpu_coll(t0, t1 - t0, tid, _pid, seq, nbytes, nel, ids[1], ids[2], ids[3], ids[4],
                           ids[5], g[3], g[4], g[6])

    fut = None
    if result is not None and hasattr(result, "get_future"):
        try:
            fut = result.get_future()
        except Exception:
            fut = None
    if fut is None or fut.done():
        emit(_now())
    else:
        with _lock:
            _pending.append((fut, emit))


# Collectives issued but not seen done yet: (future, emit). Their exit is
# the first moment the calling side sees them done (_flush_pending, at the
# next backward exit, optimizer step, collective or step end), never a
# callback on the backend's thread: a Python callback there costs a GIL
# round trip (~50 us) and, run while the interpreter shuts down, aborts the
# process (torch 1.13: "terminate called without an active exception").
_pending = []


def _flush_pending(final=False):
    if not _pending:
        return
    t = _now()
    done, keep = [], []
    with _lock:
        for p in _pending:
            (done if final or p[0].done() else keep).append(p)
        _pending[:] = keep
    for fut, emit in done:
        emit(t)


def _call_recorded(fn, a, k, op, pg, inputs, t0, tid):
    """fn(*a, **k), entered at t0 on thread tid, recorded as op on pg."""
    _tls.coll = True
    try:
        r = fn(*a, **k)
    finally:
        _tls.coll = False
    try:
        _record(op, pg, inputs, t0, tid, r)
    except Exception as e:
        _disable(_why(e))
    return r


def _skip(pg, inputs):
    """NCCL's collectives come from the NCCL profiler plugin already."""
    try:
        backend = _Groups.of(pg)[5]
    except Exception:
        return True
    if "nccl" not in backend:
        return False
    if backend.strip() == "nccl":
        return True
    ts = _tensors(inputs)
    return bool(ts) and ts[0].is_cuda


def _make_pg_wrapper(dist):
    """A ProcessGroup that forwards every call to the real one and records
    the collectives; its C++ trampoline lets DDP's Reducer reach it."""

    class HtamergeProcessGroup(dist.ProcessGroup):
        def __init__(self, inner):
            super().__init__(inner.rank(), inner.size())
            self._hm_inner = inner

        # Not "gloo": torch 1.13's DDP logger casts a "gloo" group to
        # ProcessGroupGloo.
        def getBackendName(self):
            return "htamerge"

        def _get_backend_name(self):
            return "htamerge"

        def rank(self):
            return self._hm_inner.rank()

        def size(self):
            return self._hm_inner.size()

        def _get_sequence_number_for_group(self):
            return self._hm_inner._get_sequence_number_for_group()

        def __getattr__(self, name):   # what the trampoline does not define
            return getattr(self.__dict__["_hm_inner"], name)

    def forward(name):
        def method(self, *a, **k):
            inner = self._hm_inner
            fn = getattr(inner, name)
            if _disabled or getattr(_tls, "coll", False):
                return fn(*a, **k)
            return _call_recorded(fn, a, k, name, inner, a[0] if a else None, _now(), _tid())
        method.__name__ = name
        return method

    for name in ("allreduce", "allreduce_coalesced", "broadcast", "allgather", "_allgather_base",
                 "allgather_coalesced", "reduce_scatter", "_reduce_scatter_base", "reduce", "gather",
                 "scatter", "alltoall", "alltoall_base", "barrier"):
        if hasattr(dist.ProcessGroup, name):
            setattr(HtamergeProcessGroup, name, forward(name))
    return HtamergeProcessGroup


def _install_distributed(torch):
    import torch.distributed as dist
    if not dist.is_available():
        return
    import inspect
    import torch.distributed.distributed_c10d as c10d

    def wrap_fn(fname):
        orig = getattr(dist, fname, None)
        if orig is None or getattr(orig, "_htamerge", False):
            return
        try:
            sig = inspect.signature(orig)
        except Exception:
            return

        @functools.wraps(orig)
        def w(*a, **k):
            if _disabled or getattr(_tls, "coll", False):
                return orig(*a, **k)
            try:
                b = sig.bind(*a, **k)
                args = b.arguments
                group = args.get("group")
                pg = group if group is not None else c10d._get_default_group()
                if getattr(pg, "_hm_inner", None) is not None:
                    pg = pg._hm_inner
                inputs = None
                for key in ("tensor", "input_tensor", "input", "tensor_list", "input_tensor_list",
                            "input_list", "scatter_list", "output_tensor", "output_tensor_list",
                            "output"):
                    if args.get(key) is not None:
                        inputs = args[key]
                        break
                if _skip(pg, inputs):
                    return orig(*a, **k)
                t0, tid = _now(), _tid()
            except Exception as e:
                _disable(_why(e))
                return orig(*a, **k)
            return _call_recorded(orig, a, k, fname, pg, inputs, t0, tid)

        w._htamerge = True
        setattr(dist, fname, w)

    for fname in ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
                  "_all_gather_base", "reduce_scatter", "reduce_scatter_tensor",
                  "_reduce_scatter_base", "gather", "scatter", "all_to_all", "all_to_all_single",
                  "barrier"):
        wrap_fn(fname)

    # DistributedDataParallel: its Reducer calls the group from C++.
    from torch.nn.parallel import DistributedDataParallel as DDP
    Wrapper = _make_pg_wrapper(dist)
    orig_init = DDP.__init__
    try:
        ddp_sig = inspect.signature(orig_init)
    except Exception:
        return

    @functools.wraps(orig_init)
    def __init__(self, *a, **k):
        call = None
        if not _disabled:
            try:
                b = ddp_sig.bind(self, *a, **k)
                pg = b.arguments.get("process_group")
                if pg is None:
                    pg = c10d._get_default_group()
                if pg is not None and not isinstance(pg, Wrapper) and "nccl" not in _Groups.of(pg)[5]:
                    b.arguments["process_group"] = Wrapper(pg)
                    call = (b.args, b.kwargs)
            except Exception as e:
                _disable(_why(e))
        if call is None:
            return orig_init(self, *a, **k)
        return orig_init(*call[0], **call[1])

    DDP.__init__ = __init__
