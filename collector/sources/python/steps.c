/* _htamerge_steps: the Python hooks' per-iteration path, in C.
 *
 * The hooks run between a training loop's ops, with their code and data out
 * of the caches. There every line of Python costs tens of times what it
 * does in a tight loop: the hooks' Python step path cost a launch-bound
 * LSTM 40-60 us of CPU an iteration, of which a tight loop of the same
 * calls takes a few (bench/RESULTS.md). This module keeps the step state
 * in one struct and writes the step, forward, backward and optimizer
 * ranges straight into the ring (libhtamerge-py.so's writers, whose
 * addresses _htamerge_hooks.py hands over), so an iteration touches a few
 * cache lines of C instead of the interpreter's frames and dicts.
 *
 * What happens rarely stays in Python: the capture plan at step boundaries
 * (while a plan is in force or when its generation changed), GPU memory on
 * sampled steps, collectives waiting for completion, and the A/B samples
 * and publications after a step under a plan. The hooks' `_slow(what, a,
 * b, c)` does these; an exception there or here disables the hooks, as
 * every hook's does (the program runs on).
 *
 * Semantics are _htamerge_hooks.py's header's: a step runs from the end of
 * the previous one to the end of its last optimizer.step before the next
 * forward or backward (without an optimizer, the next forward after a
 * backward starts the next step); forward from the first module call after
 * a step or backward began to the next backward; each outermost backward
 * and optimizer.step call a range. Limited API (3.8): one build loads into
 * any CPython from 3.8 on, whichever the program runs. */
#define Py_LIMITED_API 0x03080000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NONE INT64_MIN

/* The slow path's events (_htamerge_hooks.py's _slow). */
enum { SLOW_BOUNDARY = 1, SLOW_STEP_DONE = 2, SLOW_MEMORY = 3, SLOW_PENDING = 4, SLOW_ERROR = 5 };
enum { MEM_PHASE_END = 1, MEM_BASELINE = 2 };

typedef int (*range_writer)(int64_t ts, int64_t dur, int64_t tid, int32_t pid, uint32_t name, uint32_t domain,
                            uint32_t args, int32_t depth);
typedef int (*step_writer)(int64_t step, int64_t ts, int64_t end, int64_t tid, int32_t pid, uint32_t name,
                           uint32_t domain);

static struct {
    int ready, disabled;
    range_writer range;
    step_writer step;
    const volatile uint64_t *gen_word; /* the plan's generation, in the ring; NULL: ask always */
    uint64_t gen;                      /* the generation the hooks last took */
    int busy, win_open;                /* a plan in force; a window being measured */
    /* Steps quiet_from .. quiet_until - 1 need no boundary (the plan's answer
     * and CUPTI's state hold), each an A/B sample of state ab_state (-1: none). */
    int64_t quiet_from, quiet_until;
    int ab_state;
    int64_t st_step[2];                /* a quiet step's sample state, by step & 1 */
    int st_val[2];
    uint32_t s_step, s_fwd, s_bwd, s_opt, s_dom, s_args;
    int32_t pid;
    PyObject *slow, *pending, *hooks, *arm_key, *on_forward;
    int armed;
    int64_t step_no, step_start, pending_end, fwd_start, bwd_end, opt_t0;
    int opt_depth, opt_exists, bwd_in_step;
    int64_t self_ns, pub_steps, pub_every, pub_self_ns;
    int mem_active, mem_due_now;
    int64_t mem_every, mem_gap_ns, mem_due_step, mem_last_ns;
} S = {.st_step = {NONE, NONE}, .step_start = NONE, .pending_end = NONE, .fwd_start = NONE, .bwd_end = NONE,
       .pub_every = 8, .mem_due_step = -1, .mem_last_ns = NONE};

static _Thread_local int t_in_backward;
static _Thread_local int64_t t_tid;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);   /* time.time_ns()'s clock, the ring's */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t tid(void)
{
    if (!t_tid)
        t_tid = (int64_t)syscall(SYS_gettid);
    return t_tid;
}

