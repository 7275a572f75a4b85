/* `machine.SharedBindings.bind`, compiled: one operand set's core-independent
 * binding (every operand's address; per access its alignment and bounds, its
 * memory, hazard group, clean-read key and the granules it stamps), the same
 * tuples in the same dicts as the Python method (`bind_python`, the
 * reference). An operand set the method would refuse (misaligned, out of
 * bounds, a write to a constant) or numbers it does not take go to
 * `bind_python`, which raises or binds as before: the work done here until
 * then (clean-read keys set by default) is what it does again. A granule
 * answer not yet known is `Stamps.plan`'s. */
#include "stamps.h"

static PyObject *s_esizes, *s_plan, *s_base, *s_size, *s_mem, *s_group, *s_space, *s_constant,
    *s_wstamp, *s_g, *s_tokens, *s_bindings, *s_bind_python, *s_gm;

int bind_init(void)
{
#define INTERN(name) if (!(s_##name = PyUnicode_InternFromString(#name))) return -1
    INTERN(esizes); INTERN(plan); INTERN(base); INTERN(size); INTERN(mem); INTERN(group);
    INTERN(space); INTERN(constant); INTERN(wstamp); INTERN(g); INTERN(tokens);
    INTERN(bindings); INTERN(bind_python); INTERN(gm);
#undef INTERN
    return 0;
}

/* An exact int as a long long: 1, or 0 (not one, or too large). */
static int as_ll(PyObject *v, long long *out)
{
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    return !overflow && !(*out == -1 && PyErr_Occurred());
}

static int attr_int(PyObject *o, PyObject *name, long long *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v)
        return -1;
    int r = as_ll(v, out);
    Py_DECREF(v);
    return r;
}

/* Stamps._granules of a dense access [lo, hi) on granules of g bytes (a
 * new answer, kept in blocks_at as it keeps it): slice(lo // g, hi // g)
 * when it covers whole granules, else None. */
static PyObject *dense_granules(PyObject *blocks_at, Py_ssize_t limit, PyObject *gkey, long long lo,
                                long long hi, long long g)
{
    PyObject *answer;
    if (lo % g || hi % g) {
        answer = Py_NewRef(Py_None);
    } else {
        PyObject *a = PyLong_FromLongLong(lo / g), *b = PyLong_FromLongLong(hi / g);
        answer = a && b ? PySlice_New(a, b, NULL) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (!answer)
            return NULL;
    }
    if (PyDict_GET_SIZE(blocks_at) >= limit)
        PyDict_Clear(blocks_at); /* a program that never repeats an address */
    if (PyDict_SetItem(blocks_at, gkey, answer) < 0)
        Py_CLEAR(answer);
    return answer;
}

#define MAXV 16 /* operands an instruction has (more: Python's) */

/* bind_static(shared, instr, views, cross, blocks_at, limit, blocks_limit)
 * -> the entry (views, instr, memories, addresses, reads, writes), kept in
 * shared.bindings. `blocks_at`: stamps' granule answers (at most
 * `blocks_limit`: stamps.BLOCKS_CACHE_ENTRIES); `limit`:
 * machine.BOUND_CACHE_ENTRIES. */
