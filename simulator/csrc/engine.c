/* The scheduling loop: `pipes._run_parallel` statement for statement (read
 * that first; the comments here say only where the two differ in form).
 * Clocks are int64 rows; the scalar unit's clocks and the flags' are rows of
 * a pool that never change, so an entry's `snap` is a row number. */
#include "engine.h"

#include <string.h>

static void join(int64_t *into, const int64_t *other)
{
    for (int k = 0; k < NCOMP; k++)
        if (other[k] > into[k])
            into[k] = other[k];
}

static int raise_event(Engine *E, int key, int64_t t, int32_t clock, Py_ssize_t entry)
{
    if (E->n_ev >= E->ev_cap) {
        PyErr_SetString(PyExc_RuntimeError, "more set_flag events than set_flag entries");
        return -1;
    }
    Py_ssize_t ev = E->n_ev++;
    E->ev_t[ev] = t + E->flag_latency;
    E->ev_clock[ev] = clock;
    E->ev_entry[ev] = (int32_t)entry;
    E->ev_next[ev] = -1;
    if (E->key_tail[key] < 0)
        E->key_head[key] = (int32_t)ev;
    else
        E->ev_next[E->key_tail[key]] = (int32_t)ev;
    E->key_tail[key] = (int32_t)ev;
    if (!E->key_raised[key]) { /* the order `set_of_event`'s keys were made in */
        E->key_raised[key] = 1;
        E->key_order[E->n_order++] = key;
    }
    return 0;
}

/* The oldest event of `key` (which must have one), consumed by `entry`. */
static int32_t take_event(Engine *E, int key, Py_ssize_t entry)
{
    int32_t ev = E->key_head[key];
    E->key_head[key] = E->ev_next[ev];
    if (E->key_head[key] < 0)
        E->key_tail[key] = -1;
    E->flow_set[E->n_flows] = E->ev_entry[ev];
    E->flow_wait[E->n_flows++] = (int32_t)entry;
    return ev;
}

/* Every queue empty but `skip`'s (-1: none). */
static int queues_empty_but(Engine *E, int skip)
{
    for (int p = 1; p < NPIPES; p++)
        if (p != skip && E->qhead[p] != E->qtail[p])
            return 0;
    return 1;
}

static int queues_empty(Engine *E)
{
    return queues_empty_but(E, -1);
}

/* The pipe's clock list as the runners see it (refreshed when it changed). */
static int sync_clock(Engine *E, int p)
{
    if (!E->dirty[p])
        return 0;
    for (int k = 0; k < NCOMP; k++) {
        /* Most components did not change since the last sync: keep their ints. */
        PyObject *old = PyList_GET_ITEM(E->clock_py[p], k);
        if (old && PyLong_CheckExact(old)) {
            int overflow = 0;
            long long was = PyLong_AsLongLongAndOverflow(old, &overflow);
            if (!overflow && was == E->clock[p][k])
                continue;
        }
        PyObject *v = PyLong_FromLongLong(E->clock[p][k]);
        if (!v || PyList_SetItem(E->clock_py[p], k, v) < 0)
            return -1;
    }
    E->dirty[p] = 0;
    return 0;
}

/* Machine.execute, inlined in pipes.py: the operand set's runner. `num`
 * is the pipe's count n, the int the counts list holds (one object, not two). */
static int execute(Engine *E, Py_ssize_t i, int p, PyObject *num)
{
    PyObject *tuple = PyList_GET_ITEM(E->trace, i);
    PyObject *instr = PyTuple_GET_ITEM(tuple, 0), *views = PyTuple_GET_ITEM(tuple, 1);
    PyObject *id = PyLong_FromVoidPtr(views);
    if (!id)
        return -1;
    PyObject *entry = PyDict_GetItemWithError(E->bound, id);
    Py_DECREF(id);
    if (entry && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 3 &&
        PyTuple_GET_ITEM(entry, 0) == views && PyTuple_GET_ITEM(entry, 1) == instr) {
        Py_INCREF(entry); /* a runner may replace its own binding */
    } else {
        if (PyErr_Occurred())
            return -1;
        entry = PyObject_CallFunctionObjArgs(E->bind, instr, views, NULL);
        if (!entry)
            return -1;
    }
    PyObject *stamp = PyLong_FromSsize_t(i + 1);
    PyObject *result = NULL;
    if (stamp && sync_clock(E, p) == 0) {
        PyObject *args[4] = {stamp, num, E->clock_py[p], E->clock_py[p]};
        result = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 2), args, 4, NULL);
    }
    Py_XDECREF(stamp);
    Py_DECREF(entry);
    if (!result)
        return -1;
    Py_DECREF(result);
    return 0;
}

