/* The vector unit's dense elementwise ops (vector_unit.Binary / Unary
 * `bound`): `VecOp`, a callable holding the three bound views, that runs
 * the op's loop inline. The ufunc it replaces costs ~0.5 us a call on a
 * 128-lane repeat, nearly all call overhead (bench/sim_throughput.py
 * --floor). Results are numpy's bit for bit: fp16 operands are widened to
 * float32, the op runs in float32 and the result is rounded back to fp16
 * nearest-even, as numpy's float16 loops do (half -> float, op, float ->
 * half, in software: NaN payloads as numpy's conversion keeps them); max and
 * min pick an operand (the first unless the second is greater, or smaller,
 * and the first is not NaN), as np.maximum / np.minimum do. Every pattern
 * is checked against numpy (test_sim_vecops.py). A destination that
 * overlaps a source at another offset is computed through a scratch copy,
 * as numpy does. */
#include "engine.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN, OP_N };

/* numpy's half -> float bits (npy_halfbits_to_floatbits): exact. */
static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, bits;
    if (em >= 0x7c00u)
        bits = sign | 0x7f800000u | ((em & 0x3ffu) << 13);
    else if (em >= 0x0400u)
        bits = sign | ((em + 0x1c000u) << 13);
    else {
        float v = (float)em * 0x1p-24f; /* subnormal or zero: exact */
        memcpy(&bits, &v, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* float -> half, round to nearest even; inf and NaN as numpy's
 * npy_floatbits_to_halfbits (a NaN keeps its top 10 payload bits, and
 * stays a NaN when they are all zero). */
static inline uint16_t float_to_half(float x)
{
    uint32_t f;
    memcpy(&f, &x, 4);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    uint32_t fe = f & 0x7f800000u, fs = f & 0x007fffffu;
    if (fe >= 0x47800000u) { /* overflow, inf or NaN */
        if (fe == 0x7f800000u && fs) {
            uint16_t r = (uint16_t)(0x7c00u + (fs >> 13));
            return sign | (r == 0x7c00u ? 0x7c01u : r);
        }
        return sign | 0x7c00u;
    }
    if (fe < 0x33000000u) /* below half the smallest subnormal: zero */
        return sign;
    uint32_t e = fe >> 23, m;
    int shift;
    if (fe <= 0x38000000u) { /* a subnormal half (or the rounding up to the smallest normal) */
        m = fs | 0x00800000u;
        shift = (int)(126 - e); /* 13 + (113 - e) */
    } else {
        m = fs;
        shift = 13;
    }
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u)))
        q++;
    if (fe > 0x38000000u)
        q += (e - 112) << 10; /* a carry out of the significand bumps the exponent: right */
    return sign | (uint16_t)q;
}

/* a op b in float32. Two NaNs: numpy's float16 add and multiply give the
 * second's (its compiler swapped the commutative operands), subtract and
 * divide the first's; one NaN: that one; quieted, as the hardware does. */
static inline float op_f32(int op, float a, float b)
{
    if (__builtin_expect(a != a || b != b, 0)) {
        int second = b != b && (a != a ? (op == OP_ADD || op == OP_MUL) : 1);
        float nan = second ? b : a;
        uint32_t bits;
        memcpy(&bits, &nan, 4);
        bits |= 0x00400000u;
        memcpy(&nan, &bits, 4);
        return nan;
    }
    switch (op) {
    case OP_ADD: return a + b;
    case OP_SUB: return a - b;
    case OP_MUL: return a * b;
    default: return a / b;
    }
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int op;           /* OP_* */
    int scalar;       /* src1 is the scalar `s`, not a view */
    Py_ssize_t n;     /* elements */
    Py_buffer dst, a, b;
    uint16_t s;       /* the scalar's fp16 pattern */
} VecOp;

