/* The early exits of `hazards.HazardDetector._check_writes` and
 * `_check_reads`, for the compiled generic path (generic.c): the newest
 * stamp an access covers against the newest stamp the clock covers on each
 * pipe that could have left it. When every stamp is covered the Python
 * check would return without a report, so it is not called; otherwise it
 * is, and decides (it makes these same tests first). BERT-base x12 on 32
 * cores: 130k of 228k reads fail their group's summary, and nearly all of
 * them exit here. */
#include "stamps.h"

static PyObject *s_executed, *s_pipe_stamps, *s_writers, *s_wstamp, *s_rstamp, *s_stamp_pipe,
    *s_stamp_n;

static int init(void)
{
    if (s_executed)
        return 0;
    s_executed = PyUnicode_InternFromString("executed");
    s_pipe_stamps = PyUnicode_InternFromString("pipe_stamps");
    s_writers = PyUnicode_InternFromString("writers");
    s_wstamp = PyUnicode_InternFromString("wstamp");
    s_rstamp = PyUnicode_InternFromString("rstamp");
    s_stamp_pipe = PyUnicode_InternFromString("stamp_pipe");
    s_stamp_n = PyUnicode_InternFromString("stamp_n");
    return s_executed && s_pipe_stamps && s_writers && s_wstamp && s_rstamp && s_stamp_pipe &&
        s_stamp_n ? 0 : -1;
}

static int item(PyObject *list, Py_ssize_t k, int64_t *out)
{
    if (!PyList_Check(list) || k < 0 || k >= PyList_GET_SIZE(list))
        return 1;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(list, k), &overflow);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return overflow ? 1 : 0;
}

/* `HazardDetector._covered(q, epoch)`: 0, 1 (Python decides), -1. */
static int covered(PyObject *hz, long q, int64_t epoch, int64_t *out)
{
    PyObject *executed = PyObject_GetAttr(hz, s_executed);
    if (!executed)
        return -1;
    int64_t done;
    int r = item(executed, q, &done);
    Py_DECREF(executed);
    if (r)
        return r;
    if (epoch >= done) {
        *out = COVERS_ALL;
        return 0;
    }
    if (epoch <= 0) {
        *out = 0;
        return 0;
    }
    PyObject *all = PyObject_GetAttr(hz, s_pipe_stamps);
    if (!all)
        return -1;
    r = PyList_Check(all) && q < PyList_GET_SIZE(all)
        ? item(PyList_GET_ITEM(all, q), epoch - 1, out) : 1;
    Py_DECREF(all);
    return r;
}

/* The per-stamp test of `_racing_writes` / `_check_reads`, for stamps the
 * clock's epochs do not cover: stamp -> (pipe, epoch) (`stamp_pipe`,
 * `stamp_n`, numpy's negative index for -1, never written) and the clock. */
typedef struct {
    const int64_t *pipe, *n;
    Py_ssize_t len;
    int64_t clock[NCOMP];
    long q;      /* >= 0: a reader pipe's stamps (`_check_reads`); -1: writes */
    int skip_v;  /* writes: a write inside V does not race with V's writes */
} Racing;

/* 0, or 1 (the Python check decides). */
static int racing_open(PyObject *hz, PyObject *clock, Racing *R)
{
    PyObject *sp = PyObject_GetAttr(hz, s_stamp_pipe), *sn = PyObject_GetAttr(hz, s_stamp_n);
    Py_ssize_t n1 = 0, n2 = 0;
    int r = !sp || !sn || int64_array(sp, &R->pipe, &n1) || int64_array(sn, &R->n, &n2) ||
        n1 != n2 || !PyList_Check(clock) || PyList_GET_SIZE(clock) != NCOMP;
    Py_XDECREF(sp);
    Py_XDECREF(sn);
    if (PyErr_Occurred())
        return -1;
    R->len = n1;
    for (int k = 0; !r && k < NCOMP; k++) {
        int e = item(clock, k, &R->clock[k]);
        if (e)
            return e;
    }
    return r;
}

/* 1: stamp s (above the covered epochs) may race, or the test cannot say. */
static inline int races(const Racing *R, int64_t s)
{
    Py_ssize_t i = s < 0 ? s + R->len : s;
    if (i < 0 || i >= R->len)
        return 1;
    if (R->q >= 0)
        return R->clock[R->q] < R->n[i];
    int64_t wp = R->pipe[i];
    if (wp < 0 || wp >= NCOMP)
        return 1;
    return R->clock[wp] < R->n[i] && !(R->skip_v && wp == PIPE_V);
}

static int races_of(const void *R, int64_t s) { return races((const Racing *)R, s); }

/* 1 when `plan` covers some granule, each uniform, and either every stamp
 * is at most `top` or, with `R`, none races (the Python check's two exits,
 * on the same stamps); else the same test on the access's bytes, when it
 * touches a granule in part or a mixed one (`bytes_at_most`: the Python
 * check's `values` are then these bytes' stamps); 0 (the per-byte check
 * decides); -1. */