PyObject *bind_static(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyDict_Check(args[4]) || !PyLong_Check(args[5]) || !PyLong_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "bind_static(shared, instr, views, cross, blocks_at, limit, blocks_limit)");
        return NULL;
    }
    PyObject *shared = args[0], *instr = args[1], *views = args[2], *blocks_at = args[4];
    int cross = PyObject_IsTrue(args[3]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]), blocks_limit = PyLong_AsSsize_t(args[6]);
    if (cross < 0 || PyErr_Occurred())
        return NULL;
    PyObject *esizes = NULL, *plan = NULL, *mems = NULL, *addrs = NULL, *reads = NULL,
             *writes = NULL, *tokens = NULL, *bindings = NULL, *entry = NULL;
    PyObject *regions[MAXV];
    long long addr_c[MAXV], base_c[MAXV], size_c[MAXV];
    Py_ssize_t nv = PyTuple_Check(views) ? PyTuple_GET_SIZE(views) : MAXV + 1;
    int fits = nv <= MAXV;
    if (!fits)
        goto fallback;
    if (!(esizes = PyObject_GetAttr(instr, s_esizes)) || !(plan = PyObject_GetAttr(instr, s_plan)))
        goto done;
    fits = PyTuple_Check(esizes) && PyTuple_GET_SIZE(esizes) >= nv && PyTuple_Check(plan);
    if (!fits)
        goto fallback;
    if (!(mems = PyList_New(nv)) || !(addrs = PyList_New(nv)))
        goto done;
    for (Py_ssize_t k = 0; k < nv; k++) {
        PyObject *v = PyTuple_GET_ITEM(views, k);
        long long off, esize;
        int r;
        if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) < 2 || !as_ll(PyTuple_GET_ITEM(v, 1), &off) ||
            !as_ll(PyTuple_GET_ITEM(esizes, k), &esize))
            goto fallback;
        regions[k] = PyTuple_GET_ITEM(v, 0);
        if ((r = attr_int(regions[k], s_base, &base_c[k])) <= 0 ||
            (r = attr_int(regions[k], s_size, &size_c[k])) <= 0) {
            if (r < 0)
                goto done;
            goto fallback;
        }
        if (__builtin_mul_overflow(off, esize, &addr_c[k]) ||
            __builtin_add_overflow(addr_c[k], base_c[k], &addr_c[k]) ||
            __builtin_add_overflow(base_c[k], size_c[k], &size_c[k])) /* size_c: the end */
            goto fallback;
        PyObject *mem = PyObject_GetAttr(regions[k], s_mem), *a = PyLong_FromLongLong(addr_c[k]);
        if (!mem || !a) {
            Py_XDECREF(mem);
            Py_XDECREF(a);
            goto done;
        }
        PyList_SET_ITEM(mems, k, mem);
        PyList_SET_ITEM(addrs, k, a);
    }
    Py_ssize_t np_ = PyTuple_GET_SIZE(plan), nr = 0, nw = 0;
    if (!(reads = PyTuple_New(np_)) || !(writes = PyTuple_New(np_)))
        goto done;
    for (Py_ssize_t j = 0; j < np_; j++) {
        PyObject *it = PyTuple_GET_ITEM(plan, j);
        long long k, lo, hi, align;
        if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 8 || !as_ll(PyTuple_GET_ITEM(it, 0), &k) ||
            k < 0 || k >= nv || !as_ll(PyTuple_GET_ITEM(it, 1), &lo) ||
            !as_ll(PyTuple_GET_ITEM(it, 2), &hi) || !as_ll(PyTuple_GET_ITEM(it, 5), &align) ||
            align <= 0 || lo < -(1LL << 60) || hi > (1LL << 60))
            goto fallback;
        PyObject *pat = PyTuple_GET_ITEM(it, 3), *key = PyTuple_GET_ITEM(it, 7);
        int write = PyObject_IsTrue(PyTuple_GET_ITEM(it, 6));
        if (write < 0)
            goto done;
        long long addr = addr_c[k];
        if (addr % align || lo + addr < base_c[k] || hi + addr > size_c[k])
            goto fallback; /* Python's error */
        PyObject *mem = PyList_GET_ITEM(mems, k), *addr_obj = PyList_GET_ITEM(addrs, k);
        PyObject *cross_gm;
        if (cross) {
            PyObject *space = PyObject_GetAttr(mem, s_space);
            cross_gm = space ? PyObject_RichCompare(space, s_gm, Py_EQ) : NULL;
            Py_XDECREF(space);
            if (!cross_gm)
                goto done;
        } else {
            cross_gm = Py_NewRef(Py_False);
        }
        PyObject *group = NULL, *wstamp = NULL, *gkey = NULL, *answer = NULL, *item = NULL;
        int bad = 0;
        if (write) {
            PyObject *c = PyObject_GetAttr(mem, s_constant);
            int is_const = c ? PyObject_IsTrue(c) : -1;
            Py_XDECREF(c);
            if (is_const) { /* an error, Python's, or -1 */
                Py_DECREF(cross_gm);
                if (is_const < 0)
                    goto done;
                goto fallback;
            }
        }
        /* plan = mem.wstamp.plan(pat, addr): Stamps._granules' answer */
        if (!(wstamp = mem_slot(mem, MEM_WSTAMP)))
            bad = 1;
        PyObject *g = bad ? NULL : PyObject_GetAttr(wstamp, s_g);
        long long g_c = 0;
        if (!bad && (!g || !(gkey = PyTuple_Pack(3, g, key, addr_obj))))
            bad = 1;
        if (!bad && !as_ll(g, &g_c))
            g_c = 0;
        Py_XDECREF(g);
        if (!bad) {
            answer = PyDict_GetItemWithError(blocks_at, gkey);
            if (answer)
                Py_INCREF(answer);
            else if (PyErr_Occurred())
                bad = 1;
            else if (PyTuple_GET_ITEM(it, 4) == Py_True && g_c > 0 && lo + addr >= 0)
                answer = dense_granules(blocks_at, blocks_limit, gkey, lo + addr, hi + addr, g_c);
            else
                answer = PyObject_CallMethodObjArgs(wstamp, s_plan, pat, addr_obj, NULL);
            bad = bad || !answer;
        }
        if (!bad && !(group = PyObject_GetAttr(regions[k], s_group)))
            bad = 1;
        if (!bad && write) {
            item = PyTuple_Pack(6, mem, group, pat, addr_obj, answer, cross_gm);
        } else if (!bad) {
            if (!tokens && !(tokens = PyObject_GetAttr(shared, s_tokens)))
                bad = 1;
            else if (!PyDict_Check(tokens)) {
                PyErr_SetString(PyExc_TypeError, "SharedBindings.tokens must be a dict");
                bad = 1;
            } else {
                if (PyDict_GET_SIZE(tokens) >= limit)
                    PyDict_Clear(tokens); /* later binds make new keys: only the cache misses */
                PyObject *tk = PyTuple_Pack(3, mem, addr_obj, key);
                PyObject *fresh = tk ? PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type) : NULL;
                PyObject *token = fresh ? PyDict_SetDefault(tokens, tk, fresh) : NULL;
                if (token)
                    item = PyTuple_Pack(7, mem, group, pat, addr_obj, token, answer, cross_gm);
                Py_XDECREF(tk);
                Py_XDECREF(fresh);
            }
        }
        Py_XDECREF(group);
        Py_XDECREF(wstamp);
        Py_XDECREF(gkey);
        Py_XDECREF(answer);
        Py_DECREF(cross_gm);
        if (bad || !item)
            goto done;
        if (write)
            PyTuple_SET_ITEM(writes, nw++, item);
        else
            PyTuple_SET_ITEM(reads, nr++, item);
    }
    if (_PyTuple_Resize(&reads, nr) < 0 || _PyTuple_Resize(&writes, nw) < 0)
        goto done;
    if (!(entry = PyTuple_Pack(6, views, instr, mems, addrs, reads, writes)))
        goto done;
    if (!(bindings = PyObject_GetAttr(shared, s_bindings)))
        goto fail;
    if (!PyDict_Check(bindings)) {
        PyErr_SetString(PyExc_TypeError, "SharedBindings.bindings must be a dict");
        goto fail;
    }
    if (PyDict_GET_SIZE(bindings) >= limit)
        PyDict_Clear(bindings);
    PyObject *id = PyLong_FromVoidPtr(views);
    int r = id ? PyDict_SetItem(bindings, id, entry) : -1;
    Py_XDECREF(id);
    if (r < 0)
        goto fail;
    goto done;