/* One element: the operands' fp16 patterns in, the result's out. */
static inline uint16_t f16_elem(int op, uint16_t x, uint16_t y)
{
    float a = half_to_float(x), b = half_to_float(y);
    if (op == OP_MAX)
        return (a >= b || a != a) ? x : y;
    if (op == OP_MIN)
        return (a <= b || a != a) ? x : y;
    return float_to_half(op_f32(op, a, b));
}

/* The fast path, on blocks of BLK elements: branch-free (the compiler
 * vectorises it) for what is common, zero or normal operands and a zero or
 * normal result; an element that is not (a subnormal, inf or NaN operand;
 * a result below fp16's smallest normal or at or above 2^16) is flagged and
 * redone by f16_elem. Both give numpy's bits. */
#define BLK 128

static inline uint32_t widen(uint16_t h, uint8_t *odd)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu;
    *odd |= (em - 1u) < 0x3ffu || em >= 0x7c00u;
    return sign | (em ? (em + 0x1c000u) << 13 : 0u);
}

static inline uint16_t narrow(uint32_t f, uint8_t *odd)
{
    uint32_t mag = f & 0x7fffffffu;
    *odd |= (mag - 1u) < 0x387fffffu || mag >= 0x47800000u;
    uint32_t t = mag + 0x0fffu + ((mag >> 13) & 1u); /* nearest, ties to even */
    return (uint16_t)(((f >> 16) & 0x8000u) | (mag ? (t - 0x38000000u) >> 13 : 0u));
}

/* out[i] for i < n, odd[i] set where f16_elem must redo it; returns any. */
static inline __attribute__((always_inline)) int
block(int op, uint16_t *out, uint8_t *odd, const uint16_t *x, const uint16_t *y, Py_ssize_t n)
{
    uint8_t any = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint8_t o = 0;
        uint32_t ua = widen(x[i], &o), ub = widen(y[i], &o), ur;
        float a, b, r;
        memcpy(&a, &ua, 4);
        memcpy(&b, &ub, 4);
        if (op == OP_MAX) {
            out[i] = a >= b ? x[i] : y[i];
        } else if (op == OP_MIN) {
            out[i] = a <= b ? x[i] : y[i];
        } else {
            r = op == OP_ADD ? a + b : op == OP_SUB ? a - b : op == OP_MUL ? a * b : a / b;
            memcpy(&ur, &r, 4);
            out[i] = narrow(ur, &o);
        }
        odd[i] = o;
        any |= o;
    }
    return any;
}

/* AVX2 where the CPU has it (chosen at load time; the same IEEE operations,
 * so the same bits): twice the lanes of the SSE2 baseline. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void run_into(const VecOp *V, uint16_t *d)
{
    const uint16_t *a = (const uint16_t *)V->a.buf, *b = (const uint16_t *)V->b.buf;
    uint16_t sb[BLK], tmp[BLK];
    uint8_t odd[BLK];
    if (V->scalar)
        for (int i = 0; i < BLK; i++)
            sb[i] = V->s;
    for (Py_ssize_t off = 0; off < V->n; off += BLK) {
        Py_ssize_t m = V->n - off < BLK ? V->n - off : BLK;
        const uint16_t *x = a + off, *y = V->scalar ? sb : b + off;
        int any;
        switch (V->op) {
        case OP_ADD: any = block(OP_ADD, tmp, odd, x, y, m); break;
        case OP_SUB: any = block(OP_SUB, tmp, odd, x, y, m); break;
        case OP_MUL: any = block(OP_MUL, tmp, odd, x, y, m); break;
        case OP_DIV: any = block(OP_DIV, tmp, odd, x, y, m); break;
        case OP_MAX: any = block(OP_MAX, tmp, odd, x, y, m); break;
        default: any = block(OP_MIN, tmp, odd, x, y, m); break;
        }
        if (any)
            for (Py_ssize_t i = 0; i < m; i++)
                if (odd[i])
                    tmp[i] = f16_elem(V->op, x[i], y[i]);
        memcpy(d + off, tmp, (size_t)m * 2); /* after reading: dst may be a source */
    }
}

/* dst [p, p + len) overlaps src at another start: numpy reads the inputs
 * as they were, so the result goes through a scratch copy. */
