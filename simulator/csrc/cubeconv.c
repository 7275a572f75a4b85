/* The cube unit's numerics around its product (cube_unit.Mad.product):
 * fp16 operands to float64 and the float64 product rounded to fp32 into C.
 * numpy does both (a table take, a cast and an add), but the take reads a
 * 512 KB table that the product between two mads pushes out of the cache;
 * here the conversion is exact bit arithmetic (every one of the 65,536
 * patterns equals numpy's cast: test_sim_cube_unit.py checks them all), so
 * results are the Python path's bit for bit. */
#include "engine.h"

#include <string.h>

/* numpy's half -> double bits (npy_halfbits_to_doublebits): normals rebias
 * the exponent, subnormals are m * 2^-24 (exact), inf and NaN keep their
 * payload shifted into place. */
static inline uint64_t half_bits(uint16_t h)
{
    uint64_t sign = (uint64_t)(h & 0x8000u) << 48;
    uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u)
        return sign | 0x7ff0000000000000ULL | ((uint64_t)(em & 0x3ffu) << 42);
    if (em >= 0x0400u)
        return sign | ((uint64_t)(em + 0xfc000u) << 42);
    double v = (double)em * 0x1p-24;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits | sign;
}

/* A contiguous run of n patterns: the normal-number formula on all of them
 * (branch-free, so the compiler vectorises it), redone one by one when any
 * is zero, subnormal, inf or NaN. */
static inline void half_run(uint64_t *out, const uint16_t *p, Py_ssize_t n)
{
    uint32_t odd = 0;
    for (Py_ssize_t l = 0; l < n; l++) {
        uint32_t em = p[l] & 0x7fffu;
        odd |= (uint32_t)(em - 0x0400u) >= 0x7800u;
        out[l] = ((uint64_t)(p[l] & 0x8000u) << 48) | ((uint64_t)(em + 0xfc000u) << 42);
    }
    if (odd)
        for (Py_ssize_t l = 0; l < n; l++)
            out[l] = half_bits(p[l]);
}

/* f16_to_f64(dst, src): dst (C-contiguous float64) = src (uint16 patterns,
 * any strides, up to 4 dimensions) in C order. */
PyObject *f16_to_f64(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "f16_to_f64(dst, src)");
        return NULL;
    }
    Py_buffer d, s;
    if (PyObject_GetBuffer(args[0], &d, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &s, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&d);
        return NULL;
    }
    Py_ssize_t n = d.len / 8;
    int ok = d.itemsize == 8 && d.format && strcmp(d.format, "d") == 0 && s.itemsize == 2 &&
             s.ndim >= 1 && s.ndim <= 4 && s.len / 2 == n;
    if (ok) {
        Py_ssize_t shape[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 0};
        int off = 4 - s.ndim;
        for (int k = 0; k < s.ndim; k++) {
            shape[off + k] = s.shape[k];
            st[off + k] = s.strides[k];
        }
        uint64_t *out = (uint64_t *)d.buf; /* the doubles' bits */
        const char *base = (const char *)s.buf;
        for (Py_ssize_t i = 0; i < shape[0]; i++)
            for (Py_ssize_t j = 0; j < shape[1]; j++)
                for (Py_ssize_t k = 0; k < shape[2]; k++) {
                    const char *row = base + i * st[0] + j * st[1] + k * st[2];
                    if (st[3] == 2) {
                        half_run(out, (const uint16_t *)row, shape[3]);
                    } else if (shape[3] <= 64) { /* gathered first (B's columns) */
                        uint16_t tmp[64];
                        for (Py_ssize_t l = 0; l < shape[3]; l++)
                            memcpy(&tmp[l], row + l * st[3], 2);
                        half_run(out, tmp, shape[3]);
                    } else {
                        for (Py_ssize_t l = 0; l < shape[3]; l++) {
                            uint16_t h;
                            memcpy(&h, row + l * st[3], 2);
                            out[l] = half_bits(h);
                        }
                    }
                    out += shape[3];
                }
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "f16_to_f64: needs a contiguous float64 dst and a "
                                          "uint16 src of 1 to 4 dimensions, as many elements");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* round_into_f32(c, wide, accumulate): c (C-contiguous float32) = fp32(wide),
 * or c = fp32(c + fp32(wide)) when accumulating: one rounding of each exact
 * sum, then the fp32 add (what numpy's cast and add give). */
PyObject *round_into_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "round_into_f32(c, wide, accumulate)");
        return NULL;
    }
    int acc = PyObject_IsTrue(args[2]);
    if (acc < 0)
        return NULL;
    Py_buffer c, w;
    if (PyObject_GetBuffer(args[0], &c, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &w, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&c);
        return NULL;
    }
    Py_ssize_t n = c.len / 4;
    int ok = c.itemsize == 4 && c.format && strcmp(c.format, "f") == 0 && w.itemsize == 8 &&
             w.format && strcmp(w.format, "d") == 0 && w.len / 8 == n;
    if (ok) {
        float *out = (float *)c.buf;
        const double *in = (const double *)w.buf;
        if (acc)
            for (Py_ssize_t i = 0; i < n; i++)
                out[i] = out[i] + (float)in[i];
        else
            for (Py_ssize_t i = 0; i < n; i++)
                out[i] = (float)in[i];
    }
    PyBuffer_Release(&w);
    PyBuffer_Release(&c);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "round_into_f32: needs contiguous float32 c and "
                                          "float64 wide of as many elements");
        return NULL;
    }
    Py_RETURN_NONE;
}
