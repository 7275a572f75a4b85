/* The compiled scalar walk's interpreter (walk.h says what it computes and
 * when it gives a core back to Python). */
#include "walk.h"

#define ADD(a, b, r) __builtin_add_overflow((a), (b), (r))
#define MUL(a, b, r) __builtin_mul_overflow((a), (b), (r))

/* Python's a // b on int64; 1 where Python raises or the result overflows. */
static int floordiv(int64_t a, int64_t b, int64_t *q)
{
    if (b == 0 || (a == INT64_MIN && b == -1))
        return 1;
    int64_t t = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        t--;
    *q = t;
    return 0;
}

/* scalar_unit.INT_BINARY[kind](a, b) with Python's result type: a bool only
 * from &, |, ^ of two bools and from max/min choosing a bool. */
static int binary(int64_t kind, int64_t a, uint8_t ta, int64_t b, uint8_t tb, int64_t *r,
                  uint8_t *t)
{
    *t = 0;
    switch (kind) {
    case B_ADD: return ADD(a, b, r);
    case B_SUB: return __builtin_sub_overflow(a, b, r);
    case B_MUL: return MUL(a, b, r);
    case B_DIVS: /* scalar_unit._div_trunc */
    case B_REMS: /* a - b * trunc(a / b) */
        if (b == 0 || (a == INT64_MIN && b == -1))
            return 1;
        *r = kind == B_DIVS ? a / b : a % b;
        return 0;
    case B_DIVU:
    case B_FLOORDIV: return floordiv(a, b, r);
    case B_REMU: { /* a % b, the sign of b's */
        if (b == 0 || (a == INT64_MIN && b == -1))
            return 1;
        int64_t m = a % b;
        if (m != 0 && ((m < 0) != (b < 0)))
            m += b;
        *r = m;
        return 0;
    }
    case B_CEILDIVS:
    case B_CEILDIVU: { /* -((-a) // b) */
        int64_t q;
        if (a == INT64_MIN || floordiv(-a, b, &q) || q == INT64_MIN)
            return 1;
        *r = -q;
        return 0;
    }
    case B_MAXS:
    case B_MAXU: /* max(a, b): b only when greater */
        if (b > a) {
            *r = b, *t = tb;
        } else {
            *r = a, *t = ta;
        }
        return 0;
    case B_MINS:
    case B_MINU:
        if (b < a) {
            *r = b, *t = tb;
        } else {
            *r = a, *t = ta;
        }
        return 0;
    case B_AND: *r = a & b, *t = ta & tb; return 0;
    case B_OR: *r = a | b, *t = ta & tb; return 0;
    case B_XOR: *r = a ^ b, *t = ta & tb; return 0;
    case B_SHL:
        if (b < 0)
            return 1;
        if (a == 0) {
            *r = 0;
            return 0;
        }
        if (b >= 63 || ((int64_t)((uint64_t)a << b) >> b) != a)
            return 1;
        *r = (int64_t)((uint64_t)a << b);
        return 0;
    case B_SHRS:
    case B_SHRU:
        if (b < 0)
            return 1;
        *r = b >= 63 ? (a < 0 ? -1 : 0) : a >> b;
        return 0;
    }
    return 1;
}

static int cmpi(int64_t pred, int64_t a, int64_t b)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (pred) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a >= b;
    case 6: return ua < ub;
    case 7: return ua <= ub;
    case 8: return ua > ub;
    default: return ua >= ub;
    }
}

/* hivm.mask_lanes: the number of leading lanes of hi:lo, -1 when its set
 * bits are not a leading run. */
static int64_t mask_lanes(uint64_t hi, uint64_t lo)
{
    if (hi == 0)
        return (lo & (lo + 1)) ? -1 : (lo ? 64 - __builtin_clzll(lo) : 0);
    if (lo != UINT64_MAX || (hi & (hi + 1)))
        return -1;
    return 128 - __builtin_clzll(hi);
}

static PyObject *value(int64_t v, uint8_t tag)
{
    return tag ? PyBool_FromLong(v != 0) : PyLong_FromLongLong(v);
}

/* Append (instr, views, pending + pre) to the trace; pending starts again. */
static int append(Walker *W, PyObject *instr, PyObject *views, int64_t pre)
{
    int64_t cycles;
    if (PyList_GET_SIZE(W->trace) >= W->limit) {
        PyErr_Format(walk_limit_error, "the trace would pass %zd entries", W->limit);
        return WALK_ERROR;
    }
    if (ADD(W->pending, pre, &cycles))
        return WALK_BAIL;
    PyObject *c = PyLong_FromLongLong(cycles);
    if (!c)
        return WALK_ERROR;
    PyObject *entry = PyTuple_New(3);
    if (!entry) {
        Py_DECREF(c);
        return WALK_ERROR;
    }
    PyTuple_SET_ITEM(entry, 0, Py_NewRef(instr));
    PyTuple_SET_ITEM(entry, 1, Py_NewRef(views));
    PyTuple_SET_ITEM(entry, 2, c);
    int err = PyList_Append(W->trace, entry);
    Py_DECREF(entry);
    W->pending = 0;
    return err ? WALK_ERROR : WALK_OK;
}

