/* The memory system's two loops (`memory_system.MemorySystem`), compiled:
 * the L2 test and update of the lines a transfer touches (`l2_touch`) and
 * the bus calendar's bin-by-bin take (`bus_take`). Each does the Python
 * code's double operations in its order (ISO C: no contraction into fused
 * multiply-adds), so the cycles are the same; anything it does not take
 * returns None and the Python code runs. */
#include "engine.h"

#include <math.h>
#include <string.h>

/* A float64 array's data, or NULL (with an exception) when it is not one
 * contiguous, writable float64 buffer. */
double *f64_data(PyObject *arr, Py_buffer *view)
{
    if (PyObject_GetBuffer(arr, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (view->itemsize != 8 || !view->format || strcmp(view->format, "d") != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "a contiguous float64 array");
        return NULL;
    }
    return (double *)view->buf;
}

/* One line: the hit test against the L2 window, then its last touch is t0
 * if later (`np.maximum(seen, t0)`). */
#define TOUCH(slot)                      \
    do {                                 \
        double s_ = (slot);              \
        hits += fabs(s_ - t0) <= window; \
        if (s_ < t0)                     \
            (slot) = t0;                 \
    } while (0)

/* l2_touch(last, first, a, b, n, step, per, rel, t0, window) -> (hits, lines)
 * or None. The lines are last[a:b] (rel None and n == 0: a dense transfer,
 * b clipped to the array), or n bursts of `per` lines every `step` from
 * `first`, or first + rel (an int64 array of distinct offsets). */
PyObject *l2_touch(PyObject *self, PyObject *args)
{
    PyObject *arr, *rel;
    Py_ssize_t first, a, b, n, step, per;
    double t0, window;
    if (!PyArg_ParseTuple(args, "OnnnnnnOdd", &arr, &first, &a, &b, &n, &step, &per, &rel, &t0,
                          &window))
        return NULL;
    Py_buffer view;
    double *last = f64_data(arr, &view);
    if (!last)
        return NULL;
    Py_ssize_t size = view.len / 8, hits = 0, lines = 0;
    int ok = 1;
    if (rel != Py_None) {
        Py_buffer rv;
        if (PyObject_GetBuffer(rel, &rv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        const int64_t *r = (const int64_t *)rv.buf;
        Py_ssize_t m = rv.len / 8;
        ok = rv.itemsize == 8 && rv.format && (rv.format[0] == 'l' || rv.format[0] == 'q');
        for (Py_ssize_t k = 0; ok && k < m; k++) /* numpy would wrap or raise: Python's */
            ok = r[k] + first >= 0 && r[k] + first < size;
        for (Py_ssize_t k = 0; ok && k < m; k++)
            TOUCH(last[r[k] + first]);
        lines = m;
        PyBuffer_Release(&rv);
    } else if (n > 0) {
        ok = first >= 0 && per >= 0 && step >= per && first + n * step <= size;
        for (Py_ssize_t i = 0; ok && i < n; i++)
            for (Py_ssize_t j = 0; j < per; j++)
                TOUCH(last[first + i * step + j]);
        lines = n * per;
    } else {
        if (b > size)
            b = size;
        ok = a >= 0;
        for (Py_ssize_t k = a; ok && k < b; k++)
            TOUCH(last[k]);
        lines = b > a ? b - a : 0;
    }
    PyBuffer_Release(&view);
    if (!ok)
        Py_RETURN_NONE;
    return Py_BuildValue("(nn)", hits, lines);
}

/* Python's float floor division (floatobject.c, _float_div_mod), which
 * floor(x / y) is not always. */
double floordiv(double vx, double wx)
{
    double mod = fmod(vx, wx), div = (vx - mod) / wx;
    if (mod && ((wx < 0) != (mod < 0)))
        div -= 1.0;
    if (!div)
        return copysign(0.0, vx / wx);
    double fl = floor(div);
    return div - fl > 0.5 ? fl + 1.0 : fl;
}

/* The numbers bus_take takes (else None: Python's loop runs). */
int bus_takes(double t, long long rate_i, long long bin_i, double share)
{
    return rate_i > 0 && bin_i > 0 && rate_i <= (1LL << 40) && bin_i <= (1LL << 12) && share > 0 &&
           t >= 0 && t <= 9e15;
}

/* The loop of `MemorySystem.transfer` on `room` (size bins) from *t with
 * *left bytes to move: 0 once they are moved, or the bins the calendar
 * needs (it is too short: grow it and call again from *t and *left). The
 * caller has checked what bus_take checks. */
long long bus_loop(double *room, Py_ssize_t size, double *t_io, double *left_io, long long rate_i,
                   double share, long long bin_i)
{
    const double rate = (double)rate_i, bin = (double)bin_i, full = (double)(rate_i * bin_i);
    double t = *t_io, left = *left_io;
    long long need = 0;
    while (left > 0) {
        long long b = (long long)floordiv(t, bin);
        long long whole = (long long)floordiv(left, full);
        if (b + whole + 1 > size) {
            need = b + whole + 1;
            break;
        }
        if (t == (double)(b * bin_i) && left > full) {
            long long span = (long long)floordiv(left - 1, full), k = 0;
            if (b + span > size)
                span = size - b; /* numpy's slice stops at the end */
            while (k < span && !(room[b + k] / share < full))
                k++;
            if (k) {
                const double cut = full * share;
                for (long long i = 0; i < k; i++)
                    room[b + i] = room[b + i] - cut;
                left -= (double)k * full;
                t = (double)((b + k) * bin_i);
                continue;
            }
        }
        long long end = (b + 1) * bin_i;
        double r = room[b], take = left, by_rate = rate * ((double)end - t), by_room = r / share;
        if (by_rate < take)
            take = by_rate;
        if (by_room < take)
            take = by_room;
        room[b] = r - take * share;
        left -= take;
        t = left <= 0 ? t + take / rate : (double)end;
    }
    *t_io = t;
    *left_io = left;
    return need;
}

/* bus_take(room, t, left, rate, share, bin) -> (t, left, bins needed): the
 * loop of `MemorySystem.transfer` from time t with `left` bytes to move,
 * until they are moved (bins needed 0) or the calendar is too short (the
 * caller grows it to `bins needed` and calls again from the t and left
 * returned). None: a number it does not take. */
PyObject *bus_take(PyObject *self, PyObject *args)
{
    PyObject *arr;
    double t, left, share;
    long long rate_i, bin_i;
    if (!PyArg_ParseTuple(args, "OddLdL", &arr, &t, &left, &rate_i, &share, &bin_i))
        return NULL;
    if (!bus_takes(t, rate_i, bin_i, share))
        Py_RETURN_NONE;
    Py_buffer view;
    double *room = f64_data(arr, &view);
    if (!room)
        return NULL;
    long long need = bus_loop(room, view.len / 8, &t, &left, rate_i, share, bin_i);
    PyBuffer_Release(&view);
    return Py_BuildValue("(ddL)", t, left, need);
}
