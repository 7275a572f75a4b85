/* The compiled scheduling loop of `npu.simulator.pipes` (`_run_parallel`):
 * the state of one core's run. The Python engine is the reference: this one
 * makes the same decisions in the same order, and calls back into Python for
 * everything that is not scheduling (each instruction's checks and effect,
 * the memory system's GM timing). See simulator/compiled.py. */
#ifndef NPU_SIM_ENGINE_H
#define NPU_SIM_ENGINE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define NPIPES 6 /* S, V, M, MTE1, MTE2, MTE3 (hazards.PIPE_NAMES) */
#define P_IN_FLIGHT 4 /* MTE2: a chip barrier does not wait for its loads (pipes.IN_FLIGHT) */
#define NCOMP 7  /* clock components: the six pipes and the inputs */
#define PIPE_S 0
#define PIPE_V 1
/* instruction.OP, SET, WAIT, BARRIER (compiled.py checks they still are) */
enum { K_OP = 0, K_SET = 1, K_WAIT = 2, K_BARRIER = 3 };
#define T_INF INT64_MAX

typedef int64_t Clock[NCOMP];

/* What the loop needs of one static instruction (`Instr`). */
typedef struct {
    int64_t occupancy, latency;
    int kind, key, gm, barrier_all, chip;
} Info;

typedef struct {
    PyObject_HEAD
    /* Python objects the run calls or updates (owned references). */
    PyObject *trace;    /* list of (instr, views, scalar cycles) */
    PyObject *bound;    /* Machine.bound: id(views) -> (views, instr, runner) */
    PyObject *bind;     /* Machine.bind(instr, views) */
    PyObject *counts;   /* HazardDetector.executed: the live count per pipe */
    PyObject *gm;       /* gm(t0, instr, views) -> cycles, or None */
    PyObject *clock_py[NPIPES]; /* each pipe's clock as the runners read it */
    PyObject *keys;     /* flag key -> its number */
    int64_t flag_latency;
    char pipelined[NPIPES];

    /* Per entry. */
    Py_ssize_t n;
    int32_t *info_of;   /* its instruction's row of `info` */
    int8_t *pipe;
    int64_t *cost, *start, *end, *dispatch;
    int32_t *snap;      /* the scalar unit's clock when it dispatched it (a pool row) */
    int32_t *next_s;    /* the first S entry at or after it (n: none) */
    int64_t cost_sum;
    Info *info;
    Py_ssize_t n_info;

    /* Clocks that never change once made (the scalar unit's, the flags'). */
    Clock *pool;
    Py_ssize_t pool_len, pool_cap;

    /* Flags: per key a FIFO of raised events. */
    Py_ssize_t n_keys;
    int32_t *key_head, *key_tail, *key_order;
    Py_ssize_t n_order;
    char *key_raised;
    int64_t *ev_t;
    int32_t *ev_clock, *ev_entry, *ev_next;
    Py_ssize_t n_ev, ev_cap;
    int32_t *flow_set, *flow_wait;
    Py_ssize_t n_flows;

    /* Per pipe. */
    int32_t *queue[NPIPES];
    Py_ssize_t qhead[NPIPES], qtail[NPIPES];
    Clock clock[NPIPES];
    int32_t last_snap[NPIPES];
    char dirty[NPIPES];
    int64_t free_at[NPIPES], done[NPIPES], busy[NPIPES], busy_end[NPIPES];
    int64_t count[NPIPES];

    /* The scalar unit. */
    Py_ssize_t s_pos;
    int32_t s_clock;
    int64_t s_time;
    int pending_chip; /* stopped at a chip barrier, waiting for its release */
    int loaded;
} Engine;

/* entries.c: read the trace into the arrays above (0, or -1 with an exception).
 * `info`: None (read each instruction's attributes), or the launch's table
 * of them (`trace_codes.TraceCodes.engine_info`): (each entry's row as int32
 * bytes, per row ENGINE_INFO as int64 bytes, the number of flag keys). */
int engine_load(Engine *E, PyObject *entry_pipes, PyObject *info);
void engine_free(Engine *E);
int32_t pool_push(Engine *E, const int64_t *c);

/* engine.c: run until the end (0), a chip barrier (1, its arrival in *t),
 * a deadlock (2), or an exception (-1). `release`: a barrier's release. */
int engine_step(Engine *E, int64_t release, int64_t *t);

/* crosscore.c: the cross-core GM check of equal runs of bytes (a module function). */
PyObject *cross_runs(PyObject *self, PyObject *args);
/* `CrossCoreChecker.access` up to its numpy path: 1 done, 0 (Python's), -1. */
int cross_init(void);
int cross_access(PyObject *checker, PyObject *mem, PyObject *pat, PyObject *addr, int write,
                 int core);

/* memsys.c: the memory system's L2 touch and bus loop (module functions). */
PyObject *l2_touch(PyObject *self, PyObject *args);
PyObject *bus_take(PyObject *self, PyObject *args);
double *f64_data(PyObject *arr, Py_buffer *view);
double floordiv(double vx, double wx);
int bus_takes(double t, long long rate_i, long long bin_i, double share);
long long bus_loop(double *room, Py_ssize_t size, double *t_io, double *left_io, long long rate_i,
                   double share, long long bin_i);

/* gmxfer.c: one GM transfer's cycles, MemorySystem.transfer compiled (a module function). */
int gmxfer_init(void);
PyObject *gm_transfer(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* An int attribute / tuple item as a long long: 1, 0 (absent, not an exact
 * int, too large: the caller falls back), -1 with an exception. */
int attr_ll(PyObject *o, PyObject *name, long long *out);
int item_ll(PyObject *tuple, Py_ssize_t k, long long *out);

/* gmfacts.c: what a GM transfer reads of its instruction, once per instruction. */
typedef struct {
    PyObject *instr, *pat; /* owned; instr NULL: empty */
    long long k, esize, nbytes, n_bursts, rate, lo, hi, n, burst, stride;
    char esize_ok, nums_ok; /* esizes[k] and the three numbers are int64s */
    char shape;             /* 0: dense (lohi: lo and hi read), 1: bursts (their items read), 2: neither */
    char lohi, items_ok;
} Facts;
int gmfacts_init(void);
/* The facts of `instr`, or NULL with an exception (not a GM transfer). */
const Facts *facts_of(PyObject *instr);

/* generic.c: Machine.execute_generic's checks (a module function). */
int generic_init(void);
PyObject *generic(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
/* The same checks: the carry (0 or 1), or -1 with an exception. */
int generic_run(PyObject *state, PyObject *instr, PyObject *pipe, PyObject *reads,
                PyObject *writes, PyObject *stamp, PyObject *n, PyObject *clock,
                PyObject *clock_list);

/* bind.c: SharedBindings.bind compiled (a module function). */
int bind_init(void);
PyObject *bind_static(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *bind_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* numbering.c: InstrTable.numbers_of compiled (a module function). */
PyObject *number_entries(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* cubeconv.c: the cube unit's numerics around its product (module functions). */
PyObject *f16_to_f64(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *round_into_f32(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* vecops.c: the vector unit's dense elementwise ops (`VecOp`, vec_op). */
PyObject *vec_op(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
int vecops_register(PyObject *m);

/* runner.c: the `Runner` type (one operand set's generic path), and one
 * made without its type call (no upgrade), or `type`'s call for another type. */
int runner_register(PyObject *m);
PyObject *runner_make(PyObject *type, PyObject *state, PyObject *instr, PyObject *reads,
                      PyObject *writes, PyObject *compute, PyObject *carried, PyObject *mems,
                      PyObject *addrs);

#endif
