/* An access that touches some granule of a `stamps.Stamps` in part, byte by
 * byte, for the compiled generic path: its bytes as runs (`access_runs`),
 * the per-byte stamps (`fine_open`) and `Stamps.set_part` itself
 * (`set_part`). Python's `set_part` was 3% of BERT-base x12 on 32 cores,
 * timing only (20k calls, each a few small numpy operations). */
#include "stamps.h"

#include <string.h>

static PyObject *s_lo, *s_hi, *s_explicit_idx, *s_bursts, *s_g, *s_fine, *s_any_mixed,
    *s_fine_bytes;

static int init(void)
{
    if (s_lo)
        return 0;
    s_lo = PyUnicode_InternFromString("lo");
    s_hi = PyUnicode_InternFromString("hi");
    s_explicit_idx = PyUnicode_InternFromString("explicit_idx");
    s_bursts = PyUnicode_InternFromString("bursts");
    s_g = PyUnicode_InternFromString("g");
    s_fine = PyUnicode_InternFromString("fine");
    s_any_mixed = PyUnicode_InternFromString("any_mixed");
    s_fine_bytes = PyUnicode_InternFromString("fine_bytes");
    return s_lo && s_hi && s_explicit_idx && s_bursts && s_g && s_fine && s_any_mixed &&
        s_fine_bytes ? 0 : -1;
}

/* An int attribute of `obj`: 0, 1 (not an int64: Python decides), -1. */
static int own_int(PyObject *obj, PyObject *name, int64_t *out)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v)
        return -1;
    int overflow = 0;
    *out = PyLong_Check(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    int r = !PyLong_Check(v) || overflow ? 1 : 0;
    Py_DECREF(v);
    return r == 0 && *out == -1 && PyErr_Occurred() ? -1 : r;
}

int access_runs(PyObject *stamps, PyObject *pat, PyObject *addr_obj, Py_ssize_t n_granules,
                Runs *R)
{
    if (init() < 0)
        return -1;
    int64_t lo, hi;
    int r = own_int(stamps, s_g, &R->g);
    if (!r)
        r = own_int(pat, s_lo, &lo);
    if (!r)
        r = own_int(pat, s_hi, &hi);
    if (r)
        return r;
    int overflow = 0;
    int64_t addr = PyLong_Check(addr_obj) ? PyLong_AsLongLongAndOverflow(addr_obj, &overflow) : 0;
    if (!PyLong_Check(addr_obj) || overflow || R->g <= 0)
        return PyErr_Occurred() ? -1 : 1;
    PyObject *ex = PyObject_GetAttr(pat, s_explicit_idx);
    PyObject *bu = ex ? PyObject_GetAttr(pat, s_bursts) : NULL;
    int take = ex == Py_None && bu != NULL;
    R->n = 1;
    R->stride = 0;
    R->burst = hi - lo;
    R->first = addr + lo;
    R->ix = NULL;
    int64_t last = R->first + R->burst; /* one past the last byte */
    if (ex && ex != Py_None) { /* every byte offset (`byte_idx`) */
        Py_ssize_t len = 0;
        take = int64_array(ex, &R->ix, &len) == 0 && len > 0;
        if (take) {
            int64_t a = R->ix[0], b = R->ix[0];
            for (Py_ssize_t k = 1; k < len; k++) {
                a = R->ix[k] < a ? R->ix[k] : a;
                b = R->ix[k] > b ? R->ix[k] : b;
            }
            R->n = len, R->burst = 1, R->first = addr;
            last = addr + b + 1;
            lo = a;
        }
    } else if (take && bu != Py_None) { /* (count, bytes, stride): `byte_idx` from 0 */
        int64_t v[3];
        take = PyTuple_Check(bu) && PyTuple_GET_SIZE(bu) == 3;
        for (int k = 0; take && k < 3; k++) {
            v[k] = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(bu, k), &overflow);
            take = !overflow && !(v[k] == -1 && PyErr_Occurred());
        }
        if (take) {
            R->n = v[0], R->burst = v[1], R->stride = v[2];
            R->first = addr;
            take = R->n > 0 && R->stride >= 0;
            last = addr + (R->n - 1) * R->stride + R->burst;
            lo = 0;
        }
    }
    Py_XDECREF(ex);
    Py_XDECREF(bu);
    if (PyErr_Occurred())
        return -1;
    if (!take || R->burst <= 0)
        return 1;
    /* out of range (numpy would wrap or raise): Python decides */
    return addr + lo < 0 || last > (int64_t)n_granules * R->g;
}

