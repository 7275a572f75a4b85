/* `Runner`: one bound operand set's generic path (`Machine.execute_generic`)
 * as a callable the compiled loop calls without a Python frame. It holds
 * what the Python path's `functools.partial` holds (the instruction, its
 * bound reads and writes, the effect) and runs, in the same order: the
 * checks (generic.c), the effect, the carried shadows of a movement that
 * read uninitialised bytes, and the count of uses after which the operand
 * set takes its `fast_path` runner. BERT-base x12 on 32 cores, timing only:
 * 302k executions, each two Python frames (`SharedBindings._run_active`,
 * `execute_generic`) and a partial before this. */
#include "engine.h"

#include <stddef.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *state;   /* Machine._state, or a list holding the active core's */
    PyObject *instr, *pipe, *reads, *writes;
    PyObject *compute; /* None (timing only), or compute(): the effect */
    PyObject *carried; /* carried(instr, mems, addrs): move the uninitialised flags */
    PyObject *mems, *addrs;
    PyObject *upgrade; /* None, or upgrade(): from the next use on, another runner */
    Py_ssize_t countdown;
} Runner;

static PyObject *s_pipe;

static PyObject *Runner_call(Runner *R, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    if (PyVectorcall_NARGS(nargsf) != 4 || kw) {
        PyErr_SetString(PyExc_TypeError, "run(stamp, n, clock, clock_list)");
        return NULL;
    }
    PyObject *state = R->state;
    if (PyList_Check(state)) {
        if (PyList_GET_SIZE(state) != 1) {
            PyErr_SetString(PyExc_TypeError, "the active state is a list of one");
            return NULL;
        }
        state = PyList_GET_ITEM(state, 0);
    }
    Py_INCREF(state);
    Py_INCREF(R); /* the upgrade replaces this runner's binding */
    PyObject *result = NULL;
    int carry = generic_run(state, R->instr, R->pipe, R->reads, R->writes, args[0], args[1],
                            args[2], args[3]);
    if (carry < 0)
        goto out;
    if (R->compute != Py_None) {
        PyObject *r = PyObject_CallNoArgs(R->compute);
        if (!r)
            goto out;
        Py_DECREF(r);
    }
    if (carry) {
        PyObject *a[3] = {R->instr, R->mems, R->addrs};
        PyObject *r = PyObject_Vectorcall(R->carried, a, 3, NULL);
        if (!r)
            goto out;
        Py_DECREF(r);
    }
    if (R->countdown > 0 && !--R->countdown) {
        PyObject *r = PyObject_CallNoArgs(R->upgrade);
        if (!r)
            goto out;
        Py_DECREF(r);
    }
    result = Py_NewRef(Py_None);
out:
    Py_DECREF(R);
    Py_DECREF(state);
    return result;
}

/* A Runner's fields, by `Runner_init` and by `runner_make` (a fresh one). */
static int runner_set(Runner *R, PyObject *state, PyObject *instr, PyObject *reads,
                      PyObject *writes, PyObject *compute, PyObject *carried, PyObject *mems,
                      PyObject *addrs, Py_ssize_t countdown, PyObject *upgrade)
{
    PyObject *pipe = PyObject_GetAttr(instr, s_pipe);
    if (!pipe)
        return -1;
    Py_XSETREF(R->pipe, pipe);
#define SET(f) Py_XSETREF(R->f, Py_NewRef(f))
    SET(state); SET(instr); SET(reads); SET(writes); SET(compute); SET(carried); SET(mems);
    SET(addrs); SET(upgrade);
#undef SET
    R->countdown = upgrade == Py_None ? 0 : countdown;
    R->vectorcall = (vectorcallfunc)Runner_call;
    return 0;
}

