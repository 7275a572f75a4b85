/* One GM transfer's cycles (`compiled.gm_timer`'s `gm` and
 * `memory_system.MemorySystem.transfer`), compiled whole: the operand's
 * address, the L2 lines it touches (a dense run or equal line-aligned
 * bursts), their hit test and update, the bytes counted and the bus
 * calendar's take, the same integer and double operations in the same order
 * as the Python code (ISO C, no fused multiply-adds). The loop calls it
 * without a Python frame. Whatever it does not take (lines given one by one,
 * a rate that is not an int, numbers out of range) goes, before anything is
 * changed, to `MemorySystem.transfer`, which is the reference (the Python
 * engine always runs it). */
#include "engine.h"

#include <math.h>

static PyObject *s_esizes, *s_nbytes, *s_n_bursts, *s_rate, *s_base, *s_mem, *s_last_touch,
    *s_line, *s_window, *s_room, *s_gm_bytes, *s_l2_hit_bytes, *s_bus_bytes, *s_last_cycle,
    *s_target, *s_gm_burst_cycles, *s_transfer, *s_last, *s_grow, *s_read, *s_write;

int gmxfer_init(void)
{
#define INTERN(name) if (!(s_##name = PyUnicode_InternFromString(#name))) return -1
    INTERN(esizes); INTERN(nbytes); INTERN(n_bursts); INTERN(rate); INTERN(base); INTERN(mem);
    INTERN(line); INTERN(window); INTERN(room);
    INTERN(gm_bytes); INTERN(l2_hit_bytes); INTERN(bus_bytes); INTERN(last_cycle);
    INTERN(read); INTERN(write); INTERN(target); INTERN(gm_burst_cycles);
#undef INTERN
    s_last_touch = PyUnicode_InternFromString("_last_touch");
    s_transfer = PyUnicode_InternFromString("transfer");
    s_last = PyUnicode_InternFromString("_last");
    s_grow = PyUnicode_InternFromString("_grow");
    return s_last_touch && s_transfer && s_last && s_grow ? gmfacts_init() : -1;
}

/* An int attribute as a long long: 1, 0 (absent, not an exact int, or too
 * large: the caller falls back), -1 with an exception. */
int attr_ll(PyObject *o, PyObject *name, long long *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v)
        return -1;
    int ok = 0;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        *out = PyLong_AsLongLongAndOverflow(v, &overflow);
        ok = !overflow && (*out != -1 || !PyErr_Occurred());
    }
    Py_DECREF(v);
    return ok;
}

int item_ll(PyObject *tuple, Py_ssize_t k, long long *out)
{
    PyObject *v = PyTuple_GET_ITEM(tuple, k);
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    return !overflow && (*out != -1 || !PyErr_Occurred());
}

/* Python's a // b and a % b for b > 0. */
static long long ll_floordiv(long long a, long long b)
{
    long long q = a / b;
    return (a % b && a < 0) ? q - 1 : q;
}

/* attr += delta on a Python number attribute (an int or a float). */
static int add_attr(PyObject *o, PyObject *name, PyObject *delta)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v)
        return -1;
    PyObject *sum = PyNumber_Add(v, delta);
    Py_DECREF(v);
    int r = sum ? PyObject_SetAttr(o, name, sum) : -1;
    Py_XDECREF(sum);
    return r;
}

static int add_item(PyObject *dict, PyObject *key, long long delta)
{
    PyObject *v = PyDict_GetItemWithError(dict, key), *d = PyLong_FromLongLong(delta);
    if (!v || !d) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        Py_XDECREF(d);
        return -1;
    }
    PyObject *sum = PyNumber_Add(v, d);
    Py_DECREF(d);
    int r = sum ? PyDict_SetItem(dict, key, sum) : -1;
    Py_XDECREF(sum);
    return r;
}

/* gm_transfer(memsys, bin, t0, instr, views) -> cycles: `compiled.gm_timer`'s
 * gm (`bin`: memory_system.BIN, the calendar's cycles per bin). */