/* A dispatch: its key from the slots and registers, (instr, views) from
 * its cache or, the first time, from its resolver (hivm_decode). */
static int dispatch(Walker *W, const int64_t *pc)
{
    int64_t table = pc[1], pre = pc[2], n = pc[3];
    const int64_t *src = pc + 4;
    int64_t key[24];
    uint8_t tags[24];
    int64_t unset = 0;
    if (n > 23)
        return WALK_BAIL;
    for (int64_t k = 0; k < n; k++) {
        int64_t s = src[k];
        tags[k] = 0;
        if (s >= 0) {
            key[k] = W->env[s];
            tags[k] = W->tag[s];
        } else if (s == R_NONE || !W->reg_set[-s - 1]) {
            key[k] = 0;
            unset |= (int64_t)1 << k;
        } else {
            key[k] = W->reg[-s - 1];
            tags[k] = W->reg_tag[-s - 1];
        }
    }
    key[n] = unset;
    Table *T = &W->tables[table];
    int found;
    PyObject **slot = table_find(T, key, &found);
    if (!slot)
        return WALK_ERROR;
    if (!found) {
        PyObject *args = PyTuple_New(n);
        if (!args)
            return WALK_ERROR;
        for (int64_t k = 0; k < n; k++) {
            PyObject *v = (unset >> k) & 1 ? Py_NewRef(Py_None) : value(key[k], tags[k]);
            if (!v) {
                Py_DECREF(args);
                return WALK_ERROR;
            }
            PyTuple_SET_ITEM(args, k, v);
        }
        PyObject *got = PyObject_Call(PyTuple_GET_ITEM(W->resolvers, table), args, NULL);
        Py_DECREF(args);
        if (!got)
            return WALK_ERROR;
        if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
            Py_DECREF(got);
            PyErr_SetString(PyExc_TypeError, "a resolver returns (instr, views)");
            return WALK_ERROR;
        }
        memcpy(T->keys + (slot - T->vals) * T->n, key, sizeof(int64_t) * T->n);
        *slot = got;
        T->count++;
        if (T->count * 2 > T->cap && table_grow(T) < 0)
            return WALK_ERROR;
        return append(W, PyTuple_GET_ITEM(got, 0), PyTuple_GET_ITEM(got, 1), pre);
    }
    return append(W, PyTuple_GET_ITEM(*slot, 0), PyTuple_GET_ITEM(*slot, 1), pre);
}

static int run_for(Walker *W, const int64_t *pc, const int64_t **next)
{
    int64_t *env = W->env;
    uint8_t *tag = W->tag;
    int64_t lb = pc[1], ub = pc[2], step = pc[3], iv = pc[4], cost = pc[5], n = pc[6];
    const int64_t *inits = pc + 7, *bargs = inits + n, *results = bargs + n;
    int64_t ny = results[n];
    const int64_t *yields = results + n + 1;
    int64_t len = yields[ny];
    const int64_t *body = yields + ny + 1;
    *next = body + len;
    int64_t i = env[lb], end = env[ub], st = env[step];
    uint8_t itag = tag[lb];
    if (st <= 0)
        return WALK_BAIL; /* Python raises the located error */
    int64_t vals[MAX_CARRIED];
    uint8_t vtags[MAX_CARRIED];
    for (int64_t k = 0; k < n; k++)
        vals[k] = env[inits[k]], vtags[k] = tag[inits[k]];
    while (i < end) {
        /* A long loop runs here without returning to Python: its signal
         * handlers (Ctrl-C, a CPU-time or test timer) would wait for it. */
        if (!(++W->ticks & 0xffff) && PyErr_CheckSignals() < 0)
            return WALK_ERROR;
        env[iv] = i, tag[iv] = itag;
        for (int64_t k = 0; k < n; k++)
            env[bargs[k]] = vals[k], tag[bargs[k]] = vtags[k];
        if (ADD(W->pending, cost, &W->pending))
            return WALK_BAIL;
        int status = walk_run(W, body, body + len);
        if (status != WALK_OK)
            return status;
        for (int64_t k = 0; k < ny; k++)
            vals[k] = env[yields[k]], vtags[k] = tag[yields[k]];
        if (ADD(i, st, &i))
            return WALK_BAIL;
        itag = 0;
    }
    for (int64_t k = 0; k < n; k++)
        env[results[k]] = vals[k], tag[results[k]] = vtags[k];
    return WALK_OK;
}