/* The writable per-byte stamps of a Stamps object (`fine`, made by its
 * `fine_bytes` when `make`): 0, 1 (none, or not int32 of every byte), -1. */
static int fine_open(PyObject *stamps, Py_ssize_t n_bytes, int make, int32_t **fine,
                     Py_ssize_t *len)
{
    PyObject *f = PyObject_GetAttr(stamps, s_fine);
    if (f == Py_None && make) {
        Py_DECREF(f);
        f = PyObject_CallMethodNoArgs(stamps, s_fine_bytes);
    }
    if (!f)
        return -1;
    Py_buffer view;
    int r = 1;
    if (f != Py_None &&
        PyObject_GetBuffer(f, &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
        if (view.itemsize == 4 && view.format && view.format[0] == 'i' && !view.format[1] &&
            view.len / 4 >= n_bytes) {
            *fine = (int32_t *)view.buf;
            *len = view.len / 4;
            r = 0;
        }
        PyBuffer_Release(&view); /* the Stamps object holds the array */
    }
    PyErr_Clear();
    Py_DECREF(f);
    return r;
}

int bytes_at_most(PyObject *stamps, const Arrays *A, PyObject *pat, PyObject *addr,
                  int64_t top, int (*races)(const void *, int64_t), const void *R)
{
    Runs U;
    int r = access_runs(stamps, pat, addr, A->n, &U);
    if (r)
        return r < 0 ? -1 : 0;
    int32_t *fine = NULL;
    Py_ssize_t len;
    if (A->any_mixed && (r = fine_open(stamps, A->n * U.g, 0, &fine, &len)))
        return r < 0 ? -1 : 0;
    int above = 0, racing = 0;
    RUNS_FOR(&U, j, {
        int64_t k = j / U.g;
        int64_t s = fine && A->m[k] ? fine[j] : A->c[k];
        if (s > top) {
            above = 1;
            if (!R)
                return 0;
        }
        if (R && !racing)
            racing = races(R, s);
    });
    return !above || (R && !racing);
}

int set_part(PyObject *stamps, PyObject *pat, PyObject *addr, int32_t value)
{
    Arrays A;
    if (arrays_open(stamps, &A) < 0)
        return -1;
    Runs U;
    int r = access_runs(stamps, pat, addr, A.n, &U);
    if (r)
        return r;
    int64_t g = U.g;
    int32_t *c = A.c, *fine = NULL;
    char *m = A.m;
    int dense = U.n == 1 && !U.ix;
    int64_t lo = U.first, hi = U.first + U.burst, a = (lo + g - 1) / g, b = hi / g;
    if (dense && a < b) { /* `set_range`: whole granules at granule level */
        for (int64_t k = a; k < b; k++)
            c[k] = value;
        if (A.any_mixed)
            memset(m + a, 0, (size_t)(b - a));
        if (lo == a * g && hi == b * g)
            return 0;
    }
    /* `set_bytes` of the rest: every granule it touches gets per-byte stamps */
    Py_ssize_t len;
    if ((r = fine_open(stamps, A.n * g, 1, &fine, &len)))
        return r;
    int split = 0;
#define SPLIT(j)                                                                \
    do {                                                                        \
        int64_t k_ = (j) / g;                                                   \
        if (!m[k_]) {                                                           \
            for (int64_t x_ = k_ * g; x_ < k_ * g + g; x_++)                    \
                fine[x_] = c[k_];                                               \
            m[k_] = 1;                                                          \
            split = 1;                                                          \
        }                                                                       \
        fine[j] = value;                                                        \
    } while (0)
    if (dense && a < b) {
        for (int64_t j = lo; j < a * g; j++)
            SPLIT(j);
        for (int64_t j = b * g; j < hi; j++)
            SPLIT(j);
    } else {
        RUNS_FOR(&U, j, SPLIT(j));
    }
#undef SPLIT
    if (split && PyObject_SetAttr(stamps, s_any_mixed, Py_True) < 0)
        return -1;
    return 0;
}

/* `Stamps.clamp(top)` (every stamp above `top` becomes `top`, the per-byte
 * ones included) and `Stamps.reset(fill)`, in place: 0, 1 (not a Stamps
 * object this code takes: Python's), -1. */
static int clamp(PyObject *stamps, int32_t top)
{
    Arrays A;
    if (arrays_open(stamps, &A) < 0)
        return -1;
    PyObject *f = PyObject_GetAttr(stamps, s_fine);
    if (!f)
        return -1;
    int none = f == Py_None;
    Py_DECREF(f);
    int32_t *fine = NULL;
    Py_ssize_t len = 0;
    int r = none ? 0 : fine_open(stamps, 0, 0, &fine, &len);
    if (r)
        return r;
    for (Py_ssize_t k = 0; k < A.n; k++)
        if (A.c[k] > top)
            A.c[k] = top;
    for (Py_ssize_t k = 0; k < len; k++)
        if (fine[k] > top)
            fine[k] = top;
    return 0;
}

static int reset(PyObject *stamps, int32_t fill)
{
    Arrays A;
    if (arrays_open(stamps, &A) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < A.n; k++)
        A.c[k] = fill;
    if (A.any_mixed)
        memset(A.m, 0, (size_t)A.n);
    if (PyObject_SetAttr(stamps, s_fine, Py_None) < 0 ||
        PyObject_SetAttr(stamps, s_any_mixed, Py_False) < 0)
        return -1;
    return 0;
}

/* hand_over(written, read, top, fill): launch.hand_over's loops (each
 * written memory's writer stamps clamped to `top`, each read memory's
 * reader stamps reset to `fill`); False when some Stamps object is not one
 * this code takes: the caller then runs Python's over them all (clamping
 * and resetting twice changes nothing). BERT-base x12 on 32 cores: 2,720
 * hand-overs, 3% of a timing-only run in numpy. */
PyObject *hand_over(PyObject *self, PyObject *args)
{
    PyObject *written, *read;
    int top, fill;
    if (!PyArg_ParseTuple(args, "OOii", &written, &read, &top, &fill) || init() < 0)
        return NULL;
    static PyObject *s_wstamp, *s_rstamp;
    if (!s_wstamp && (!(s_wstamp = PyUnicode_InternFromString("wstamp")) ||
                      !(s_rstamp = PyUnicode_InternFromString("rstamp"))))
        return NULL;
    PyObject *it = PyObject_GetIter(written), *mem;
    int r = it ? 0 : -1;
    while (!r && (mem = PyIter_Next(it))) {
        PyObject *ws = mem_slot(mem, MEM_WSTAMP);
        r = ws ? clamp(ws, top) : -1;
        Py_XDECREF(ws);
        Py_DECREF(mem);
    }
    Py_XDECREF(it);
    it = r ? NULL : PyObject_GetIter(read);
    r = r ? r : it ? 0 : -1;
    while (!r && (mem = PyIter_Next(it))) {
        PyObject *rs = mem_slot(mem, MEM_RSTAMP);
        if (!rs || !PyDict_Check(rs)) {
            r = rs ? 1 : -1;
        } else {
            Py_ssize_t pos = 0;
            PyObject *key, *st;
            while (!r && PyDict_Next(rs, &pos, &key, &st))
                r = reset(st, fill);
        }
        Py_XDECREF(rs);
        Py_DECREF(mem);
    }
    Py_XDECREF(it);
    if (r < 0 || PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(r == 0);
}
