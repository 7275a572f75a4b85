/* `trace_codes.InstrTable.numbers_of` compiled: each trace entry's
 * instruction number in the launch's table, a new instruction numbered as
 * it is met (the table's length then). The Python loop (a `map` of the
 * numbering's `__getitem__` over a `map` of `itemgetter(0)`) was 6% of the
 * vector bench's run and 0.2 CPU s of a 32-core BERT-base x12 (491k
 * entries). Same numbers in the same order: `ids` is the table's dict. */
#include <string.h>

#include "engine.h"

/* number_entries(trace, ids, out): fills `out` (a writable int64 buffer of
 * len(trace) items); returns None. */
PyObject *number_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "number_entries(trace: list, ids: dict, out)");
        return NULL;
    }
    PyObject *trace = args[0], *ids = args[1];
    Py_buffer view;
    if (PyObject_GetBuffer(args[2], &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(trace);
    if (view.itemsize != 8 || !view.format || (strcmp(view.format, "l") && strcmp(view.format, "q")) ||
        view.len != n * 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "number_entries: `out` holds len(trace) int64s");
        return NULL;
    }
    int64_t *out = (int64_t *)view.buf;
    PyObject *last = NULL; /* the previous entry's instruction (borrowed: the trace holds it) */
    int64_t last_num = 0;
    /* Recent instructions' numbers by address, before the dict: a number never
     * changes once given, and the trace keeps every instruction (so its
     * address) alive during the call. The dict's lookups were most of this
     * loop on the vector bench (~50 instructions, 125k entries). */
    enum { SEEN = 256 };
    PyObject *seen_instr[SEEN];
    int64_t seen_num[SEEN];
    memset(seen_instr, 0, sizeof seen_instr);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = PyList_GET_ITEM(trace, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) < 1) {
            PyErr_SetString(PyExc_TypeError, "a trace entry is a tuple (instr, ...)");
            goto fail;
        }
        PyObject *instr = PyTuple_GET_ITEM(entry, 0);
        size_t slot = ((uintptr_t)instr >> 4) % SEEN;
        if (instr != last && seen_instr[slot] == instr) {
            last = instr;
            last_num = seen_num[slot];
        } else if (instr != last) {
            PyObject *num = PyDict_GetItemWithError(ids, instr);
            if (num) {
                last_num = PyLong_AsLongLong(num);
                if (last_num == -1 && PyErr_Occurred())
                    goto fail;
            } else {
                if (PyErr_Occurred())
                    goto fail;
                last_num = PyDict_GET_SIZE(ids);
                num = PyLong_FromLongLong(last_num);
                int r = num ? PyDict_SetItem(ids, instr, num) : -1;
                Py_XDECREF(num);
                if (r < 0)
                    goto fail;
            }
            last = instr;
            seen_instr[slot] = instr;
            seen_num[slot] = last_num;
        }
        out[i] = last_num;
        if (PyList_GET_SIZE(trace) != n) {
            PyErr_SetString(PyExc_RuntimeError, "the trace changed while it was numbered");
            goto fail;
        }
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    PyBuffer_Release(&view);
    return NULL;
}
