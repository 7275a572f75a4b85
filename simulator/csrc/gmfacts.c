/* What one GM transfer reads of its instruction and of that operand's
 * pattern (gmxfer.c), read once per instruction: an instruction's and a
 * pattern's facts do not change once built (`trace_codes` reads them once
 * per launch too), and the attribute look-ups by name were half of
 * `gm_transfer`'s own time. */
#include "engine.h"

static PyObject *s_gm_operand, *s_esizes, *s_nbytes, *s_n_bursts, *s_rate, *s_src_pat,
    *s_dst_pat, *s_explicit_idx, *s_bursts, *s_lo, *s_hi;

int gmfacts_init(void)
{
#define INTERN(name) if (!(s_##name = PyUnicode_InternFromString(#name))) return -1
    INTERN(gm_operand); INTERN(esizes); INTERN(nbytes); INTERN(n_bursts); INTERN(rate);
    INTERN(src_pat); INTERN(dst_pat); INTERN(explicit_idx); INTERN(bursts); INTERN(lo);
    INTERN(hi);
#undef INTERN
    return 0;
}

/* A table indexed by the instruction's address, each slot holding its
 * instruction (so no other object takes that address while it is there). */
#define FACTS_BITS 10
static Facts facts_table[1 << FACTS_BITS];

/* The facts of `instr`, or NULL with an exception (`gm_operand` not an int:
 * not a GM transfer). What cannot be read of them leaves a fact unset, and
 * the transfer then goes to MemorySystem.transfer, which reads them itself. */
const Facts *facts_of(PyObject *instr)
{
    size_t h = (size_t)(((uintptr_t)instr >> 4) * 0x9E3779B97F4A7C15ull >> (64 - FACTS_BITS));
    Facts *f = &facts_table[h];
    if (f->instr == instr)
        return f;
    Facts F = {0};
    int r;
    if ((r = attr_ll(instr, s_gm_operand, &F.k)) <= 0)
        return r < 0 ? NULL : (Facts *)PyErr_Format(PyExc_TypeError, "not a GM transfer");
    PyObject *esizes = PyObject_GetAttr(instr, s_esizes);
    if (!esizes)
        return NULL;
    F.esize_ok = PyTuple_Check(esizes) && F.k >= 0 && F.k < PyTuple_GET_SIZE(esizes) &&
                 item_ll(esizes, F.k, &F.esize);
    Py_DECREF(esizes);
    if (!(F.pat = PyObject_GetAttr(instr, F.k == 0 ? s_src_pat : s_dst_pat)))
        return NULL;
    PyObject *nums[3] = {s_nbytes, s_n_bursts, s_rate};
    long long *outs[3] = {&F.nbytes, &F.n_bursts, &F.rate};
    F.nums_ok = 1;
    for (int j = 0; F.nums_ok && j < 3; j++)
        if ((r = attr_ll(instr, nums[j], outs[j])) <= 0) {
            PyErr_Clear(); /* the Python transfer reads it (and raises) */
            F.nums_ok = 0;
        }
    F.shape = 2;
    PyObject *idx = PyObject_GetAttr(F.pat, s_explicit_idx);
    PyObject *bursts = idx ? PyObject_GetAttr(F.pat, s_bursts) : NULL;
    if (idx && bursts && idx == Py_None && bursts == Py_None) {
        F.shape = 0;
        if ((r = attr_ll(F.pat, s_lo, &F.lo)) > 0)
            r = attr_ll(F.pat, s_hi, &F.hi);
        F.lohi = r > 0;
        if (r < 0)
            F.shape = 2;
    } else if (bursts && bursts != Py_None && PyTuple_Check(bursts) &&
               PyTuple_GET_SIZE(bursts) == 3) {
        F.shape = 1;
        F.items_ok = item_ll(bursts, 0, &F.n) && item_ll(bursts, 1, &F.burst) &&
                     item_ll(bursts, 2, &F.stride);
    }
    Py_XDECREF(idx);
    Py_XDECREF(bursts);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        F.shape = 2;
    }
    Py_XDECREF(f->instr);
    Py_XDECREF(f->pat);
    *f = F;
    f->instr = Py_NewRef(instr);
    return f;
}