static int shifted_overlap(const Py_buffer *dst, const Py_buffer *src)
{
    const char *p = dst->buf, *q = src->buf;
    return p != q && p < q + src->len && q < p + dst->len;
}

static PyObject *VecOp_call(VecOp *V, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    (void)args;
    if (PyVectorcall_NARGS(nargsf) != 0 || kw) {
        PyErr_SetString(PyExc_TypeError, "a VecOp takes no arguments");
        return NULL;
    }
    if (shifted_overlap(&V->dst, &V->a) || (!V->scalar && shifted_overlap(&V->dst, &V->b))) {
        char *tmp = malloc((size_t)V->dst.len);
        if (!tmp)
            return PyErr_NoMemory();
        run_into(V, (uint16_t *)tmp);
        memcpy(V->dst.buf, tmp, (size_t)V->dst.len);
        free(tmp);
    } else {
        run_into(V, (uint16_t *)V->dst.buf);
    }
    Py_RETURN_NONE;
}

static void VecOp_dealloc(VecOp *V)
{
    PyBuffer_Release(&V->dst);
    PyBuffer_Release(&V->a);
    if (!V->scalar)
        PyBuffer_Release(&V->b);
    Py_TYPE(V)->tp_free((PyObject *)V);
}

static PyTypeObject VecOpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npu.simulator._cengine.VecOp",
    .tp_doc = "A dense vector op on bound views (vec_op makes one); call it without arguments.",
    .tp_basicsize = sizeof(VecOp),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(VecOp, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = (destructor)VecOp_dealloc,
};

/* A contiguous, aligned 1-D float16 view of `n` elements (n < 0: any). */
static int view_of(PyObject *o, Py_buffer *v, int writable, Py_ssize_t *n)
{
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                                     (writable ? PyBUF_WRITABLE : 0)) < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = v->ndim == 1 && v->itemsize == 2 && v->format && strcmp(v->format, "e") == 0 &&
             ((uintptr_t)v->buf % 2) == 0 && (*n < 0 || v->shape[0] == *n);
    if (!ok) {
        PyBuffer_Release(v);
        return 0;
    }
    *n = v->shape[0];
    return 1;
}

/* vec_op(op, dst, src0, src1, scalar) -> a VecOp on float16 views, or None
 * (not one it takes: the caller keeps the ufunc). `src1` None: `scalar`
 * (its fp16 bit pattern, an int) is the second operand. */
PyObject *vec_op(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "vec_op(op, dst, src0, src1, scalar)");
        return NULL;
    }
    long op = PyLong_AsLong(args[0]);
    long s = PyLong_AsLong(args[4]);
    if ((op == -1 || s == -1) && PyErr_Occurred())
        return NULL;
    if (op < 0 || op >= OP_N || s < 0 || s > 0xffff)
        Py_RETURN_NONE;
    int scalar = args[3] == Py_None;
    VecOp *V = PyObject_New(VecOp, &VecOpType);
    if (!V)
        return NULL;
    V->vectorcall = (vectorcallfunc)VecOp_call;
    V->op = (int)op;
    V->scalar = scalar;
    V->n = -1;
    V->s = (uint16_t)s;
    if (!view_of(args[1], &V->dst, 1, &V->n)) {
        PyObject_Free(V);
        Py_RETURN_NONE;
    }
    if (!view_of(args[2], &V->a, 0, &V->n)) {
        PyBuffer_Release(&V->dst);
        PyObject_Free(V);
        Py_RETURN_NONE;
    }
    if (!scalar && !view_of(args[3], &V->b, 0, &V->n)) {
        PyBuffer_Release(&V->a);
        PyBuffer_Release(&V->dst);
        PyObject_Free(V);
        Py_RETURN_NONE;
    }
    return (PyObject *)V;
}

int vecops_register(PyObject *m)
{
    if (PyType_Ready(&VecOpType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "VecOp", (PyObject *)&VecOpType);
}
