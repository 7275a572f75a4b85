/* The helpers of stamps.h: plans and Stamps arrays as C buffers.
 *
 * An array's buffer is asked for once and remembered, with a reference to
 * the array (so it lives, and its data stays where it is, until
 * `buffers_forget`: the machine's release at the end of a run). Asking numpy
 * costs about 0.3 us, and the generic path opened some 15 buffers per
 * instruction (BERT-base x12 on 32 cores: about 1 of 3.4 CPU s of the
 * pipes' run). */
#include <string.h>

#include "stamps.h"
#include <structmember.h>

static PyObject *s_coarse, *s_mixed, *s_any_mixed;
static PyObject *mem_names[MEM_NSLOTS]; /* Memory's slots, by name (`mem_slot`) */

int stamps_init(void)
{
    s_coarse = PyUnicode_InternFromString("coarse");
    s_mixed = PyUnicode_InternFromString("mixed");
    s_any_mixed = PyUnicode_InternFromString("any_mixed");
    const char *names[MEM_NSLOTS] = {"wstamp", "rstamp", "writers", "uninit"};
    for (int k = 0; k < MEM_NSLOTS; k++)
        if (!(mem_names[k] = PyUnicode_InternFromString(names[k])))
            return -1;
    return s_coarse && s_mixed && s_any_mixed ? 0 : -1;
}

/* The remembered buffers: open addressing on the array's address. */
typedef struct {
    PyObject *obj; /* NULL: empty */
    char *buf;
    Py_ssize_t len, itemsize;
    char format, writable;
    char ranged;        /* min and max of an int64 array's items known */
    int64_t min, max;
} Buf;

#define TABLE_BITS 16
static Buf table[1 << TABLE_BITS];
static Py_ssize_t used;

void buffers_forget(void)
{
    for (Py_ssize_t k = 0; k < (1 << TABLE_BITS); k++)
        Py_CLEAR(table[k].obj);
    used = 0;
}

/* The buffer of `obj` (C-contiguous), or NULL with an exception set. */
static const Buf *buffer(PyObject *obj)
{
    size_t mask = (1 << TABLE_BITS) - 1, k = ((uintptr_t)obj >> 4) * 0x9E3779B97F4A7C15ull >> 40;
    for (k &= mask; table[k].obj; k = (k + 1) & mask)
        if (table[k].obj == obj)
            return &table[k];
    if (used * 2 >= (1 << TABLE_BITS)) {
        buffers_forget();
        return buffer(obj);
    }
    Py_buffer view;
    int writable = 1;
    if (PyObject_GetBuffer(obj, &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        writable = 0;
        if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
            return NULL;
    }
    Buf *b = &table[k];
    b->buf = view.buf;
    b->len = view.len;
    b->itemsize = view.itemsize;
    b->format = view.format && view.format[0] && !view.format[1] ? view.format[0] : 0;
    b->writable = (char)writable;
    b->ranged = 0;
    b->obj = Py_NewRef(obj);
    used++;
    PyBuffer_Release(&view);
    return b;
}

int plan_open(PyObject *plan, Py_ssize_t size, Plan *P)
{
    P->held = 0;
    if (PySlice_Check(plan)) {
        Py_ssize_t start = -1, stop = -1, step = 1;
        PySliceObject *sl = (PySliceObject *)plan;
        /* slice(lo, hi), as `Stamps.plan` makes them: its ints read directly
         * (PySlice_Unpack's index protocol per field was 3% of the vector bench) */
        if (sl->step == Py_None && PyLong_CheckExact(sl->start) && PyLong_CheckExact(sl->stop)) {
            start = PyLong_AsSsize_t(sl->start);
            stop = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(sl->stop);
        }
        if (PyErr_Occurred() || start < 0 || stop < 0) {
            PyErr_Clear();
            if (PySlice_Unpack(plan, &start, &stop, &step) < 0)
                return -1;
        }
        if (step != 1 || start < 0 || stop > size || start > stop)
            return 1;
        P->lo = start;
        P->hi = stop;
        return 0;
    }
    /* An index array: its range is worked out once (a plan is a pattern's
     * granules, never written once made; every check of every use looped
     * over them). */
    Buf *b = (Buf *)buffer(plan);
    if (!b) {
        PyErr_Clear();
        return 1;
    }
    if (b->itemsize != 8 || (b->format != 'l' && b->format != 'q'))
        return 1;
    const int64_t *ix = (const int64_t *)b->buf;
    Py_ssize_t n = b->len / 8;
    if (!b->ranged) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (Py_ssize_t k = 0; k < n; k++) {
            lo = ix[k] < lo ? ix[k] : lo;
            hi = ix[k] > hi ? ix[k] : hi;
        }
        b->min = lo;
        b->max = hi;
        b->ranged = 1;
    }
    if (n && (b->min < 0 || b->max >= size))
        return 1;
    P->ix = ix;
    P->n = n;
    P->held = 1;
    return 0;
}

