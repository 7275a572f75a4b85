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
PyObject *cross_runs(PyObject *self, PyObject *args)
{
    PyObject *w_obj, *r_obj;
    Py_ssize_t start, n, run, stride;
    int core, write;
    if (!PyArg_ParseTuple(args, "OOnnnnip", &w_obj, &r_obj, &start, &n, &run, &stride, &core,
                          &write))
        return NULL;
    Py_buffer w, r;
    if (PyObject_GetBuffer(w_obj, &w, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(r_obj, &r, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&w);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t size = w.len;
    if (w.itemsize != 1 || r.itemsize != 1 || r.len != size || core < 0 || core >= 64) {
        PyErr_SetString(PyExc_TypeError, "cross_runs takes int8 writers and readers");
        goto done;
    }
    if (n <= 0 || run <= 0 || stride < run || start < 0 ||
        start + (n - 1) * stride + run > size) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    int8_t *writer = w.buf, *readers = r.buf, me = (int8_t)core;
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
        if (bad) {
            result = Py_NewRef(Py_True);
            goto done;
        }
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
    result = Py_NewRef(Py_False);
done:
    PyBuffer_Release(&w);
    PyBuffer_Release(&r);
    return result;
}
