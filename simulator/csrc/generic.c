/* `machine.Machine.execute_generic`'s checks of one dynamic instruction's
 * accesses (machine.py is the reference; `generic_checks` there is the
 * same loop in Python): per read, the cross-core GM check, the clean-read
 * test, the epoch summaries and the reader stamps; per write the same with
 * the writer stamps. Every slow path (a cross-core access, a read that is
 * not known clean, a summary some pipe's epoch passes, an access covering a
 * granule in part, a shadow of uninitialised bytes) is the Python method the
 * Python loop calls, called at the same point, so hazards, errors and their
 * order are the same. */
#include "stamps.h"

/* The state of one core's checks: a tuple built once per machine. */
enum {
    X_INITIALISED,     /* HazardDetector.initialised: a set of clean-read keys */
    X_SUMMARY_W,       /* HazardDetector.summary_w: per group, a list per pipe */
    X_SUMMARY_R,
    X_RACES,           /* HazardDetector.races */
    X_CROSS,           /* bound CrossCoreChecker.access, or None */
    X_CORE,            /* this core's number (an int) */
    X_HZ,              /* the HazardDetector: its check_* methods */
    X_CLEAR_UNINIT,    /* machine.clear_uninit(mem, pat, addr) */
    X_N
};

static PyObject *s_uninit, *s_wstamp, *s_rstamp, *s_writers, *s_readers, *s_coarse, *s_mixed,
    *s_set_part, *s_who, *s_check_initialised, *s_check_read_vs_writes,
    *s_check_write_vs_writes, *s_check_write_vs_reads;

int generic_init(void)
{
#define INTERN(name) if (!(s_##name = PyUnicode_InternFromString(#name))) return -1
    INTERN(uninit); INTERN(wstamp); INTERN(rstamp); INTERN(writers); INTERN(readers);
    INTERN(coarse); INTERN(mixed); INTERN(set_part); INTERN(who);
    INTERN(check_initialised); INTERN(check_read_vs_writes); INTERN(check_write_vs_writes);
    INTERN(check_write_vs_reads);
#undef INTERN
    return stamps_init();
}

/* `stamps.coarse[plan] = stamp` (and its mixed flags cleared), else
 * `stamps.set_part(pat, addr, stamp)` (in C when partial.c takes it). */