PyObject *gm_transfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyLong_CheckExact(args[1]) || !PyTuple_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "gm_transfer(memsys, bin, t0, instr, views)");
        return NULL;
    }
    PyObject *ms = args[0], *t0_obj = args[2], *instr = args[3], *views = args[4];
    long long bus_bin = PyLong_AsLongLong(args[1]);
    if (bus_bin == -1 && PyErr_Occurred())
        return NULL;
    PyObject *pat = NULL, *mem = NULL, *last = NULL, *result = NULL;
    long long k, t0 = 0, nbytes = 0, n_bursts = 0, rate = 0, esize = 0, base = 0, off = 0, line = 0,
              burst_cycles = 0;
    int r;
    const Facts *F = facts_of(instr);
    if (!F)
        return NULL;
    k = F->k;
    if (k < 0 || k >= PyTuple_GET_SIZE(views) || !PyTuple_Check(PyTuple_GET_ITEM(views, k)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(views, k)) < 2)
        return PyErr_Format(PyExc_TypeError, "a GM operand view");
    PyObject *view = PyTuple_GET_ITEM(views, k), *region = PyTuple_GET_ITEM(view, 0);
    int fits = F->esize_ok;
    esize = F->esize;
    PyObject *base_obj = PyObject_GetAttr(region, s_base);
    if (!base_obj)
        return NULL;
    int overflow = 0;
    base = PyLong_CheckExact(base_obj) ? PyLong_AsLongLongAndOverflow(base_obj, &overflow) : 0;
    fits = fits && PyLong_CheckExact(base_obj) && !overflow && item_ll(view, 1, &off);
    Py_DECREF(base_obj);
    if (PyErr_Occurred())
        return NULL;
    int write = k == 1;
    long long addr = 0;
    fits = fits && !__builtin_mul_overflow(off, esize, &addr) &&
           !__builtin_add_overflow(addr, base, &addr);
    if (!(mem = PyObject_GetAttr(region, s_mem)))
        goto done;
    pat = Py_NewRef(F->pat);
    fits = fits && F->nums_ok;
    nbytes = F->nbytes;
    n_bursts = F->n_bursts;
    rate = F->rate;
    if (fits && !PyLong_CheckExact(t0_obj))
        fits = 0;
    if (fits) {
        t0 = PyLong_AsLongLongAndOverflow(t0_obj, &overflow);
        fits = !overflow;
    }
    fits = fits && nbytes > 0 && nbytes < (1LL << 52) && addr >= 0 && t0 >= 0 &&
           t0 <= (long long)9e15 && rate > 0 && rate <= (1LL << 40) && n_bursts >= 0 &&
           n_bursts < (1LL << 40);
    if (fits && (r = attr_ll(ms, s_line, &line)) < 0)
        goto done;
    fits = fits && r && line > 0;
    if (fits) {
        PyObject *target = PyObject_GetAttr(ms, s_target);
        if (!target)
            goto done;
        r = attr_ll(target, s_gm_burst_cycles, &burst_cycles);
        Py_DECREF(target);
        if (r < 0)
            goto done;
        fits = r && burst_cycles >= 0 && burst_cycles < (1LL << 20);
    }
    /* The L2 lines: last[a:b] (dense), or n bursts of per lines every step. */
    long long first = 0, a = 0, b = 0, n = 0, step = 0, per = 0, burst = 0, stride = 0,
              shift = 0;
    int spread = 0;
    if (fits) {
        PyObject *touch = PyObject_GetAttr(ms, s_last_touch);
        if (!touch)
            goto done;
        last = PyDict_Check(touch) ? PyDict_GetItemWithError(touch, mem) : NULL;
        Py_XINCREF(last);
        Py_DECREF(touch);
        if (!last && (PyErr_Occurred() || !(last = PyObject_CallMethodOneArg(ms, s_last, mem))))
            goto done;
        shift = addr % line;
        first = (addr - shift) / line;
        if (F->shape == 0) {
            long long lo = F->lo, hi = F->hi;
            if (F->lohi && lo > -(1LL << 52) && hi < (1LL << 52)) {
                a = first + ll_floordiv(lo + shift, line);
                b = first + ll_floordiv(hi - 1 + shift, line) + 1;
            }
            fits = F->lohi && a >= 0;
        } else if (F->shape == 1) {
            n = F->n;
            burst = F->burst;
            stride = F->stride;
            fits = F->items_ok && n > 0 && n < (1LL << 32) && burst > 0 &&
                   stride >= burst && stride < (1LL << 32);
            /* Line-aligned bursts: n runs of `per` lines every `step`; others
             * each line once in address order (Python's sorted_unique of
             * their bytes' lines), the same lines either way. */
            if (fits && shift == 0 && burst % line == 0 && stride % line == 0) {
                per = burst / line;
                step = stride / line;
            } else {
                spread = 1;
            }
        } else {
            fits = 0; /* lines one by one: Python's */
        }
    }
    Py_buffer lv;
    double *ls = NULL;
    if (fits && !(ls = f64_data(last, &lv)))
        goto done;
    if (ls) {
        Py_ssize_t size = lv.len / 8;
        if (n > 0 && !spread && first + n * step > size)
            spread = 1; /* the last gap runs past the lines: Python's line by line */
        if (spread)
            fits = first >= 0 && first + ((n - 1) * stride + burst - 1 + shift) / line < size;
        else if (n > 0)
            fits = first >= 0 && first + n * step <= size;
        else if (b > size)
            b = size;
        if (fits && !write && !spread && (n > 0 ? n * per : b - a) <= 0)
            fits = 0; /* no line: Python's division by zero */
        if (!fits)
            PyBuffer_Release(&lv);
    }
    if (!fits) {
        PyObject *call[9] = {NULL, t0_obj, NULL, NULL, NULL, mem, pat, NULL,
                             write ? Py_True : Py_False};
        PyObject *addr_obj = NULL;
        if (!(call[2] = PyObject_GetAttr(instr, s_nbytes)) ||
            !(call[3] = PyObject_GetAttr(instr, s_n_bursts)) ||
            !(call[4] = PyObject_GetAttr(instr, s_rate)))
            goto fallback_done;
        /* region.base + views[k][1] * instr.esizes[k], as Python computes it */
        PyObject *es = PyObject_GetAttr(instr, s_esizes), *rb = PyObject_GetAttr(region, s_base);
        PyObject *ek = es ? PySequence_GetItem(es, k) : NULL;
        PyObject *prod = ek ? PyNumber_Multiply(PyTuple_GET_ITEM(view, 1), ek) : NULL;
        addr_obj = prod && rb ? PyNumber_Add(rb, prod) : NULL;
        Py_XDECREF(es);
        Py_XDECREF(rb);
        Py_XDECREF(ek);
        Py_XDECREF(prod);
        if (addr_obj) {
            call[7] = addr_obj;
            PyObject *meth = PyObject_GetAttr(ms, s_transfer);
            if (meth) {
                result = PyObject_Vectorcall(meth, call + 1, 8, NULL);
                Py_DECREF(meth);
            }
        }
    fallback_done:
        for (int j = 2; j < 5; j++)
            Py_XDECREF(call[j]);
        Py_XDECREF(addr_obj);
        goto done;
    }
    /* _touch */
    double window;
    PyObject *w = PyObject_GetAttr(ms, s_window);
    if (!w) {
        PyBuffer_Release(&lv);
        goto done;
    }
    window = PyFloat_AsDouble(w);
    Py_DECREF(w);
    if (window == -1.0 && PyErr_Occurred()) {
        PyBuffer_Release(&lv);
        goto done;
    }
    const double tt = (double)t0;
    long long hits = 0, lines;
