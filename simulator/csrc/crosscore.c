/* The per-byte test and update of `hazards.CrossCoreChecker.access` for an
 * access made of equal runs of bytes (a dense pattern is one run): the
 * same answer as its numpy path, without a numpy call per step. */
#include "engine.h"

#define NONE (-1) /* hazards.NONE: no writer / no reader */
#define MANY (-2) /* hazards.MANY: two or more cores read the byte */

/* cross_runs(writer, readers, start, n, run, stride, core, write):
 * None when the runs do not fit the arrays (the caller's numpy path then
 * decides); True when some byte conflicts with another core (nothing is
 * changed: the caller's numpy path reports it and records the access);
 * False when none does, the access then recorded (write: the byte's writer
 * is `core`; read: its reader `core` if none or only `core` read it, else
 * MANY). Both arrays are int8, one per GM byte. */
/* -1: the runs do not fit; 1: a conflict (nothing changed); 0: recorded. */
static int runs(int8_t *writer, int8_t *readers, Py_ssize_t size, Py_ssize_t start, Py_ssize_t n,
                Py_ssize_t run, Py_ssize_t stride, int core, int write)
{
    if (n <= 0 || run <= 0 || stride < run || start < 0 ||
        start + (n - 1) * stride + run > size)
        return -1;
    int8_t me = (int8_t)core;
    /* Branch-free per run, so the compiler vectorises the byte loops. */
    for (Py_ssize_t k = 0; k < n; k++) {
        const int8_t *wr = writer + start + k * stride;
        int bad = 0;
        for (Py_ssize_t b = 0; b < run; b++)
            bad |= (wr[b] >= 0) & (wr[b] != me);
        if (write) {
            const int8_t *rd = readers + start + k * stride;
            for (Py_ssize_t b = 0; b < run; b++)
                bad |= (rd[b] != NONE) & (rd[b] != me);
        }
        if (bad)
            return 1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t b0 = start + k * stride;
        if (write)
            for (Py_ssize_t b = b0; b < b0 + run; b++)
                writer[b] = me;
        else
            for (Py_ssize_t b = b0; b < b0 + run; b++)
                readers[b] = (readers[b] == NONE) | (readers[b] == me) ? me : MANY;
    }
    return 0;
}