static int at_most(PyObject *stamps, PyObject *plan, PyObject *pat, PyObject *addr, int64_t top,
                   const Racing *R)
{
    Arrays A;
    if (plan == Py_None) {
        if (arrays_open(stamps, &A) < 0)
            return -1;
        int r = bytes_at_most(stamps, &A, pat, addr, top, races_of, R);
        arrays_close(&A);
        return r;
    }
    if (arrays_open(stamps, &A) < 0)
        return -1;
    Plan P;
    int r = plan_open(plan, A.n, &P);
    if (r) {
        arrays_close(&A);
        return r < 0 ? -1 : 0;
    }
    const int32_t *c = A.c;
    const char *m = A.m;
    int bad = 0, any = 0;
    if (A.any_mixed)
        PLAN_FOR(&P, k, bad |= m[k]);
    int above = 0, racing = 0;
    PLAN_FOR(&P, k, { any = 1; above |= c[k] > top; });
    if (above && R) /* as Python: any stamp of the access that races */
        PLAN_FOR(&P, k, racing |= races(R, c[k]));
    plan_close(&P);
    if (any && bad) /* a mixed granule: the bytes' own stamps */
        r = bytes_at_most(stamps, &A, pat, addr, top, races_of, R);
    else
        r = any && (!above || (R && !racing));
    arrays_close(&A);
    return r;
}

/* Both clocks and summaries are 7-int lists (generic.c checked them). */
static int gt(PyObject *a, PyObject *b, long q, int *out)
{
    int64_t x, y;
    int r = item(a, q, &x);
    if (!r)
        r = item(b, q, &y);
    if (!r)
        *out = x > y;
    return r;
}

int writes_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *pat, PyObject *addr,
                   PyObject *sw, PyObject *clock_list, PyObject *clock, long pipe, int reading)
{
    if (init() < 0)
        return -1;
    PyObject *writers = mem_slot(mem, MEM_WRITERS);
    if (!writers)
        return -1;
    int64_t top = COVERS_ALL;
    PyObject *it = PySet_Check(writers) ? PyObject_GetIter(writers) : NULL;
    Py_DECREF(writers);
    if (!it)
        return PyErr_Occurred() ? -1 : 0;
    int r = 0;
    PyObject *key;
    while (!r && (key = PyIter_Next(it))) {
        long q = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        Py_DECREF(key);
        int later;
        if (q < 0 || q >= NCOMP) {
            r = PyErr_Occurred() ? -1 : 1;
            break;
        }
        r = gt(sw, clock_list, q, &later);
        if (!r && later) {
            int64_t epoch, cov;
            r = item(clock_list, q, &epoch);
            if (!r)
                r = covered(hz, q, epoch, &cov);
            if (!r && cov < top)
                top = cov;
        }
    }
    Py_DECREF(it);
    if (!r && PyErr_Occurred())
        r = -1;
    if (r)
        return r < 0 ? -1 : 0;
    Racing R = {.q = -1, .skip_v = pipe == PIPE_V && !reading};
    r = racing_open(hz, clock, &R);
    if (r < 0)
        return -1;
    PyObject *ws = mem_slot(mem, MEM_WSTAMP);
    if (!ws)
        return -1;
    r = at_most(ws, plan, pat, addr, top, r ? NULL : &R);
    Py_DECREF(ws);
    return r;
}

int reads_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *pat, PyObject *addr,
                  PyObject *sr, PyObject *clock_list, PyObject *clock, long pipe)
{
    if (init() < 0)
        return -1;
    PyObject *rstamp = mem_slot(mem, MEM_RSTAMP);
    if (!rstamp)
        return -1;
    int r = PyDict_Check(rstamp) ? 1 : 0;
    for (long q = 1; q <= 5 && r == 1; q++) {
        int later;
        int e = gt(sr, clock_list, q, &later);
        if (e) {
            r = e < 0 ? -1 : 0;
            break;
        }
        if (!later || (q == pipe && pipe == PIPE_V))
            continue;
        PyObject *key = PyLong_FromLong(q);
        PyObject *st = key ? PyDict_GetItemWithError(rstamp, key) : NULL;
        Py_XDECREF(key);
        if (!st) {
            if (PyErr_Occurred())
                r = -1;
            continue; /* `q in mem.rstamp` is false */
        }
        int64_t epoch, cov;
        e = item(clock_list, q, &epoch);
        if (!e)
            e = covered(hz, q, epoch, &cov);
        Racing R = {.q = q};
        if (!e) {
            e = racing_open(hz, clock, &R);
            if (e < 0) {
                r = -1;
                break;
            }
            r = at_most(st, plan, pat, addr, cov, e ? NULL : &R);
            continue;
        }
        r = e < 0 ? -1 : 0;
    }
    Py_DECREF(rstamp);
    return r;
}
