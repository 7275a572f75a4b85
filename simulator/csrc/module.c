/* `npu.simulator._cengine`: the Engine type (what simulator/compiled.py
 * drives) and the module. */
#include "stamps.h"
#include "walk.h"

static int Engine_init(Engine *E, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"trace", "entry_pipes", "bound", "bind", "counts", "gm",
                            "flag_latency", "pipelined", "info", NULL};
    PyObject *trace, *pipes, *bound, *bind, *counts, *gm, *pipelined, *info = Py_None;
    long long flag_latency;
    if (E->loaded || E->trace) {
        PyErr_SetString(PyExc_RuntimeError, "an Engine runs one trace once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!OO!OLO|O", names, &PyList_Type, &trace,
                                     &PyBytes_Type, &pipes, &PyDict_Type, &bound, &bind,
                                     &PyList_Type, &counts, &gm, &flag_latency, &pipelined,
                                     &info))
        return -1;
    if (PyList_GET_SIZE(counts) < NPIPES) {
        PyErr_SetString(PyExc_ValueError, "counts needs one item per pipe");
        return -1;
    }
    E->trace = Py_NewRef(trace);
    E->bound = Py_NewRef(bound);
    E->bind = Py_NewRef(bind);
    E->counts = Py_NewRef(counts);
    E->gm = Py_NewRef(gm);
    E->flag_latency = flag_latency;
    if (!(E->keys = PyDict_New()))
        return -1;
    for (int p = 0; p < NPIPES; p++) {
        PyObject *num = PyLong_FromLong(p);
        if (!num)
            return -1;
        int r = PySequence_Contains(pipelined, num);
        Py_DECREF(num);
        if (r < 0)
            return -1;
        E->pipelined[p] = (char)r;
        if (!(E->clock_py[p] = PyList_New(NCOMP)))
            return -1;
        for (int k = 0; k < NCOMP; k++)
            PyList_SET_ITEM(E->clock_py[p], k, PyLong_FromLong(0));
    }
    return engine_load(E, pipes, info);
}

static PyObject *Engine_step(Engine *E, PyObject *args)
{
    long long release = 0;
    if (!PyArg_ParseTuple(args, "|L", &release))
        return NULL;
    if (!E->loaded) {
        PyErr_SetString(PyExc_RuntimeError, "the engine did not load its trace");
        return NULL;
    }
    int64_t t = 0;
    int status = engine_step(E, release, &t);
    if (status < 0)
        return NULL;
    if (status == 1)
        return Py_BuildValue("(iL)", status, (long long)t);
    return Py_BuildValue("(in)", status, E->s_pos);
}