static int run_if(Walker *W, const int64_t *pc, const int64_t **next)
{
    int64_t cond = pc[1], cost = pc[2], nr = pc[3];
    const int64_t *results = pc + 4;
    int64_t nt = results[nr];
    const int64_t *tyields = results + nr + 1;
    int64_t ne = tyields[nt];
    const int64_t *eyields = tyields + nt + 1;
    int64_t tlen = eyields[ne], elen = eyields[ne + 1];
    const int64_t *then = eyields + ne + 2, *els = then + tlen;
    *next = els + elen;
    if (ADD(W->pending, cost, &W->pending))
        return WALK_BAIL;
    int taken = W->env[cond] != 0;
    int status = taken ? walk_run(W, then, then + tlen) : walk_run(W, els, els + elen);
    if (status != WALK_OK)
        return status;
    const int64_t *yields = taken ? tyields : eyields;
    int64_t ny = taken ? nt : ne;
    for (int64_t k = 0; k < nr && k < ny; k++)
        W->env[results[k]] = W->env[yields[k]], W->tag[results[k]] = W->tag[yields[k]];
    return WALK_OK;
}

int walk_run(Walker *W, const int64_t *pc, const int64_t *end)
{
    int64_t *env = W->env;
    uint8_t *tag = W->tag;
    int status;
    while (pc < end) {
        switch (pc[0]) {
        case W_BINARY: {
            int64_t r;
            uint8_t t;
            if (binary(pc[1], env[pc[3]], tag[pc[3]], env[pc[4]], tag[pc[4]], &r, &t))
                return WALK_BAIL;
            env[pc[2]] = r, tag[pc[2]] = t;
            pc += 5;
            break;
        }
        case W_CMPI:
            env[pc[2]] = cmpi(pc[1], env[pc[3]], env[pc[4]]), tag[pc[2]] = 1;
            pc += 5;
            break;
        case W_SELECT: {
            int64_t s = env[pc[2]] ? pc[3] : pc[4];
            env[pc[1]] = env[s], tag[pc[1]] = tag[s];
            pc += 5;
            break;
        }
        case W_COPY:
            env[pc[1]] = env[pc[2]], tag[pc[1]] = tag[pc[2]];
            pc += 3;
            break;
        case W_ADDR: { /* base + sum(env[s] * c) */
            int64_t n = pc[3], sum = 0, term;
            for (int64_t k = 0; k < n; k++)
                if (MUL(env[pc[4 + 2 * k]], pc[5 + 2 * k], &term) || ADD(sum, term, &sum))
                    return WALK_BAIL;
            if (ADD(pc[2], sum, &sum))
                return WALK_BAIL;
            env[pc[1]] = sum, tag[pc[1]] = 0;
            pc += 4 + 2 * n;
            break;
        }
        case W_COST:
            if (ADD(W->pending, pc[1], &W->pending))
                return WALK_BAIL;
            pc += 2;
            break;
        case W_ASSERT:
            if (!env[pc[1]])
                return WALK_BAIL;
            pc += 2;
            break;
        case W_MASK: {
            int64_t lanes = mask_lanes((uint64_t)env[pc[1]], (uint64_t)env[pc[2]]);
            if (lanes < 0)
                return WALK_BAIL;
            W->reg[0] = lanes, W->reg_set[0] = 1, W->reg_tag[0] = 0;
            pc += 3;
            break;
        }
        case W_REG: {
            int64_t r = -pc[1] - 1;
            W->reg[r] = env[pc[2]], W->reg_set[r] = 1, W->reg_tag[r] = tag[pc[2]];
            pc += 3;
            break;
        }
        case W_SYNC:
            status = append(W, PyTuple_GET_ITEM(W->objects, pc[1]), W->empty, pc[2]);
            if (status != WALK_OK)
                return status;
            pc += 3;
            break;
        case W_DISPATCH:
            status = dispatch(W, pc);
            if (status != WALK_OK)
                return status;
            pc += 4 + pc[3];
            break;
        case W_FOR:
            status = run_for(W, pc, &pc);
            if (status != WALK_OK)
                return status;
            break;
        case W_IF:
            status = run_if(W, pc, &pc);
            if (status != WALK_OK)
                return status;
            break;
        default:
            PyErr_SetString(PyExc_ValueError, "walk: unknown opcode");
            return WALK_ERROR;
        }
    }
    return WALK_OK;
}
