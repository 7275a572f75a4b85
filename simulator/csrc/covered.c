/* The early exits of `hazards.HazardDetector._check_writes` and
 * `_check_reads`, for the compiled generic path (generic.c): the newest
 * stamp an access covers against the newest stamp the clock covers on each
 * pipe that could have left it. When every stamp is covered the Python
 * check would return without a report, so it is not called; otherwise it
 * is, and decides (it makes these same tests first). BERT-base x12 on 32
 * cores: 130k of 228k reads fail their group's summary, and nearly all of
 * them exit here. */
#include "stamps.h"

static PyObject *s_executed, *s_pipe_stamps, *s_writers, *s_wstamp, *s_rstamp;

static int init(void)
{
    if (s_executed)
        return 0;
    s_executed = PyUnicode_InternFromString("executed");
    s_pipe_stamps = PyUnicode_InternFromString("pipe_stamps");
    s_writers = PyUnicode_InternFromString("writers");
    s_wstamp = PyUnicode_InternFromString("wstamp");
    s_rstamp = PyUnicode_InternFromString("rstamp");
    return s_executed && s_pipe_stamps && s_writers && s_wstamp && s_rstamp ? 0 : -1;
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

/* 1 when `plan` covers some granule and each is uniform with a stamp of at
 * most `top`; 0 (the per-byte check decides); -1. */
static int at_most(PyObject *stamps, PyObject *plan, int64_t top)
{
    if (plan == Py_None)
        return 0;
    Arrays A;
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
    PLAN_FOR(&P, k, { any = 1; bad |= c[k] > top; });
    plan_close(&P);
    arrays_close(&A);
    return any && !bad;
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

int writes_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *sw,
                   PyObject *clock_list)
{
    if (init() < 0)
        return -1;
    PyObject *writers = PyObject_GetAttr(mem, s_writers);
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
    PyObject *ws = PyObject_GetAttr(mem, s_wstamp);
    if (!ws)
        return -1;
    r = at_most(ws, plan, top);
    Py_DECREF(ws);
    return r;
}

int reads_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *sr,
                  PyObject *clock_list, long pipe)
{
    if (init() < 0)
        return -1;
    PyObject *rstamp = PyObject_GetAttr(mem, s_rstamp);
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
        r = e ? (e < 0 ? -1 : 0) : at_most(st, plan, cov);
    }
    Py_DECREF(rstamp);
    return r;
}