static int stamp(PyObject *stamps, PyObject *plan, PyObject *pat, PyObject *addr,
                 PyObject *stamp_obj, int32_t value)
{
    if (plan != Py_None) {
        Arrays A;
        if (arrays_open(stamps, &A) < 0)
            return -1;
        Plan P;
        int r = plan_open(plan, A.n, &P);
        if (r == 0) {
            int32_t *c = A.c;
            char *m = A.m;
            PLAN_FOR(&P, k, c[k] = value);
            if (A.any_mixed)
                PLAN_FOR(&P, k, m[k] = 0);
            plan_close(&P);
        }
        arrays_close(&A);
        if (r <= 0)
            return r;
        /* a plan this code does not take: numpy's indexing, as the Python loop */
        PyObject *c = PyObject_GetAttr(stamps, s_coarse);
        if (!c || PyObject_SetItem(c, plan, stamp_obj) < 0) {
            Py_XDECREF(c);
            return -1;
        }
        Py_DECREF(c);
        if (A.any_mixed) {
            PyObject *m = PyObject_GetAttr(stamps, s_mixed);
            if (!m || PyObject_SetItem(m, plan, Py_False) < 0) {
                Py_XDECREF(m);
                return -1;
            }
            Py_DECREF(m);
        }
        return 0;
    }
    int done = set_part(stamps, pat, addr, value); /* partial.c, else Python's */
    if (done <= 0)
        return done;
    PyObject *r = PyObject_CallMethodObjArgs(stamps, s_set_part, pat, addr, stamp_obj, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* `machine._clean`: 1 (clean, token noted), 0 (the full check decides), -1. */
static int clean(PyObject *mem, PyObject *plan, PyObject *token, PyObject *initialised)
{
    if (plan == Py_None)
        return 0;
    PyObject *uninit = mem_slot(mem, MEM_UNINIT);
    if (!uninit)
        return -1;
    Py_DECREF(uninit);
    if (uninit != Py_None)
        return 0;
    PyObject *ws = mem_slot(mem, MEM_WSTAMP);
    if (!ws)
        return -1;
    Arrays A;
    int rc = arrays_open(ws, &A);
    Py_DECREF(ws);
    if (rc < 0)
        return -1;
    Plan P;
    int r = plan_open(plan, A.n, &P);
    if (r != 0) {
        arrays_close(&A);
        return r < 0 ? -1 : 0; /* the full check, through numpy */
    }
    const int32_t *c = A.c;
    const char *m = A.m;
    int bad = 0, any = 0;
    if (A.any_mixed)
        PLAN_FOR(&P, k, bad |= m[k]);
    PLAN_FOR(&P, k, { any = 1; bad |= c[k] < 0; });
    plan_close(&P);
    arrays_close(&A);
    if (bad || !any)
        return 0;
    return PySet_Add(initialised, token) < 0 ? -1 : 1;
}

/* a > b: two exact ints that fit an int64 compared as such (the rich
 * comparison's dispatch was 6% of the vector bench's run), others by Python. */
static inline int greater(PyObject *a, PyObject *b)
{
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b)) {
        if (a == b)
            return 0;
#if PY_VERSION_HEX >= 0x030C0000
        if (PyUnstable_Long_IsCompact((PyLongObject *)a) &&
            PyUnstable_Long_IsCompact((PyLongObject *)b))
            return PyUnstable_Long_CompactValue((PyLongObject *)a) >
                PyUnstable_Long_CompactValue((PyLongObject *)b);
#else
        Py_ssize_t sa = Py_SIZE(a), sb = Py_SIZE(b); /* one digit or none: the value at hand */
        if (sa >= -1 && sa <= 1 && sb >= -1 && sb <= 1)
            return (long long)sa * ((PyLongObject *)a)->ob_digit[0] >
                (long long)sb * ((PyLongObject *)b)->ob_digit[0];
#endif
        int oa = 0, ob = 0;
        long long x = PyLong_AsLongLongAndOverflow(a, &oa);
        long long y = PyLong_AsLongLongAndOverflow(b, &ob);
        if (!oa && !ob)
            return x > y;
    }
    return PyObject_RichCompareBool(a, b, Py_GT);
}

/* summary[q] > clock[q] for some q in 1..5 (q = 1 only when `with_v`). */
static int passes(PyObject *summary, PyObject *clock, int with_v)
{
    if (!PyList_Check(summary) || PyList_GET_SIZE(summary) < NCOMP ||
        !PyList_Check(clock) || PyList_GET_SIZE(clock) < NCOMP) {
        PyErr_SetString(PyExc_TypeError, "summaries and clocks are lists of 7 ints");
        return -1;
    }
    for (int q = with_v ? 1 : 2; q <= 5; q++) {
        int r = greater(PyList_GET_ITEM(summary, q), PyList_GET_ITEM(clock, q));
        if (r)
            return r;
    }
    return 0;
}

/* `summaries[group]` (a new reference): a list's item read directly when
 * `group` is an int within it, else Python's indexing (and its error). */
static PyObject *summary_of(PyObject *summaries, PyObject *group)
{
    if (PyList_CheckExact(summaries) && PyLong_CheckExact(group)) {
        Py_ssize_t g = PyLong_AsSsize_t(group);
        if (g >= 0 && g < PyList_GET_SIZE(summaries))
            return Py_NewRef(PyList_GET_ITEM(summaries, g));
        PyErr_Clear();
    }
    return PyObject_GetItem(summaries, group);
}

/* `summary[p] = n`: a list's item replaced directly, else Python's. */
static int set_entry(PyObject *summary, long p, PyObject *pipe, PyObject *n)
{
    if (PyList_CheckExact(summary) && p < PyList_GET_SIZE(summary)) {
        PyObject *old = PyList_GET_ITEM(summary, p);
        PyList_SET_ITEM(summary, p, Py_NewRef(n));
        Py_DECREF(old);
        return 0;
    }
    return PyObject_SetItem(summary, pipe, n);
}