/* An exception here or in the slow path: the hooks stop, with its text. */
static void fail(void)
{
    PyObject *type, *value, *tb, *text = NULL;

    S.disabled = 1;
    PyErr_Fetch(&type, &value, &tb);
    if (value)
        text = PyObject_Str(value);
    PyErr_Clear();
    if (S.slow) {
        PyObject *r = PyObject_CallFunction(S.slow, "iOLL", SLOW_ERROR, text ? text : Py_None, 0LL, 0LL);
        Py_XDECREF(r);
        PyErr_Clear();
    }
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

static void slow(int what, int64_t a, int64_t b, int64_t c)
{
    PyObject *r = PyObject_CallFunction(S.slow, "iLLL", what, (long long)a, (long long)b, (long long)c);

    if (!r)
        fail();
    Py_XDECREF(r);
}

/* Whether the plan has work at step's boundary. Under a plan, steps where
 * its answer holds are left to C: their sample state is kept for the
 * step's end, which Python takes with the others in a batch. */
static int need_boundary(int64_t step)
{
    if (!S.gen_word || *S.gen_word != S.gen)
        return 1;
    if (!S.busy)
        return 0;
    if (step < S.quiet_from || step >= S.quiet_until)
        return 1;
    S.st_step[step & 1] = step;
    S.st_val[step & 1] = S.ab_state;
    return 0;
}

/* Ended steps under a plan, (step, duration, sample state: 0/1 CUPTI
 * detached/attached, -1 none, -2 the one Python's boundary noted),
 * handed to Python DONE_MAX at a time. */
#define DONE_MAX 16
static struct {
    int64_t step, dur;
    int state;
} g_done[DONE_MAX];
static int g_n_done;

/* Whether this step's memory is sampled: decided once per step, at its
 * first sample, so that a step's phases are sampled all or none. */
static int memory_due(void)
{
    int64_t n = S.step_no;

    if (!S.mem_active)
        return 0;
    if (n != S.mem_due_step) {
        S.mem_due_step = n;
        S.mem_due_now = 0;
        if (S.mem_every > 0 && (n < S.mem_every || n % S.mem_every == 0)) {
            int64_t t = now_ns();
            if (n < S.mem_every || S.mem_last_ns == NONE || t - S.mem_last_ns >= S.mem_gap_ns) {
                S.mem_due_now = 1;
                S.mem_last_ns = t;
            }
        }
    }
    return S.mem_due_now;
}

static void memory(int64_t t, int flags)
{
    if (memory_due() && !S.disabled)
        slow(SLOW_MEMORY, S.step_no, t, flags);
}

/* The one-shot global forward pre-hook: an entry of torch's dict of global
 * forward pre-hooks under a key of our own, set and taken out again (no
 * handle object made each iteration). Through the mapping protocol: the
 * dict is an OrderedDict, whose own bookkeeping PyDict_* would skip. */
static void arm(void)
{
    if (S.armed || S.disabled || !S.hooks)
        return;
    if (PyObject_SetItem(S.hooks, S.arm_key, S.on_forward) != 0) {
        fail();
        return;
    }
    S.armed = 1;
}

static void disarm(void)
{
    if (!S.armed)
        return;
    S.armed = 0;
    if (PyObject_DelItem(S.hooks, S.arm_key) != 0)
        PyErr_Clear();   /* the program cleared torch's hooks itself */
}

static void close_step(void)
{
    int64_t start, end;

    if (S.pending_end == NONE)
        return;
    end = S.pending_end;
    S.pending_end = NONE;
    start = S.step_start != NONE ? S.step_start : end;
    S.step(S.step_no, start, end, tid(), S.pid, S.s_step, S.s_dom);
    S.pub_steps++;
    /* A/B samples and windows only under a plan; the hooks' own time every
     * pub_every steps. */
    if (S.busy || S.win_open || S.pub_steps >= S.pub_every) {
        int due = S.pub_steps >= S.pub_every, i = (int)(S.step_no & 1);

        g_done[g_n_done].step = S.step_no;
        g_done[g_n_done].dur = end - start;
        g_done[g_n_done].state = S.st_step[i] == S.step_no ? S.st_val[i] : -2;
        g_n_done++;
        if (g_n_done == DONE_MAX || due || !S.busy)
            slow(SLOW_STEP_DONE, 0, 0, due);
    }
    S.step_no++;
    S.step_start = end;
    S.bwd_in_step = 0;
}

static void begin_step_at(int64_t t)
{
    if (S.step_start == NONE) {
        S.step_start = t;
        if (need_boundary(S.step_no))
            slow(SLOW_BOUNDARY, S.step_no, t, 0);
    }
}

/* The step in progress ends at t (closed at the next forward or backward);
 * the plan answers for the next one now, so that a switch of CUPTI lands
 * on the boundary. */
static void end_step_at(int64_t t)
{
    S.pending_end = t;
    if (need_boundary(S.step_no + 1))
        slow(SLOW_BOUNDARY, S.step_no + 1, t, 0);
}

/* Collectives issued and not yet seen done: Python looks again. */
static void complete_collectives(void)
{
    if (!S.disabled && S.pending && PyList_Size(S.pending) > 0)
        slow(SLOW_PENDING, 0, 0, 0);
}

static PyObject *on_forward(PyObject *self, PyObject *args)
{
    int64_t t;

    (void)self;
    (void)args;
    if (S.disabled || !S.ready)
        Py_RETURN_NONE;
    t = now_ns();
    disarm();
    if (S.bwd_in_step && !S.opt_exists && S.pending_end == NONE) {
        /* No optimizer: the update was by hand, and this forward starts
         * the next iteration. */
        end_step_at(t);
    }
    close_step();
    begin_step_at(t);
    if (S.fwd_start == NONE) {
        S.fwd_start = t;
        memory(t, MEM_BASELINE);
    }
    S.self_ns += now_ns() - t;
    Py_RETURN_NONE;
}

/* backward(fn, args, kwargs): fn(*args, **kwargs) as the outermost backward
 * of this thread, recorded. */
static PyObject *backward(PyObject *self, PyObject *args)
{
    PyObject *fn, *a, *k = NULL, *r;
    int64_t t0, t1, tid_now;

    (void)self;
    if (!PyArg_ParseTuple(args, "OO|O", &fn, &a, &k))
        return NULL;
    if (k == Py_None)
        k = NULL;
    if (S.disabled || !S.ready || t_in_backward)
        return PyObject_Call(fn, a, k);
    t0 = now_ns();
    disarm();
    close_step();
    begin_step_at(t0);
    S.bwd_in_step = 1;
    memory(t0, S.fwd_start != NONE ? MEM_PHASE_END : 0);
    S.self_ns += now_ns() - t0;
    t_in_backward = 1;
    r = PyObject_Call(fn, a, k);
    t_in_backward = 0;
    if (S.disabled)
        return r;
    {
        PyObject *type, *value, *tb;

        PyErr_Fetch(&type, &value, &tb);   /* the program's exception, kept */
        t1 = now_ns();
        tid_now = tid();
        if (S.fwd_start != NONE) {
            S.range(S.fwd_start, t0 - S.fwd_start, tid_now, S.pid, S.s_fwd, S.s_dom, S.s_args, 1);
            S.fwd_start = NONE;
        }
        S.range(t0, t1 - t0, tid_now, S.pid, S.s_bwd, S.s_dom, S.s_args, 1);
        S.bwd_end = t1;
        memory(t1, MEM_PHASE_END);
        complete_collectives();
        arm();
        S.self_ns += now_ns() - t1;
        PyErr_Restore(type, value, tb);
    }
    return r;
}

static PyObject *opt_enter(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (S.disabled || !S.ready)
        Py_RETURN_NONE;
    if (++S.opt_depth == 1) {
        disarm();
        S.opt_t0 = now_ns();
        memory(S.opt_t0, 0);
        complete_collectives();
        S.self_ns += now_ns() - S.opt_t0;
    }
    Py_RETURN_NONE;
}

static PyObject *opt_exit(PyObject *self, PyObject *args)
{
    int64_t t1;

    (void)self;
    (void)args;
    if (S.disabled || !S.ready)
        Py_RETURN_NONE;
    if (--S.opt_depth > 0)
        Py_RETURN_NONE;
    S.opt_depth = 0;
    t1 = now_ns();
    S.range(S.opt_t0, t1 - S.opt_t0, tid(), S.pid, S.s_opt, S.s_dom, S.s_args, 1);
    memory(t1, MEM_PHASE_END);
    S.opt_exists = 1;
    end_step_at(t1);
    S.fwd_start = NONE;
    arm();
    S.self_ns += now_ns() - t1;
    Py_RETURN_NONE;
}

/* At exit (atexit or os._exit): a hand-updated loop's last iteration ends
 * at its last backward; the step in progress is closed. */
static PyObject *at_exit(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (S.ready && !S.disabled) {
        if (S.bwd_in_step && !S.opt_exists && S.pending_end == NONE)
            S.pending_end = S.bwd_end;
        close_step();
    }
    Py_RETURN_NONE;
}

static void keep(PyObject **slot, PyObject *o)
{
    PyObject *old = *slot;

    Py_INCREF(o);
    *slot = o;
    Py_XDECREF(old);
}

/* install(range_addr, step_addr, gen_addr, strings(step, forward, backward,
 * optimizer, domain, args), pid, slow, pending, hooks_dict, arm_key) */
static PyObject *install(PyObject *self, PyObject *args)
{
    unsigned long long range_addr, step_addr, gen_addr;
    unsigned int s[6];
    int pid;
    PyObject *slow_fn, *pending, *hooks, *key;

    (void)self;
    if (!PyArg_ParseTuple(args, "KKK(IIIIII)iOOOO", &range_addr, &step_addr, &gen_addr, &s[0], &s[1], &s[2],
                          &s[3], &s[4], &s[5], &pid, &slow_fn, &pending, &hooks, &key))
        return NULL;
    if (!range_addr || !step_addr) {
        PyErr_SetString(PyExc_ValueError, "_htamerge_steps.install: no ring writers");
        return NULL;
    }
    S.range = (range_writer)(uintptr_t)range_addr;
    S.step = (step_writer)(uintptr_t)step_addr;
    S.gen_word = (const volatile uint64_t *)(uintptr_t)gen_addr;
    S.s_step = s[0], S.s_fwd = s[1], S.s_bwd = s[2], S.s_opt = s[3], S.s_dom = s[4], S.s_args = s[5];
    S.pid = pid;
    keep(&S.slow, slow_fn);
    keep(&S.pending, pending);
    keep(&S.hooks, hooks);
    keep(&S.arm_key, key);
    S.ready = 1;
    arm();   /* a failure disables the hooks (fail), the program runs on */
    Py_RETURN_NONE;
}

/* capture(busy, gen, win_open): the plan's state after the slow path. */
static PyObject *capture(PyObject *self, PyObject *args)
{
    unsigned long long gen;

    (void)self;
    if (!PyArg_ParseTuple(args, "pKp", &S.busy, &gen, &S.win_open))
        return NULL;
    S.gen = gen;
    Py_RETURN_NONE;
}

/* settle(quiet_from, quiet_until, ab_state): after a boundary, the steps
 * whose boundaries have nothing to do, and their sample state. */
static PyObject *settle(PyObject *self, PyObject *args)
{
    long long from, until;

    (void)self;
    if (!PyArg_ParseTuple(args, "LLi", &from, &until, &S.ab_state))
        return NULL;
    S.quiet_from = from;
    S.quiet_until = until;
    Py_RETURN_NONE;
}

/* The ended steps waiting for Python: ((step, dur, state), ...), taken. */
static PyObject *take_done(PyObject *self, PyObject *args)
{
    PyObject *r = PyTuple_New(g_n_done);

    (void)self;
    (void)args;
    if (!r)
        return NULL;
    for (int i = 0; i < g_n_done; i++) {
        PyObject *e = Py_BuildValue("(LLi)", (long long)g_done[i].step, (long long)g_done[i].dur, g_done[i].state);
        if (!e) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SetItem(r, i, e);
    }
    g_n_done = 0;
    return r;
}

/* memory(active, every, gap_ns) */
static PyObject *set_memory(PyObject *self, PyObject *args)
{
    long long every, gap;

    (void)self;
    if (!PyArg_ParseTuple(args, "pLL", &S.mem_active, &every, &gap))
        return NULL;
    S.mem_every = every;
    S.mem_gap_ns = gap;
    Py_RETURN_NONE;
}

static PyObject *set_disabled(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);

    (void)self;
    if (on < 0)
        return NULL;
    S.disabled = on;
    if (on)
        disarm();
    Py_RETURN_NONE;
}