/* The memory system's cycles for a GM transfer starting at t0. */
static int gm_cycles(Engine *E, Py_ssize_t i, int64_t t0, int64_t *occ)
{
    PyObject *tuple = PyList_GET_ITEM(E->trace, i);
    PyObject *start = PyLong_FromLongLong(t0);
    if (!start)
        return -1;
    PyObject *r = PyObject_CallFunctionObjArgs(E->gm, start, PyTuple_GET_ITEM(tuple, 0),
                                               PyTuple_GET_ITEM(tuple, 1), NULL);
    Py_DECREF(start);
    if (!r)
        return -1;
    int overflow = 0;
    *occ = PyLong_Check(r) ? PyLong_AsLongLongAndOverflow(r, &overflow) : -1;
    int bad = !PyLong_Check(r) || overflow;
    Py_DECREF(r);
    if (bad) {
        PyErr_SetString(PyExc_TypeError, "the memory system's cycles must be an int64");
        return -1;
    }
    return 0;
}

/* One burst of pipe p's queue (the inner `while q` of pipes.py). */
static int burst(Engine *E, int p, int64_t t_second, int *progressed)
{
    int64_t p_free = E->free_at[p], p_done = E->done[p];
    int64_t p_busy = E->busy[p], p_busy_end = E->busy_end[p];
    int64_t *clock = E->clock[p];
    int rc = 0;
    while (E->qhead[p] != E->qtail[p]) {
        Py_ssize_t i = E->queue[p][E->qhead[p]];
        const Info *in = &E->info[E->info_of[i]];
        int kind = in->kind;
        int64_t t0 = E->dispatch[i] > p_free ? E->dispatch[i] : p_free;
        if (t0 > t_second)
            break;
        if (kind == K_WAIT) {
            int32_t ev = E->key_head[in->key];
            if (ev < 0 || E->ev_t[ev] > t_second)
                break;
        }
        int32_t sn = E->snap[i];
        if (sn != E->last_snap[p]) {
            join(clock, E->pool[sn]);
            E->last_snap[p] = sn;
            E->dirty[p] = 1;
        }
        if (kind == K_OP) {
            int64_t n = ++E->count[p];
            PyObject *v = PyLong_FromLongLong(n);
            if (!v) {
                rc = -1;
                break;
            }
            if (PyList_SetItem(E->counts, p, Py_NewRef(v)) < 0) { /* it stole one reference */
                Py_DECREF(v);
                rc = -1;
                break;
            }
            if (p != PIPE_V) {
                clock[p] = n;
                E->dirty[p] = 1;
            }
            int64_t occ = in->occupancy;
            int bad = execute(E, i, p, v) < 0;
            Py_DECREF(v);
            if (bad || (in->gm && E->gm != Py_None && gm_cycles(E, i, t0, &occ) < 0)) {
                rc = -1;
                break;
            }
            int64_t e = t0 + occ + in->latency;
            p_free = E->pipelined[p] ? t0 + occ : e;
            if (e > p_done)
                p_done = e;
            int64_t b0 = t0 > p_busy_end ? t0 : p_busy_end;
            if (e > b0) {
                p_busy += e - b0;
                p_busy_end = e;
            }
            E->start[i] = t0;
            E->end[i] = e;
        } else if (kind == K_WAIT) {
            int32_t ev = take_event(E, in->key, i);
            int64_t t = E->ev_t[ev] > t0 ? E->ev_t[ev] : t0;
            join(clock, E->pool[E->ev_clock[ev]]);
            E->dirty[p] = 1;
            p_free = t;
            E->start[i] = t0;
            E->end[i] = t;
        } else { /* SET or BARRIER: wait for every earlier instruction of p */
            int64_t t = p_done > t0 ? p_done : t0;
            if (kind == K_SET) {
                Clock c;
                memcpy(c, clock, sizeof c);
                c[p] = E->count[p];
                int32_t row = pool_push(E, c);
                if (row < 0 || raise_event(E, in->key, t, row, i) < 0) {
                    rc = -1;
                    break;
                }
            } else if (p == PIPE_V) {
                clock[PIPE_V] = E->count[PIPE_V];
                E->dirty[p] = 1;
            }
            p_free = t;
            E->start[i] = t;
            E->end[i] = t + (kind == K_SET ? E->flag_latency : 0);
        }
        E->qhead[p]++;
        *progressed = 1;
        if (kind == K_SET)
            break;
    }
    E->free_at[p] = p_free;
    E->done[p] = p_done;
    E->busy[p] = p_busy;
    E->busy_end[p] = p_busy_end;
    return rc;
}