/* The `__slots__` of the Stamps class: where an instance keeps `coarse`,
 * `mixed` and `any_mixed`, read directly (three attribute look-ups by name
 * were 6% of the vector bench's run). Learnt from the first Stamps object
 * met; another type, or a slot not set, goes through PyObject_GetAttr. */
static PyTypeObject *slots_type;
static Py_ssize_t slot_at[3];

/* Where `type` keeps each of the `n` object slots `names` (member
 * descriptors of `__slots__`), into `at`; 0 when one is not such a slot
 * (then nothing is read at an offset and every look-up goes by name). */
static int learn_offsets(PyTypeObject *type, PyObject *const *names, int n, Py_ssize_t *at)
{
    Py_ssize_t found[8];
    if (n > 8)
        return 0;
    for (int k = 0; k < n; k++) {
        PyObject *d = PyObject_GetAttr((PyObject *)type, names[k]);
        if (!d) {
            PyErr_Clear();
            return 0;
        }
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
            ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        found[k] = ok ? ((PyMemberDescrObject *)d)->d_member->offset : -1;
        Py_DECREF(d);
        if (!ok)
            return 0;
    }
    memcpy(at, found, n * sizeof *at);
    return 1;
}

static void learn_slots(PyTypeObject *type)
{
    PyObject *names[3] = {s_coarse, s_mixed, s_any_mixed};
    if (learn_offsets(type, names, 3, slot_at))
        slots_type = (PyTypeObject *)Py_NewRef(type); /* kept: the offsets are its */
}

/* `obj.<name>` (a new reference), the k-th of the slots above. */
static PyObject *slot(PyObject *obj, int k, PyObject *name)
{
    if (Py_TYPE(obj) == slots_type) {
        PyObject *v = *(PyObject **)((char *)obj + slot_at[k]);
        if (v)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(obj, name);
}

int arrays_open(PyObject *stamps, Arrays *A)
{
    if (!slots_type)
        learn_slots(Py_TYPE(stamps));
    PyObject *c = slot(stamps, 0, s_coarse), *m = c ? slot(stamps, 1, s_mixed) : NULL;
    PyObject *any = m ? slot(stamps, 2, s_any_mixed) : NULL;
    int rc = -1;
    if (!c || !m || !any)
        goto out;
    A->any_mixed = any == Py_False ? 0 : any == Py_True ? 1 : PyObject_IsTrue(any);
    const Buf *bc = A->any_mixed < 0 ? NULL : buffer(c), *bm = bc ? buffer(m) : NULL;
    if (!bm)
        goto out;
    if (bc->itemsize != 4 || bm->itemsize != 1 || bc->len / 4 != bm->len || !bc->writable ||
        !bm->writable) {
        PyErr_SetString(PyExc_TypeError, "Stamps holds writable int32 stamps and bool flags");
        goto out;
    }
    A->c = (int32_t *)bc->buf;
    A->m = bm->buf;
    A->n = bm->len;
    rc = 0;
out:
    Py_XDECREF(c);
    Py_XDECREF(m);
    Py_XDECREF(any);
    return rc;
}

/* The same for `memory.Memory` (a slotted dataclass): its `wstamp`,
 * `rstamp`, `writers` and `uninit`, read at their offsets (four attribute
 * look-ups by name per access of every dynamic instruction were ~8% of the
 * vector bench's timing-only run). Learnt from the first Memory met. */
static PyTypeObject *mem_type;
static Py_ssize_t mem_at[MEM_NSLOTS];

static void learn_mem(PyTypeObject *type)
{
    if (learn_offsets(type, mem_names, MEM_NSLOTS, mem_at))
        mem_type = (PyTypeObject *)Py_NewRef(type);
}

PyObject *mem_slot(PyObject *mem, int k)
{
    if (!mem_type)
        learn_mem(Py_TYPE(mem));
    if (Py_TYPE(mem) == mem_type) {
        PyObject *v = *(PyObject **)((char *)mem + mem_at[k]);
        if (v)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(mem, mem_names[k]);
}

int int64_array(PyObject *obj, const int64_t **data, Py_ssize_t *n)
{
    const Buf *b = buffer(obj);
    if (!b) {
        PyErr_Clear();
        return 1;
    }
    if (b->itemsize != 8 || (b->format != 'l' && b->format != 'q'))
        return 1;
    *data = (const int64_t *)b->buf;
    *n = b->len / 8;
    return 0;
}