#define TOUCH(slot)                       \
    do {                                  \
        double s_ = (slot);               \
        hits += fabs(s_ - tt) <= window;  \
        if (s_ < tt)                      \
            (slot) = tt;                  \
    } while (0)
    if (spread) {
        long long next = 0; /* the first line not yet touched */
        lines = 0;
        for (long long i = 0; i < n; i++) {
            long long lo = (i * stride + shift) / line, hi = (i * stride + burst - 1 + shift) / line;
            for (long long q = lo > next ? lo : next; q <= hi; q++, lines++)
                TOUCH(ls[first + q]);
            if (hi + 1 > next)
                next = hi + 1;
        }
    } else if (n > 0) {
        for (long long i = 0; i < n; i++)
            for (long long j = 0; j < per; j++)
                TOUCH(ls[first + i * step + j]);
        lines = n * per;
    } else {
        for (long long q = a; q < b; q++)
            TOUCH(ls[q]);
        lines = b > a ? b - a : 0;
    }
#undef TOUCH
    PyBuffer_Release(&lv);
    /* the bytes */
    double chip;
    PyObject *gm_bytes = PyObject_GetAttr(ms, s_gm_bytes);
    if (!gm_bytes)
        goto done;
    if (write) {
        chip = (double)nbytes;
        r = PyDict_Check(gm_bytes) ? add_item(gm_bytes, s_write, nbytes) : -1;
    } else {
        double miss_share = 1.0 - (double)hits / (double)lines;
        chip = (double)nbytes * miss_share;
        r = PyDict_Check(gm_bytes) ? add_item(gm_bytes, s_read, nbytes) : -1;
        if (r == 0) {
            PyObject *d = PyLong_FromLongLong(nbytes - (long long)chip);
            r = d ? add_attr(ms, s_l2_hit_bytes, d) : -1;
            Py_XDECREF(d);
        }
    }
    Py_DECREF(gm_bytes);
    if (r < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "MemorySystem.gm_bytes must be a dict");
        goto done;
    }
    PyObject *chip_obj = PyFloat_FromDouble(chip);
    r = chip_obj ? add_attr(ms, s_bus_bytes, chip_obj) : -1;
    Py_XDECREF(chip_obj);
    if (r < 0)
        goto done;
    /* the bus */
    double t = tt;
    if (chip <= 0) {
        t += (double)nbytes / (double)rate;
    } else {
        double share = chip / (double)nbytes, left = (double)nbytes;
        while (left > 0) {
            if (!bus_takes(t, rate, bus_bin, share)) {
                PyErr_SetString(PyExc_OverflowError, "the bus calendar's time is out of range");
                goto done;
            }
            PyObject *room = PyObject_GetAttr(ms, s_room);
            if (!room)
                goto done;
            Py_buffer rv;
            double *rs = f64_data(room, &rv);
            Py_DECREF(room);
            if (!rs)
                goto done;
            long long need = bus_loop(rs, rv.len / 8, &t, &left, rate, share, bus_bin);
            PyBuffer_Release(&rv);
            if (need) {
                PyObject *nb = PyLong_FromLongLong(need), *g = NULL;
                if (nb)
                    g = PyObject_CallMethodOneArg(ms, s_grow, nb);
                Py_XDECREF(nb);
                if (!g)
                    goto done;
                Py_DECREF(g);
            }
        }
    }
    long long cycles = -(long long)floordiv(-(t - tt), 1.0) + n_bursts * burst_cycles;
    /* self.last_cycle = max(self.last_cycle, t0 + cycles) */
    PyObject *lc = PyObject_GetAttr(ms, s_last_cycle), *e = PyLong_FromLongLong(t0 + cycles);
    r = lc && e ? PyObject_RichCompareBool(e, lc, Py_GT) : -1;
    if (r > 0)
        r = PyObject_SetAttr(ms, s_last_cycle, e);
    Py_XDECREF(lc);
    Py_XDECREF(e);
    if (r < 0)
        goto done;
    result = PyLong_FromLongLong(cycles > 1 ? cycles : 1);
done:
    Py_XDECREF(pat);
    Py_XDECREF(mem);
    Py_XDECREF(last);
    return result;
}