/* The earliest-starting ready head: its pipe (or -1) and the runner-up's start. */
static int pick(Engine *E, int64_t *t_second_out)
{
    int best = -1;
    int64_t t_best = T_INF, t_second = T_INF;
    for (int p = 1; p < NPIPES; p++) {
        if (E->qhead[p] == E->qtail[p])
            continue;
        Py_ssize_t i = E->queue[p][E->qhead[p]];
        const Info *in = &E->info[E->info_of[i]];
        int64_t t = E->dispatch[i] > E->free_at[p] ? E->dispatch[i] : E->free_at[p];
        if (in->kind == K_WAIT) {
            int32_t ev = E->key_head[in->key];
            if (ev < 0)
                continue; /* blocked */
            if (E->ev_t[ev] > t)
                t = E->ev_t[ev];
        } else if (in->kind != K_OP && E->done[p] > t) {
            t = E->done[p];
        }
        if (t < t_best) {
            best = p;
            t_second = t_best;
            t_best = t;
        } else if (t < t_second) {
            t_second = t;
        }
    }
    *t_second_out = t_second;
    return best;
}

int engine_step(Engine *E, int64_t release, int64_t *out_t)
{
    int progressed = 0;
    Py_ssize_t n = E->n;
    if (E->pending_chip) { /* `t = yield t` returned: the barrier's release */
        E->pending_chip = 0;
        E->end[E->s_pos] = release;
        E->s_time = release;
        E->s_pos++;
        progressed = 1;
        goto scalar;
    }
    for (;;) {
        progressed = 0;
    scalar:
        while (E->s_pos < n) {
            Py_ssize_t s = E->s_pos, stop = E->next_s[s];
            if (stop > s) { /* entries for the other pipes, up to the next S entry */
                int64_t t = E->s_time;
                for (Py_ssize_t j = s; j < stop; j++) {
                    t += E->cost[j];
                    E->dispatch[j] = t;
                    E->snap[j] = E->s_clock;
                    int p = E->pipe[j];
                    if (p > 0 && p < NPIPES)
                        E->queue[p][E->qtail[p]++] = (int32_t)j;
                }
                E->s_time = t;
                E->s_pos = stop;
                progressed = 1;
                continue;
            }
            const Info *in = &E->info[E->info_of[s]];
            int64_t t = E->s_time + E->cost[s];
            if (in->kind == K_WAIT) {
                if (E->key_head[in->key] < 0)
                    break;
                int32_t ev = take_event(E, in->key, s);
                E->start[s] = t;
                if (E->ev_t[ev] > t)
                    t = E->ev_t[ev];
                Clock c;
                memcpy(c, E->pool[E->s_clock], sizeof c);
                join(c, E->pool[E->ev_clock[ev]]);
                if ((E->s_clock = pool_push(E, c)) < 0)
                    return -1;
            } else if (in->kind == K_SET) {
                E->start[s] = t;
                if (raise_event(E, in->key, t, E->s_clock, s) < 0)
                    return -1;
            } else if (in->kind == K_BARRIER && in->barrier_all) {
                /* a chip barrier leaves MTE2's loads in flight (pipes.IN_FLIGHT) */
                int skip = in->chip ? P_IN_FLIGHT : -1;
                if (!queues_empty_but(E, skip))
                    break;
                E->start[s] = t;
                for (int p = 0; p < NPIPES; p++)
                    if (p != skip && E->done[p] > t)
                        t = E->done[p];
                Clock joined;
                memcpy(joined, E->pool[E->s_clock], sizeof joined);
                for (int p = 1; p < NPIPES; p++) {
                    if (p == skip)
                        continue;
                    Clock c;
                    memcpy(c, E->clock[p], sizeof c);
                    c[p] = E->count[p];
                    join(joined, c);
                }
                if ((E->s_clock = pool_push(E, joined)) < 0)
                    return -1;
                if (in->chip) { /* every pipe but MTE2 drained: wait for the other cores */
                    E->pending_chip = 1;
                    *out_t = t;
                    return 1;
                }
            } else {
                E->start[s] = t;
            }
            E->end[s] = t;
            E->s_time = t;
            E->s_pos++;
            progressed = 1;
        }
        /* the pipes: run the earliest-starting ready head, in bursts */
        for (;;) {
            int64_t t_second;
            int p = pick(E, &t_second);
            if (p < 0)
                break;
            if (burst(E, p, t_second, &progressed) < 0)
                return -1;
            if (E->s_pos < n && E->pipe[E->s_pos] == PIPE_S)
                break; /* the scalar unit may be able to move again */
        }
        if (E->s_pos == n && queues_empty(E))
            return 0;
        if (!progressed)
            return 2;
    }
}