fail:
    Py_CLEAR(entry);
    goto done;
fallback:
    if (!PyErr_Occurred())
        entry = PyObject_CallMethodObjArgs(shared, s_bind_python, instr, views, args[3], NULL);
done:
    Py_XDECREF(esizes);
    Py_XDECREF(plan);
    Py_XDECREF(mems);
    Py_XDECREF(addrs);
    Py_XDECREF(reads);
    Py_XDECREF(writes);
    Py_XDECREF(tokens);
    Py_XDECREF(bindings);
    return entry;
}

/* The context of bind_run, a tuple built once per machine (machine.py). */
enum {
    B_SHARED,      /* SharedBindings */
    B_BINDINGS,    /* SharedBindings.bindings */
    B_BOUND,       /* Machine.bound (SharedBindings.runners on a timing-only launch) */
    B_STATE,       /* the Runner's state: Machine._state, or SharedBindings.active_state */
    B_CARRIED,     /* Machine._carried, or SharedBindings._carried_active */
    B_NUMERICS,    /* bool: build each operand set's compute (Instr.bound) */
    B_CROSS,       /* bool: a cross-core launch */
    B_RUNNER,      /* the Runner type */
    B_LIMIT,       /* machine.BOUND_CACHE_ENTRIES */
    B_BLOCKS,      /* stamps' granule answers */
    B_BLOCKS_LIMIT,
    B_N
};