/* The step left open is dropped and the hook armed again: after the hooks
 * were held quiet (bench/inprocess_ab.py), no step spans the pause. */
static PyObject *restart(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    S.step_start = S.pending_end = S.fwd_start = NONE;
    S.bwd_in_step = 0;
    S.quiet_until = 0;
    arm();   /* a failure disables the hooks (fail), the program runs on */
    Py_RETURN_NONE;
}

static PyObject *set_opt_exists(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    S.opt_exists = 1;
    Py_RETURN_NONE;
}

/* In a forked child: its pid, and the forking thread's id again. */
static PyObject *after_fork(PyObject *self, PyObject *arg)
{
    (void)self;
    S.pid = (int32_t)PyLong_AsLong(arg);
    if (PyErr_Occurred())
        return NULL;
    t_tid = 0;
    Py_RETURN_NONE;
}

/* Time that was the hooks' but is not their cost (a CUPTI switch, a
 * requested capture) comes off their own clock. */
static PyObject *self_sub(PyObject *self, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);

    (void)self;
    if (PyErr_Occurred())
        return NULL;
    S.self_ns -= ns;
    Py_RETURN_NONE;
}

/* (the hooks' own ns since the last take, steps since) when pub_every steps
 * have passed (8 for the first, then 64), else None. */