static int Runner_init(Runner *R, PyObject *args, PyObject *kw)
{
    PyObject *state, *instr, *reads, *writes, *compute, *carried, *mems, *addrs, *upgrade;
    Py_ssize_t countdown;
    static char *names[] = {"state", "instr", "reads", "writes", "compute", "carried", "mems",
                            "addrs", "countdown", "upgrade", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO!O!OOOOnO", names, &state, &instr,
                                     &PyTuple_Type, &reads, &PyTuple_Type, &writes, &compute,
                                     &carried, &mems, &addrs, &countdown, &upgrade))
        return -1;
    return runner_set(R, state, instr, reads, writes, compute, carried, mems, addrs, countdown,
                      upgrade);
}

static int Runner_traverse(Runner *R, visitproc visit, void *arg)
{
    Py_VISIT(R->state); Py_VISIT(R->instr); Py_VISIT(R->pipe); Py_VISIT(R->reads);
    Py_VISIT(R->writes); Py_VISIT(R->compute); Py_VISIT(R->carried); Py_VISIT(R->mems);
    Py_VISIT(R->addrs); Py_VISIT(R->upgrade);
    return 0;
}

static int Runner_clear(Runner *R)
{
    Py_CLEAR(R->state); Py_CLEAR(R->instr); Py_CLEAR(R->pipe); Py_CLEAR(R->reads);
    Py_CLEAR(R->writes); Py_CLEAR(R->compute); Py_CLEAR(R->carried); Py_CLEAR(R->mems);
    Py_CLEAR(R->addrs); Py_CLEAR(R->upgrade);
    return 0;
}

static void Runner_dealloc(Runner *R)
{
    PyObject_GC_UnTrack(R);
    Runner_clear(R);
    Py_TYPE(R)->tp_free((PyObject *)R);
}

static PyObject *Runner_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    Runner *R = (Runner *)type->tp_alloc(type, 0);
    if (R)
        R->vectorcall = (vectorcallfunc)Runner_call;
    return (PyObject *)R;
}

static PyTypeObject RunnerType;

/* Runner(state, instr, reads, writes, compute, carried, mems, addrs, 0, None)
 * without the type call: `bind_run` makes one per new operand set (2 a tile
 * of the vector bench), and the keyword parsing of `Runner_init` was ~3% of
 * the compiled loop. `type`: the B_RUNNER of bind_run's context; anything
 * but this type (a subclass, a stand-in) goes through its call. */
PyObject *runner_make(PyObject *type, PyObject *state, PyObject *instr, PyObject *reads,
                      PyObject *writes, PyObject *compute, PyObject *carried, PyObject *mems,
                      PyObject *addrs)
{
    if (type != (PyObject *)&RunnerType || !PyTuple_Check(reads) || !PyTuple_Check(writes)) {
        PyObject *zero = PyLong_FromLong(0);
        if (!zero)
            return NULL;
        PyObject *args[10] = {state, instr, reads, writes, compute, carried, mems, addrs, zero,
                              Py_None};
        PyObject *r = PyObject_Vectorcall(type, args, 10, NULL);
        Py_DECREF(zero);
        return r;
    }
    Runner *R = (Runner *)RunnerType.tp_alloc(&RunnerType, 0);
    if (!R)
        return NULL;
    if (runner_set(R, state, instr, reads, writes, compute, carried, mems, addrs, 0, Py_None)) {
        Py_DECREF(R);
        return NULL;
    }
    return (PyObject *)R;
}

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npu.simulator._cengine.Runner",
    .tp_doc = "Runner(state, instr, reads, writes, compute, carried, mems, addrs, countdown, "
              "upgrade): one operand set's generic path; run(stamp, n, clock, clock_list).",
    .tp_basicsize = sizeof(Runner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Runner, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = Runner_new,
    .tp_init = (initproc)Runner_init,
    .tp_traverse = (traverseproc)Runner_traverse,
    .tp_clear = (inquiry)Runner_clear,
    .tp_dealloc = (destructor)Runner_dealloc,
};

int runner_register(PyObject *m)
{
    if (!(s_pipe = PyUnicode_InternFromString("pipe")) || PyType_Ready(&RunnerType) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Runner", (PyObject *)&RunnerType);
}