static PyObject *s_bound_attr;

/* bind_run(ctx, instr, views) -> (views, instr, runner): `Machine.bind` with
 * the compiled generic path from an operand set's first use (what
 * `compiled_runner_from_use = None` asks for), kept in Machine.bound. */
PyObject *bind_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != B_N ||
        !PyDict_Check(PyTuple_GET_ITEM(args[0], B_BINDINGS)) ||
        !PyDict_Check(PyTuple_GET_ITEM(args[0], B_BOUND))) {
        PyErr_SetString(PyExc_TypeError, "bind_run(context, instr, views)");
        return NULL;
    }
    PyObject *ctx = args[0], *instr = args[1], *views = args[2];
#define C(i) PyTuple_GET_ITEM(ctx, i)
    PyObject *id = PyLong_FromVoidPtr(views);
    if (!id)
        return NULL;
    PyObject *st = PyDict_GetItemWithError(C(B_BINDINGS), id);
    if (st && PyTuple_Check(st) && PyTuple_GET_SIZE(st) == 6 && PyTuple_GET_ITEM(st, 0) == views &&
        PyTuple_GET_ITEM(st, 1) == instr) {
        Py_INCREF(st);
    } else if (PyErr_Occurred()) {
        st = NULL;
    } else {
        PyObject *bargs[7] = {C(B_SHARED), instr, views, C(B_CROSS), C(B_BLOCKS), C(B_LIMIT),
                              C(B_BLOCKS_LIMIT)};
        st = bind_static(NULL, bargs, 7);
    }
    if (!st || !PyTuple_Check(st) || PyTuple_GET_SIZE(st) != 6) {
        if (st)
            PyErr_SetString(PyExc_TypeError, "a binding is a 6-tuple");
        Py_XDECREF(st);
        Py_DECREF(id);
        return NULL;
    }
    PyObject *mems = PyTuple_GET_ITEM(st, 2), *addrs = PyTuple_GET_ITEM(st, 3);
    PyObject *compute = Py_None, *run = NULL, *entry = NULL;
    if (C(B_NUMERICS) == Py_True) {
        if (!s_bound_attr && !(s_bound_attr = PyUnicode_InternFromString("bound")))
            goto done;
        if (!(compute = PyObject_CallMethodObjArgs(instr, s_bound_attr, mems, addrs, NULL)))
            goto done;
    } else {
        Py_INCREF(compute);
    }
    run = runner_make(C(B_RUNNER), C(B_STATE), instr, PyTuple_GET_ITEM(st, 4),
                      PyTuple_GET_ITEM(st, 5), compute, C(B_CARRIED), mems, addrs);
    if (!run || !(entry = PyTuple_Pack(3, views, instr, run)))
        goto done;
    PyObject *bound = C(B_BOUND);
    Py_ssize_t limit = PyLong_AsSsize_t(C(B_LIMIT));
    if (limit == -1 && PyErr_Occurred()) {
        Py_CLEAR(entry);
        goto done;
    }
    if (PyDict_GET_SIZE(bound) >= limit)
        PyDict_Clear(bound);
    if (PyDict_SetItem(bound, id, entry) < 0)
        Py_CLEAR(entry);
done:
#undef C
    Py_XDECREF(compute);
    Py_XDECREF(run);
    Py_DECREF(st);
    Py_DECREF(id);
    return entry;
}