static PyObject *pub_take(PyObject *self, PyObject *args)
{
    PyObject *r;

    (void)self;
    (void)args;
    if (S.pub_steps < S.pub_every || S.pub_steps <= 0)
        Py_RETURN_NONE;
    r = Py_BuildValue("(LL)", (long long)(S.self_ns - S.pub_self_ns), (long long)S.pub_steps);
    S.pub_every = 64;
    S.pub_steps = 0;
    S.pub_self_ns = S.self_ns;
    return r;
}

/* (step_no, self_ns): the step in progress, the hooks' own time so far. */
static PyObject *state(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return Py_BuildValue("(LL)", (long long)S.step_no, (long long)S.self_ns);
}

static PyMethodDef methods[] = {
    {"on_forward", on_forward, METH_VARARGS, "The one-shot global forward pre-hook (module, args)."},
    {"backward", backward, METH_VARARGS, "backward(fn, args, kwargs): fn called and recorded."},
    {"opt_enter", opt_enter, METH_VARARGS, "optimizer.step begins (any arguments)."},
    {"opt_exit", opt_exit, METH_VARARGS, "optimizer.step ended (any arguments)."},
    {"at_exit", at_exit, METH_NOARGS, "Closes the step in progress."},
    {"install", install, METH_VARARGS, "Ring writers, string ids, callbacks; arms the forward hook."},
    {"capture", capture, METH_VARARGS, "capture(busy, gen, win_open)."},
    {"memory", set_memory, METH_VARARGS, "memory(active, every, gap_ns)."},
    {"settle", settle, METH_VARARGS, "settle(quiet_from, quiet_until, ab_state)."},
    {"take_done", take_done, METH_NOARGS, "((step, dur, state), ...): ended steps under a plan."},
    {"set_disabled", set_disabled, METH_O, "Hooks off (True) or on."},
    {"restart", restart, METH_NOARGS, "Drops the open step and arms the forward hook."},
    {"opt_exists", set_opt_exists, METH_NOARGS, "An optimizer was constructed."},
    {"after_fork", after_fork, METH_O, "after_fork(pid) in a child."},
    {"self_sub", self_sub, METH_O, "self_sub(ns): off the hooks' own clock."},
    {"pub_take", pub_take, METH_NOARGS, "(own ns, steps) when due, else None."},
    {"state", state, METH_NOARGS, "(step_no, self_ns)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_htamerge_steps",
                                    "htamerge's Python hooks: the per-iteration path.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__htamerge_steps(void)
{
    PyObject *m = PyModule_Create(&module);

    if (!m)
        return NULL;
    /* The forward hook is this module's function object (torch calls it
     * with (module, args)). */
    S.on_forward = PyObject_GetAttrString(m, "on_forward");
    if (!S.on_forward) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