/* runs() on two int8 arrays: as there, or -2 with an exception. */
static int runs_on(PyObject *w_obj, PyObject *r_obj, Py_ssize_t start, Py_ssize_t n,
                   Py_ssize_t run, Py_ssize_t stride, int core, int write)
{
    Py_buffer w, r;
    if (PyObject_GetBuffer(w_obj, &w, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return -2;
    if (PyObject_GetBuffer(r_obj, &r, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&w);
        return -2;
    }
    int rc;
    if (w.itemsize != 1 || r.itemsize != 1 || r.len != w.len || core < 0 || core >= 64) {
        PyErr_SetString(PyExc_TypeError, "cross_runs takes int8 writers and readers");
        rc = -2;
    } else
        rc = runs(w.buf, r.buf, w.len, start, n, run, stride, core, write);
    PyBuffer_Release(&w);
    PyBuffer_Release(&r);
    return rc;
}

PyObject *cross_runs(PyObject *self, PyObject *args)
{
    PyObject *w_obj, *r_obj;
    Py_ssize_t start, n, run, stride;
    int core, write;
    if (!PyArg_ParseTuple(args, "OOnnnnip", &w_obj, &r_obj, &start, &n, &run, &stride, &core,
                          &write))
        return NULL;
    int rc = runs_on(w_obj, r_obj, start, n, run, stride, core, write);
    if (rc == -2)
        return NULL;
    return Py_NewRef(rc < 0 ? Py_None : rc ? Py_True : Py_False);
}

static PyObject *s_read, *s_written, *s_writer, *s_readers, *s_reads, *s_bursts, *s_explicit_idx, *s_lo,
    *s_hi;

int cross_init(void)
{
#define INTERN(name) if (!(s_##name = PyUnicode_InternFromString(#name))) return -1
    INTERN(bursts); INTERN(explicit_idx); INTERN(lo); INTERN(hi);
#undef INTERN
    s_read = PyUnicode_InternFromString("_read");
    s_written = PyUnicode_InternFromString("_written");
    s_writer = PyUnicode_InternFromString("_writer");
    s_readers = PyUnicode_InternFromString("_readers");
    s_reads = PyUnicode_InternFromString("_reads");
    return s_read && s_written && s_writer && s_readers && s_reads ? 0 : -1;
}

static int ssize_item(PyObject *tuple, Py_ssize_t k, Py_ssize_t *out)
{
    *out = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, k));
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* `CrossCoreChecker.access` (hazards.py) up to its numpy path: 1 when done
 * (recorded, no conflict), 0 when the Python method must run (it repeats
 * what was done here, which is only the idempotent note of `mem` as
 * read or written), -1. */
int cross_access(PyObject *checker, PyObject *mem, PyObject *pat, PyObject *addr, int write,
                 int core)
{
    PyObject *touched = PyObject_GetAttr(checker, write ? s_written : s_read);
    if (!touched)
        return -1;
    int rc = PySet_Check(touched) ? PySet_Add(touched, mem) : 1;
    Py_DECREF(touched);
    if (rc)
        return rc < 0 ? -1 : 0;
    PyObject *writers = PyObject_GetAttr(checker, s_writer);
    if (!writers)
        return -1;
    PyObject *w = PyDict_Check(writers) ? PyDict_GetItemWithError(writers, mem) : NULL;
    Py_XINCREF(w);
    Py_DECREF(writers);
    if (!w) {
        if (PyErr_Occurred())
            return -1;
        if (write)
            return 0; /* the per-byte state is made there */
        /* unwritten in this epoch: no race; noted */
        PyObject *reads = PyObject_GetAttr(checker, s_reads);
        if (!reads)
            return -1;
        rc = -1;
        PyObject *list = PyDict_Check(reads) ? PyDict_GetItemWithError(reads, mem) : NULL;
        if (!list && !PyErr_Occurred() && PyDict_Check(reads)) {
            list = PyList_New(0);
            if (list && PyDict_SetItem(reads, mem, list) < 0)
                Py_CLEAR(list);
        } else
            Py_XINCREF(list);
        Py_DECREF(reads);
        if (list && PyList_Check(list)) {
            PyObject *c = PyLong_FromLong(core);
            PyObject *t = c ? PyTuple_Pack(3, pat, addr, c) : NULL;
            rc = t && PyList_Append(list, t) == 0 ? 1 : -1;
            Py_XDECREF(t);
            Py_XDECREF(c);
        } else if (list && !PyErr_Occurred())
            rc = 0;
        Py_XDECREF(list);
        return rc;
    }
    PyObject *all_r = PyObject_GetAttr(checker, s_readers);
    PyObject *r = all_r && PyDict_Check(all_r) ? PyDict_GetItemWithError(all_r, mem) : NULL;
    Py_XINCREF(r);
    Py_XDECREF(all_r);
    if (!r) {
        Py_DECREF(w);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *bursts = PyObject_GetAttr(pat, s_bursts);
    Py_ssize_t a = bursts ? PyLong_AsSsize_t(addr) : 0, n = 0, run = 0, stride = 0, lo, hi;
    rc = bursts && !PyErr_Occurred() ? 0 : -1;
    if (!rc && bursts != Py_None) {
        if (!PyTuple_Check(bursts) || PyTuple_GET_SIZE(bursts) != 3)
            rc = 1;
        else if (ssize_item(bursts, 0, &n) || ssize_item(bursts, 1, &run) ||
                 ssize_item(bursts, 2, &stride))
            rc = -1;
    } else if (!rc) {
        PyObject *idx = PyObject_GetAttr(pat, s_explicit_idx);
        PyObject *lo_o = idx ? PyObject_GetAttr(pat, s_lo) : NULL;
        PyObject *hi_o = lo_o ? PyObject_GetAttr(pat, s_hi) : NULL;
        if (!hi_o)
            rc = -1;
        else if (idx != Py_None)
            rc = 1;
        else {
            lo = PyLong_AsSsize_t(lo_o);
            hi = PyLong_AsSsize_t(hi_o);
            rc = PyErr_Occurred() ? -1 : 0;
            a += lo;
            n = 1;
            run = stride = hi - lo;
        }
        Py_XDECREF(idx);
        Py_XDECREF(lo_o);
        Py_XDECREF(hi_o);
    }
    if (!rc) { /* recorded without conflict: done; else numpy decides */
        rc = runs_on(w, r, a, n, run, stride, core, write);
        rc = rc == -2 ? -1 : rc == 0 ? 1 : 0;
    } else if (rc > 0)
        rc = 0;
    Py_XDECREF(bursts);
    Py_DECREF(r);
    Py_DECREF(w);
    return rc;
}
