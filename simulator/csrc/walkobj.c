/* `_cengine.Walker`: the compiled scalar walk's object (its code, slots and
 * the dispatches' caches) and the caches' hash table. walk.h says what it
 * computes; simulator/walk_code.py makes its code. */
#include "walk.h"

PyObject *walk_limit_error;

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t key_hash(const int64_t *key, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int k = 0; k < n; k++)
        h = mix(h ^ (uint64_t)key[k]);
    return h;
}

/* The slot of `key` (found) or the empty slot where it goes. */
PyObject **table_find(Table *T, const int64_t *key, int *found)
{
    if (!T->cap && table_grow(T) < 0)
        return NULL;
    size_t mask = (size_t)T->cap - 1, i = (size_t)key_hash(key, T->n) & mask;
    for (;; i = (i + 1) & mask) {
        if (!T->vals[i]) {
            *found = 0;
            return &T->vals[i];
        }
        if (!memcmp(T->keys + i * T->n, key, sizeof(int64_t) * T->n)) {
            *found = 1;
            return &T->vals[i];
        }
    }
}

int table_grow(Table *T)
{
    Py_ssize_t cap = T->cap ? T->cap * 2 : 16;
    int64_t *keys = PyMem_Calloc((size_t)cap * T->n, sizeof(int64_t));
    PyObject **vals = PyMem_Calloc((size_t)cap, sizeof(PyObject *));
    if (!keys || !vals) {
        PyMem_Free(keys);
        PyMem_Free(vals);
        PyErr_NoMemory();
        return -1;
    }
    Table grown = {T->n, cap, 0, keys, vals};
    for (Py_ssize_t i = 0; i < T->cap; i++) {
        if (!T->vals[i])
            continue;
        int found;
        PyObject **slot = table_find(&grown, T->keys + i * T->n, &found);
        memcpy(grown.keys + (slot - grown.vals) * T->n, T->keys + i * T->n,
               sizeof(int64_t) * T->n);
        *slot = T->vals[i];
        grown.count++;
    }
    PyMem_Free(T->keys);
    PyMem_Free(T->vals);
    *T = grown;
    return 0;
}

static void Walker_dealloc(Walker *W)
{
    for (Py_ssize_t t = 0; t < W->ntables; t++) {
        Table *T = &W->tables[t];
        for (Py_ssize_t i = 0; i < T->cap; i++)
            Py_XDECREF(T->vals[i]);
        PyMem_Free(T->keys);
        PyMem_Free(T->vals);
    }
    PyMem_Free(W->tables);
    PyMem_Free(W->code);
    PyMem_Free(W->env);
    Py_XDECREF(W->resolvers);
    Py_XDECREF(W->objects);
    Py_XDECREF(W->empty);
    Py_TYPE(W)->tp_free((PyObject *)W);
}

/* int64 words of a bytes object (array('q').tobytes()) into a new buffer. */
static int64_t *words(PyObject *bytes, Py_ssize_t *n)
{
    *n = PyBytes_GET_SIZE(bytes) / (Py_ssize_t)sizeof(int64_t);
    int64_t *out = PyMem_Malloc(sizeof(int64_t) * (size_t)(*n ? *n : 1));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, PyBytes_AS_STRING(bytes), sizeof(int64_t) * (size_t)*n);
    return out;
}