static int call_check(PyObject *hz, PyObject *name, PyObject *mem, PyObject *pat, PyObject *addr,
                      PyObject *pipe, PyObject *clock, PyObject *clock_list, PyObject *summary,
                      PyObject *instr)
{
    PyObject *who = PyObject_GetAttr(instr, s_who);
    if (!who)
        return -1;
    PyObject *r = PyObject_CallMethodObjArgs(hz, name, mem, pat, addr, pipe, clock, clock_list,
                                             summary, who, NULL);
    Py_DECREF(who);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static int cross(PyObject *const *X, PyObject *mem, PyObject *pat, PyObject *addr, int write,
                 PyObject *instr)
{
    if (PyMethod_Check(X[X_CROSS])) { /* the checker's bound `access`: its fast part here */
        long core = PyLong_AsLong(X[X_CORE]);
        if (core == -1 && PyErr_Occurred())
            return -1;
        int done = cross_access(PyMethod_GET_SELF(X[X_CROSS]), mem, pat, addr, write, (int)core);
        if (done)
            return done < 0 ? -1 : 0;
    }
    PyObject *args[7] = {mem, pat, addr, write ? Py_True : Py_False, X[X_CORE], instr, X[X_HZ]};
    PyObject *r = PyObject_Vectorcall(X[X_CROSS], args, 7, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

/* generic(state, instr, pipe, reads, writes, stamp, n, clock, clock_list) -> carry */
PyObject *generic(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "generic(state, instr, pipe, reads, writes, stamp, n, "
                        "clock, clock_list)");
        return NULL;
    }
    int carry = generic_run(args[0], args[1], args[2], args[3], args[4], args[5], args[6],
                            args[7], args[8]);
    return carry < 0 ? NULL : PyBool_FromLong(carry);
}

int generic_run(PyObject *state, PyObject *instr, PyObject *pipe, PyObject *reads,
                PyObject *writes, PyObject *stamp_obj, PyObject *n, PyObject *clock,
                PyObject *clock_list)
{
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != X_N || !PyTuple_Check(reads) ||
        !PyTuple_Check(writes)) {
        PyErr_SetString(PyExc_TypeError, "generic: a state tuple, reads and writes tuples");
        return -1;
    }
    PyObject *const *X = &PyTuple_GET_ITEM(state, 0);
    long p = PyLong_AsLong(pipe);
    long long sv = PyLong_AsLongLong(stamp_obj);
    if (PyErr_Occurred())
        return -1;
    if (p < 0 || p >= NCOMP || sv < INT32_MIN || sv > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a pipe and an int32 stamp");
        return -1;
    }
    int races = PyObject_IsTrue(X[X_RACES]), with_cross = X[X_CROSS] != Py_None;
    PyObject *hz = X[X_HZ], *initialised = X[X_INITIALISED];
    int carry = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(reads); i++) {
        /* (mem, group, pat, addr, token, plan, cross_gm) */
        PyObject *a = PyTuple_GET_ITEM(reads, i);
        PyObject *mem = PyTuple_GET_ITEM(a, 0), *group = PyTuple_GET_ITEM(a, 1);
        PyObject *pat = PyTuple_GET_ITEM(a, 2), *addr = PyTuple_GET_ITEM(a, 3);
        PyObject *token = PyTuple_GET_ITEM(a, 4), *plan = PyTuple_GET_ITEM(a, 5);
        if (PyObject_IsTrue(PyTuple_GET_ITEM(a, 6)) && with_cross &&
            cross(X, mem, pat, addr, 0, instr) < 0)
            return -1;
        int known = PySet_Contains(initialised, token);
        if (known < 0)
            return -1;
        if (!known) {
            int c = clean(mem, plan, token, initialised);
            if (c < 0)
                return -1;
            if (!c) {
                PyObject *r = PyObject_CallMethodObjArgs(hz, s_check_initialised, mem, pat, addr,
                                                         token, instr, NULL);
                if (!r)
                    return -1;
                int t = PyObject_IsTrue(r);
                Py_DECREF(r);
                if (t < 0)
                    return -1;
                carry |= t;
            }
        }
        if (races) {
            PyObject *sw = summary_of(X[X_SUMMARY_W], group);
            if (!sw)
                return -1;
            int r = passes(sw, clock_list, 1);
            if (r > 0) { /* the stamps' exit first, then the Python check */
                r = writes_covered(hz, mem, plan, pat, addr, sw, clock_list, clock, p, 1);
                if (r == 0)
                    r = call_check(hz, s_check_read_vs_writes, mem, pat, addr, pipe, clock,
                                   clock_list, sw, instr);
                else if (r > 0)
                    r = 0;
            }
            Py_DECREF(sw);
            if (r < 0)
                return -1;
            PyObject *sr = summary_of(X[X_SUMMARY_R], group);
            if (!sr)
                return -1;
            r = set_entry(sr, p, pipe, n);
            Py_DECREF(sr);
            if (r < 0)
                return -1;
        }
        PyObject *rstamp = mem_slot(mem, MEM_RSTAMP);
        if (!rstamp)
            return -1;
        PyObject *st = PyDict_Check(rstamp) ? PyDict_GetItemWithError(rstamp, pipe) : NULL;
        Py_DECREF(rstamp);
        if (st)
            Py_INCREF(st);
        else if (PyErr_Occurred() || !(st = PyObject_CallMethodObjArgs(mem, s_readers, pipe, NULL)))
            return -1;
        int r = stamp(st, plan, pat, addr, stamp_obj, (int32_t)sv);
        Py_DECREF(st);
        if (r < 0)
            return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(writes); i++) {
        /* (mem, group, pat, addr, plan, cross_gm) */
        PyObject *a = PyTuple_GET_ITEM(writes, i);
        PyObject *mem = PyTuple_GET_ITEM(a, 0), *group = PyTuple_GET_ITEM(a, 1);
        PyObject *pat = PyTuple_GET_ITEM(a, 2), *addr = PyTuple_GET_ITEM(a, 3);
        PyObject *plan = PyTuple_GET_ITEM(a, 4);
        if (PyObject_IsTrue(PyTuple_GET_ITEM(a, 5)) && with_cross &&
            cross(X, mem, pat, addr, 1, instr) < 0)
            return -1;
        if (races) {
            /* Inside V, write-after-write and write-after-read are ordered. */
            PyObject *sw = summary_of(X[X_SUMMARY_W], group);
            if (!sw)
                return -1;
            int r = passes(sw, clock_list, p != PIPE_V);
            if (r > 0) {
                r = writes_covered(hz, mem, plan, pat, addr, sw, clock_list, clock, p, 0);
                if (r == 0)
                    r = call_check(hz, s_check_write_vs_writes, mem, pat, addr, pipe, clock,
                                   clock_list, sw, instr);
                else if (r > 0)
                    r = 0;
            }
            if (r >= 0) {
                PyObject *sr = summary_of(X[X_SUMMARY_R], group);
                if (!sr)
                    r = -1;
                else {
                    r = passes(sr, clock_list, p != PIPE_V);
                    if (r > 0) {
                        r = reads_covered(hz, mem, plan, pat, addr, sr, clock_list, clock, p);
                        if (r == 0)
                            r = call_check(hz, s_check_write_vs_reads, mem, pat, addr, pipe,
                                           clock, clock_list, sr, instr);
                        else if (r > 0)
                            r = 0;
                    }
                    Py_DECREF(sr);
                }
            }
            if (r >= 0)
                r = set_entry(sw, p, pipe, n);
            Py_DECREF(sw);
            if (r < 0)
                return -1;
        }
        PyObject *ws = mem_slot(mem, MEM_WRITERS);
        if (!ws)
            return -1;
        int r = PySet_Check(ws) ? PySet_Add(ws, pipe) : -1;
        Py_DECREF(ws);
        if (r < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "Memory.writers is a set");
            return -1;
        }
        PyObject *st = mem_slot(mem, MEM_WSTAMP);
        if (!st)
            return -1;
        r = stamp(st, plan, pat, addr, stamp_obj, (int32_t)sv);
        Py_DECREF(st);
        if (r < 0)
            return -1;
        if (!carry) {
            PyObject *uninit = mem_slot(mem, MEM_UNINIT);
            if (!uninit)
                return -1;
            Py_DECREF(uninit);
            if (uninit != Py_None) {
                PyObject *res = PyObject_CallFunctionObjArgs(X[X_CLEAR_UNINIT], mem, pat, addr,
                                                             NULL);
                if (!res)
                    return -1;
                Py_DECREF(res);
            }
        }
    }
    return carry;
}