static PyObject *int_list(const int64_t *values, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

/* (start, end, dispatch, s_time, done, busy, flows, unconsumed, sum of scalar cycles) */
static PyObject *int_bytes(const int64_t *values, Py_ssize_t n)
{
    return PyBytes_FromStringAndSize((const char *)values, n * (Py_ssize_t)sizeof(int64_t));
}

/* `arrays`: start, end and dispatch as int64 bytes, not lists (the reports read
 * them as numpy arrays; 3 x 19k ints a core of a 32-core BERT). */
static PyObject *Engine_results(Engine *E, PyObject *args)
{
    int arrays = 0;
    if (!PyArg_ParseTuple(args, "|p", &arrays))
        return NULL;
    PyObject *(*seq)(const int64_t *, Py_ssize_t) = arrays ? int_bytes : int_list;
    PyObject *flows = PyList_New(E->n_flows), *unconsumed = PyList_New(0);
    if (!flows || !unconsumed)
        goto fail;
    for (Py_ssize_t k = 0; k < E->n_flows; k++) {
        PyObject *pair = Py_BuildValue("(ii)", E->flow_set[k], E->flow_wait[k]);
        if (!pair)
            goto fail;
        PyList_SET_ITEM(flows, k, pair);
    }
    for (Py_ssize_t k = 0; k < E->n_order; k++)
        for (int32_t ev = E->key_head[E->key_order[k]]; ev >= 0; ev = E->ev_next[ev]) {
            PyObject *v = PyLong_FromLong(E->ev_entry[ev]);
            if (!v || PyList_Append(unconsumed, v) < 0) {
                Py_XDECREF(v);
                goto fail;
            }
            Py_DECREF(v);
        }
    return Py_BuildValue("(NNNLNNNNL)", seq(E->start, E->n), seq(E->end, E->n),
                         seq(E->dispatch, E->n), (long long)E->s_time,
                         int_list(E->done, NPIPES), int_list(E->busy, NPIPES), flows, unconsumed,
                         (long long)E->cost_sum);
fail:
    Py_XDECREF(flows);
    Py_XDECREF(unconsumed);
    return NULL;
}

/* The head entry of every pipe with work left: [(pipe, entry)] (a deadlock's report). */
static PyObject *Engine_heads(Engine *E, PyObject *unused)
{
    PyObject *list = PyList_New(0);
    for (int p = 1; list && p < NPIPES; p++) {
        if (E->qhead[p] == E->qtail[p])
            continue;
        PyObject *pair = Py_BuildValue("(ii)", p, E->queue[p][E->qhead[p]]);
        if (!pair || PyList_Append(list, pair) < 0)
            Py_CLEAR(list);
        Py_XDECREF(pair);
    }
    return list;
}

static void Engine_dealloc(Engine *E)
{
    engine_free(E);
    Py_XDECREF(E->trace);
    Py_XDECREF(E->bound);
    Py_XDECREF(E->bind);
    Py_XDECREF(E->counts);
    Py_XDECREF(E->gm);
    Py_XDECREF(E->keys);
    for (int p = 0; p < NPIPES; p++)
        Py_XDECREF(E->clock_py[p]);
    Py_TYPE(E)->tp_free((PyObject *)E);
}

static PyMethodDef Engine_methods[] = {
    {"step", (PyCFunction)Engine_step, METH_VARARGS,
     "step([release]) -> (0, s_pos) at the end, (1, arrival) at a chip barrier (the next "
     "step's argument is its release), (2, s_pos) on a deadlock"},
    {"results", (PyCFunction)Engine_results, METH_VARARGS,
     "results([arrays]) -> (start, end, dispatch, s_time, done, busy, flows, unconsumed, sum of "
     "scalar cycles); start, end and dispatch as int64 bytes when `arrays`"},
    {"heads", (PyCFunction)Engine_heads, METH_NOARGS, "[(pipe, its head entry)]"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npu.simulator._cengine.Engine",
    .tp_doc = "One core's scheduling loop (pipes._run_parallel), compiled.",
    .tp_basicsize = sizeof(Engine),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
};

static PyObject *forget_buffers(PyObject *self, PyObject *unused)
{
    buffers_forget();
    Py_RETURN_NONE;
}

static PyObject *cross_access_py(PyObject *self, PyObject *args)
{
    PyObject *checker, *mem, *pat, *addr;
    int write, core;
    if (!PyArg_ParseTuple(args, "OOOOpi", &checker, &mem, &pat, &addr, &write, &core))
        return NULL;
    int done = cross_access(checker, mem, pat, addr, write, core);
    return done < 0 ? NULL : PyBool_FromLong(done);
}

static PyObject *set_part_py(PyObject *self, PyObject *args)
{
    PyObject *stamps, *pat, *addr;
    int value;
    if (!PyArg_ParseTuple(args, "OOOi", &stamps, &pat, &addr, &value))
        return NULL;
    int r = set_part(stamps, pat, addr, value);
    return r < 0 ? NULL : PyBool_FromLong(r == 0);
}

static PyMethodDef module_functions[] = {
    {"hand_over", hand_over, METH_VARARGS,
     "hand_over(written, read, top, fill) -> done: launch.hand_over's stamp updates in C "
     "(partial.c; False: Python's must run)"},
    {"set_part", set_part_py, METH_VARARGS,
     "set_part(stamps, pat, addr, value) -> done: Stamps.set_part in C (partial.c; False: "
     "Python's must run); the compiled generic path's"},
    {"cross_access", cross_access_py, METH_VARARGS,
     "cross_access(checker, mem, pat, addr, write, core) -> done: CrossCoreChecker.access up to "
     "its numpy path (False: the method must run); the compiled generic path's (generic.c)"},
    {"forget_buffers", forget_buffers, METH_NOARGS,
     "forget_buffers(): drop the arrays whose buffers the generic path remembers (stamps.c)"},
    {"cross_runs", cross_runs, METH_VARARGS,
     "cross_runs(writer, readers, start, n, run, stride, core, write) -> None (does not fit), "
     "True (a conflict: nothing changed) or False (no conflict: recorded)"},
    {"l2_touch", l2_touch, METH_VARARGS,
     "l2_touch(last, first, a, b, n, step, per, rel, t0, window) -> (hits, lines) or None "
     "(memory_system.MemorySystem._touch)"},
    {"bus_take", bus_take, METH_VARARGS,
     "bus_take(room, t, left, rate, share, bin) -> (t, left, bins needed) or None "
     "(memory_system.MemorySystem.transfer's loop)"},
    {"bind_static", (PyCFunction)(void (*)(void))bind_static, METH_FASTCALL,
     "bind_static(shared, instr, views, cross, blocks_at, limit) -> entry: "
     "machine.SharedBindings.bind (its bind_python for what it does not take)"},
    {"bind_run", (PyCFunction)(void (*)(void))bind_run, METH_FASTCALL,
     "bind_run(context, instr, views) -> (views, instr, runner): machine.Machine.bind with the "
     "compiled generic path from the first use (its context: bind.c)"},
    {"gm_transfer", (PyCFunction)(void (*)(void))gm_transfer, METH_FASTCALL,
     "gm_transfer(memsys, bin, t0, instr, views) -> cycles: one GM transfer's "
     "(compiled.gm_timer; MemorySystem.transfer, which it calls for what it does not take)"},
    {"number_entries", (PyCFunction)(void (*)(void))number_entries, METH_FASTCALL,
     "number_entries(trace, ids, out): each entry's instruction number into `out` (int64), a "
     "new instruction numbered len(ids) as it is met (trace_codes.InstrTable.numbers_of)"},
    {"generic", (PyCFunction)(void (*)(void))generic, METH_FASTCALL,
     "generic(state, instr, pipe, reads, writes, stamp, n, clock, clock_list) -> carry: "
     "Machine.execute_generic's checks (machine.py)"},
    {"f16_to_f64", (PyCFunction)(void (*)(void))f16_to_f64, METH_FASTCALL,
     "f16_to_f64(dst, src): dst (contiguous float64) = the fp16 patterns of src (uint16, any "
     "strides, 1-4 dims) in C order, as numpy's cast (cube_unit.Mad.product)"},
    {"round_into_f32", (PyCFunction)(void (*)(void))round_into_f32, METH_FASTCALL,
     "round_into_f32(c, wide, accumulate): c = fp32(wide), or fp32(c + fp32(wide)) "
     "(cube_unit.Mad.product)"},
    {"vec_op", (PyCFunction)(void (*)(void))vec_op, METH_FASTCALL,
     "vec_op(op, dst, src0, src1, scalar) -> a VecOp on float16 views (call it: dst = src0 op "
     "src1, or src1 None: op scalar, its bit pattern) or None (not taken: the ufunc runs; "
     "vecops.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cengine_module = {
    PyModuleDef_HEAD_INIT, "_cengine",
    "The simulator's compiled scheduling loop and cross-core GM check (simulator/compiled.py).",
    -1, module_functions,
};

PyMODINIT_FUNC PyInit__cengine(void)
{
    if (PyType_Ready(&EngineType) < 0 || generic_init() < 0 || cross_init() < 0 || gmxfer_init() < 0 || bind_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&cengine_module);
    if (!m)
        return NULL;
    PyObject *unsupported = PyErr_NewException("npu.simulator._cengine.Unsupported",
                                               PyExc_TypeError, NULL);
    PyObject *kinds = Py_BuildValue("(iiii)", K_OP, K_SET, K_WAIT, K_BARRIER);
    if (!kinds || PyModule_AddObject(m, "KINDS", kinds) < 0) {
        Py_XDECREF(kinds);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Engine", (PyObject *)&EngineType) < 0 || walk_register(m) < 0 ||
        runner_register(m) < 0 || vecops_register(m) < 0 ||
        PyModule_AddObject(m, "Unsupported", unsupported) < 0) {
        Py_XDECREF(unsupported);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
