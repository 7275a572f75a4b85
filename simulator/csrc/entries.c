/* Loading a core's trace into the engine's arrays: each entry's pipe,
 * scalar cycles and instruction facts (read once per distinct `Instr`). */
#include "engine.h"

#include <string.h>

static PyObject *unsupported_error(void)
{
    static PyObject *err;
    if (!err) {
        PyObject *mod = PyImport_ImportModule("npu.simulator._cengine");
        if (!mod)
            return NULL;
        err = PyObject_GetAttrString(mod, "Unsupported");
        Py_DECREF(mod);
    }
    return err;
}

/* An exact Python int in int64 (bool counts: `chip`, `barrier_all`). */
static int as_i64(PyObject *o, int64_t *out, const char *what)
{
    if (!PyLong_Check(o)) {
        PyObject *err = unsupported_error();
        if (err)
            PyErr_Format(err, "%s is a %s, not an int", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
        PyObject *err = unsupported_error();
        if (err)
            PyErr_Format(err, "%s does not fit in 64 bits", what);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

static int attr_i64(PyObject *obj, const char *name, int64_t *out)
{
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (!v)
        return -1;
    int r = as_i64(v, out, name);
    Py_DECREF(v);
    return r;
}

static int read_info(Engine *E, PyObject *instr, Info *in)
{
    int64_t kind = 0, v = 0;
    memset(in, 0, sizeof *in);
    in->key = -1;
    if (attr_i64(instr, "kind", &kind) < 0)
        return -1;
    in->kind = (int)kind;
    if (kind == K_OP) {
        if (attr_i64(instr, "occupancy", &in->occupancy) < 0 ||
            attr_i64(instr, "latency", &in->latency) < 0)
            return -1;
        PyObject *g = PyObject_GetAttrString(instr, "gm_operand");
        if (!g)
            return -1;
        in->gm = g != Py_None;
        Py_DECREF(g);
    } else if (kind == K_SET || kind == K_WAIT) {
        PyObject *key = PyObject_GetAttrString(instr, "key");
        if (!key)
            return -1;
        PyObject *num = PyDict_GetItemWithError(E->keys, key);
        if (!num && !PyErr_Occurred()) {
            num = PyLong_FromSsize_t(E->n_keys++);
            if (!num || PyDict_SetItem(E->keys, key, num) < 0) {
                Py_XDECREF(num);
                Py_DECREF(key);
                return -1;
            }
            Py_DECREF(num); /* the dict holds it */
        }
        Py_DECREF(key);
        if (!num || as_i64(num, &v, "key number") < 0)
            return -1;
        in->key = (int)v;
    } else if (kind == K_BARRIER) {
        if (attr_i64(instr, "barrier_all", &v) < 0)
            return -1;
        in->barrier_all = v != 0;
        if (attr_i64(instr, "chip", &v) < 0)
            return -1;
        in->chip = v != 0;
    }
    return 0;
}

/* Pointer -> row of `info`, open addressing; lives only while loading. */
static int32_t info_row(Engine *E, PyObject **slots, int32_t *rows, size_t mask, PyObject *instr)
{
    size_t h = ((uintptr_t)instr >> 4) * 11400714819323198485ull;
    for (size_t k = h & mask;; k = (k + 1) & mask) {
        if (slots[k] == instr)
            return rows[k];
        if (!slots[k]) {
            if (read_info(E, instr, &E->info[E->n_info]) < 0)
                return -1;
            slots[k] = instr;
            rows[k] = (int32_t)E->n_info;
            return (int32_t)E->n_info++;
        }
    }
}

int32_t pool_push(Engine *E, const int64_t *c)
{
    if (E->pool_len == E->pool_cap) {
        Py_ssize_t cap = E->pool_cap ? 2 * E->pool_cap : 64;
        Clock *grown = PyMem_Realloc(E->pool, (size_t)cap * sizeof(Clock));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        E->pool = grown;
        E->pool_cap = cap;
    }
    memcpy(E->pool[E->pool_len], c, sizeof(Clock));
    return (int32_t)E->pool_len++;
}

#define ALLOC(ptr, count) \
    ((ptr) = PyMem_Calloc((size_t)(count) + 1, sizeof *(ptr)), (ptr) != NULL)

/* The instructions from the launch's table (`info`, see engine.h): no attribute
 * is read per core. Rows of ENGINE_INFO: kind, occupancy, latency, gm, key,
 * barrier_all, chip. */
#define INFO_COLS 7
static int load_table(Engine *E, PyObject *info, const int32_t **rows_of)
{
    PyObject *rows, *table;
    Py_ssize_t n_keys;
    if (!PyArg_ParseTuple(info, "O!O!n", &PyBytes_Type, &rows, &PyBytes_Type, &table, &n_keys))
        return -1;
    Py_ssize_t n_info = PyBytes_GET_SIZE(table) / (INFO_COLS * (Py_ssize_t)sizeof(int64_t));
    if (PyBytes_GET_SIZE(rows) != E->n * (Py_ssize_t)sizeof(int32_t) || n_info > E->n ||
        PyBytes_GET_SIZE(table) != n_info * INFO_COLS * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "info: one int32 row per entry, 7 int64 per row, at most a row per entry");
        return -1;
    }
    const int64_t *t = (const int64_t *)PyBytes_AS_STRING(table);
    for (Py_ssize_t r = 0; r < n_info; r++, t += INFO_COLS) {
        Info *in = &E->info[r];
        in->kind = (int)t[0];
        in->occupancy = t[1];
        in->latency = t[2];
        in->gm = t[3] != 0;
        in->key = (int)t[4];
        in->barrier_all = t[5] != 0;
        in->chip = t[6] != 0;
        if ((in->kind == K_SET || in->kind == K_WAIT) && (in->key < 0 || in->key >= n_keys)) {
            PyErr_SetString(PyExc_ValueError, "info: a flag key out of range");
            return -1;
        }
    }
    const int32_t *of = (const int32_t *)PyBytes_AS_STRING(rows);
    for (Py_ssize_t i = 0; i < E->n; i++)
        if (of[i] < 0 || of[i] >= n_info) {
            PyErr_SetString(PyExc_ValueError, "info: an entry's row out of range");
            return -1;
        }
    E->n_info = n_info;
    E->n_keys = n_keys;
    *rows_of = of;
    return 0;
}

int engine_load(Engine *E, PyObject *entry_pipes, PyObject *info)
{
    Py_ssize_t n = PyList_GET_SIZE(E->trace);
    const char *pipes = PyBytes_AsString(entry_pipes);
    if (!pipes)
        return -1;
    if (PyBytes_GET_SIZE(entry_pipes) != n) {
        PyErr_SetString(PyExc_ValueError, "one pipe per trace entry");
        return -1;
    }
    E->n = n;
    size_t cap = 16;
    while (cap < 2 * (size_t)n + 16)
        cap <<= 1;
    int hashed = info == Py_None; /* else the table gives each entry's row */
    PyObject **slots = hashed ? PyMem_Calloc(cap, sizeof *slots) : NULL;
    int32_t *rows = hashed ? PyMem_Calloc(cap, sizeof *rows) : NULL;
    Py_ssize_t per_pipe[NPIPES] = {0}, n_sets = 0;
    int ok = (!hashed || (slots && rows)) && ALLOC(E->info_of, n) && ALLOC(E->pipe, n) && ALLOC(E->cost, n) &&
             ALLOC(E->start, n) && ALLOC(E->end, n) && ALLOC(E->dispatch, n) &&
             ALLOC(E->snap, n) && ALLOC(E->next_s, n) && ALLOC(E->info, n);
    if (!ok) {
        PyErr_NoMemory();
        goto fail;
    }
    const int32_t *rows_of = NULL;
    if (!hashed && load_table(E, info, &rows_of) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = PyList_GET_ITEM(E->trace, i);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "a trace entry is (instr, views, cycles)");
            goto fail;
        }
        int32_t row = rows_of ? rows_of[i]
                              : info_row(E, slots, rows, cap - 1, PyTuple_GET_ITEM(entry, 0));
        if (row < 0 || as_i64(PyTuple_GET_ITEM(entry, 2), &E->cost[i], "scalar cycles") < 0)
            goto fail;
        E->info_of[i] = row;
        E->pipe[i] = (int8_t)pipes[i];
        E->cost_sum += E->cost[i];
        if (pipes[i] > 0 && pipes[i] < NPIPES)
            per_pipe[(int)pipes[i]]++;
        n_sets += E->info[row].kind == K_SET;
    }
    Info *fit = PyMem_Realloc(E->info, (size_t)(E->n_info + 1) * sizeof(Info));
    if (fit)
        E->info = fit;
    E->next_s[n] = (int32_t)n;
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        E->next_s[i] = E->pipe[i] == PIPE_S ? (int32_t)i : E->next_s[i + 1];
    for (int p = 1; p < NPIPES; p++)
        if (!ALLOC(E->queue[p], per_pipe[p])) {
            PyErr_NoMemory();
            goto fail;
        }
    if (!ALLOC(E->key_head, E->n_keys) || !ALLOC(E->key_tail, E->n_keys) ||
        !ALLOC(E->key_order, E->n_keys) || !ALLOC(E->key_raised, E->n_keys) ||
        !ALLOC(E->ev_t, n_sets) || !ALLOC(E->ev_clock, n_sets) || !ALLOC(E->ev_entry, n_sets) ||
        !ALLOC(E->ev_next, n_sets) || !ALLOC(E->flow_set, n) || !ALLOC(E->flow_wait, n)) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < E->n_keys; k++)
        E->key_head[k] = E->key_tail[k] = -1;
    E->ev_cap = n_sets;
    for (int p = 0; p < NPIPES; p++)
        E->last_snap[p] = -1;
    Clock zero = {0};
    E->s_clock = pool_push(E, zero);
    PyMem_Free(slots);
    PyMem_Free(rows);
    if (E->s_clock < 0)
        return -1;
    E->loaded = 1;
    return 0;
fail:
    PyMem_Free(slots);
    PyMem_Free(rows);
    return -1;
}

void engine_free(Engine *E)
{
    void *arrays[] = {E->info_of, E->pipe, E->cost, E->start, E->end, E->dispatch, E->snap,
                      E->next_s, E->info, E->pool, E->key_head, E->key_tail, E->key_order,
                      E->key_raised, E->ev_t, E->ev_clock, E->ev_entry, E->ev_next,
                      E->flow_set, E->flow_wait};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        PyMem_Free(arrays[k]);
    for (int p = 0; p < NPIPES; p++)
        PyMem_Free(E->queue[p]);
}