static int Walker_init(Walker *W, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"code", "env", "tags", "block_slot", "resolvers", "keys",
                            "objects", NULL};
    PyObject *code, *env, *tags, *resolvers, *keys, *objects;
    Py_ssize_t block_slot;
    if (W->code) {
        PyErr_SetString(PyExc_RuntimeError, "a Walker is made once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!nO!O!O!", names, &PyBytes_Type, &code,
                                     &PyBytes_Type, &env, &PyBytes_Type, &tags, &block_slot,
                                     &PyTuple_Type, &resolvers, &PyBytes_Type, &keys,
                                     &PyTuple_Type, &objects))
        return -1;
    Py_ssize_t nslots, ntables;
    if (!(W->code = words(code, &W->ncode)))
        return -1;
    int64_t *env0 = words(env, &nslots);
    int64_t *nkeys = env0 ? words(keys, &ntables) : NULL;
    if (!nkeys) {
        PyMem_Free(env0);
        return -1;
    }
    if (PyBytes_GET_SIZE(tags) != nslots || ntables != PyTuple_GET_SIZE(resolvers) ||
        block_slot >= nslots) {
        PyMem_Free(env0);
        PyMem_Free(nkeys);
        PyErr_SetString(PyExc_ValueError, "Walker: env, tags, resolvers and keys disagree");
        return -1;
    }
    /* one allocation: env, env0, tag, tag0 */
    W->env = PyMem_Malloc((sizeof(int64_t) * 2 + 2) * (size_t)(nslots ? nslots : 1));
    W->tables = PyMem_Calloc((size_t)(ntables ? ntables : 1), sizeof(Table));
    if (!W->env || !W->tables) {
        PyMem_Free(env0);
        PyMem_Free(nkeys);
        PyErr_NoMemory();
        return -1;
    }
    W->env0 = W->env + nslots;
    W->tag = (uint8_t *)(W->env0 + nslots);
    W->tag0 = W->tag + nslots;
    memcpy(W->env0, env0, sizeof(int64_t) * (size_t)nslots);
    memcpy(W->tag0, PyBytes_AS_STRING(tags), (size_t)nslots);
    for (Py_ssize_t t = 0; t < ntables; t++)
        W->tables[t].n = (int)nkeys[t] + 1; /* the sources and the unset registers */
    PyMem_Free(env0);
    PyMem_Free(nkeys);
    W->nslots = nslots;
    W->ntables = ntables;
    W->block_slot = block_slot;
    W->resolvers = Py_NewRef(resolvers);
    W->objects = Py_NewRef(objects);
    W->empty = PyTuple_New(0);
    return W->empty ? 0 : -1;
}

static PyObject *Walker_walk(Walker *W, PyObject *args)
{
    PyObject *trace;
    long long block;
    Py_ssize_t limit = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "LO!|n", &block, &PyList_Type, &trace, &limit))
        return NULL;
    if (!W->code) {
        PyErr_SetString(PyExc_RuntimeError, "the Walker was not made");
        return NULL;
    }
    memcpy(W->env, W->env0, sizeof(int64_t) * (size_t)W->nslots);
    memcpy(W->tag, W->tag0, (size_t)W->nslots);
    if (W->block_slot >= 0)
        W->env[W->block_slot] = block, W->tag[W->block_slot] = 0;
    W->pending = 0;
    W->limit = limit;
    memset(W->reg, 0, sizeof W->reg);
    memset(W->reg_tag, 0, sizeof W->reg_tag);
    W->reg_set[0] = W->reg_set[1] = 0; /* mask and feature map: unset */
    W->reg_set[2] = 1;                 /* padding: 0 */
    W->trace = trace;
    int status = walk_run(W, W->code, W->code + W->ncode);
    W->trace = NULL;
    if (status == WALK_ERROR)
        return NULL;
    if (status == WALK_BAIL)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(W->pending);
}

/* The slots' values after the last walk, as Python's env would hold them
 * (ints, bools); what the tests compare with the closures' env. */
static PyObject *Walker_values(Walker *W, PyObject *unused)
{
    PyObject *list = PyList_New(W->nslots);
    for (Py_ssize_t s = 0; list && s < W->nslots; s++) {
        PyObject *v = W->tag[s] ? PyBool_FromLong(W->env[s] != 0) : PyLong_FromLongLong(W->env[s]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, s, v);
    }
    return list;
}

static PyMethodDef Walker_methods[] = {
    {"values", (PyCFunction)Walker_values, METH_NOARGS,
     "values() -> every slot's value after the last walk (a slot that holds no int: 0)"},
    {"walk", (PyCFunction)Walker_walk, METH_VARARGS,
     "walk(block_idx, trace, limit=no limit) -> the trailing scalar cycles, having appended the "
     "core's entries to trace; None: this core's walk is Python's (trace holds a prefix to "
     "drop); WalkLimit: an entry would make trace longer than limit"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npu.simulator._cengine.Walker",
    .tp_doc = "One program's scalar walk (program.Program.walk), compiled (walk_code.py).",
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Walker_init,
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_methods = Walker_methods,
};

int walk_register(PyObject *module)
{
    if (PyType_Ready(&WalkerType) < 0)
        return -1;
    walk_limit_error = PyErr_NewException("npu.simulator._cengine.WalkLimit", NULL, NULL);
    if (!walk_limit_error || PyModule_AddObjectRef(module, "WalkLimit", walk_limit_error) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Walker", (PyObject *)&WalkerType);
}
