/* `stamps.Stamps` seen from C: the granules an access stamps whole (its
 * `plan`, a slice or an int64 index array) and a Stamps object's arrays,
 * for the compiled generic path (generic.c) and its covered-stamp exits
 * (covered.c). */
#ifndef NPU_SIM_STAMPS_H
#define NPU_SIM_STAMPS_H

#include "engine.h"

/* The granules of `plan` (a slice of `coarse`, or an int64 index array)
 * as [lo, hi) or an index list. */
typedef struct {
    const int64_t *ix; /* the index array's, when `held`; else [lo, hi) */
    Py_ssize_t n;
    int held;
    Py_ssize_t lo, hi;
} Plan;

#define PLAN_FOR(P, k, body)                                                    \
    do {                                                                        \
        if ((P)->held) {                                                        \
            const int64_t *ix_ = (P)->ix;                                       \
            for (Py_ssize_t j_ = 0; j_ < (P)->n; j_++) {                        \
                Py_ssize_t k = ix_[j_];                                         \
                body;                                                           \
            }                                                                   \
        } else                                                                  \
            for (Py_ssize_t k = (P)->lo; k < (P)->hi; k++) {                    \
                body;                                                           \
            }                                                                   \
    } while (0)

/* A remembered int64 array's data and length: 0, or 1 (not one: another
 * dtype, not contiguous; no exception). */
int int64_array(PyObject *obj, const int64_t **data, Py_ssize_t *n);
/* A Stamps object's arrays: `n` int32 stamps and `n` bool mixed flags. */
typedef struct {
    int32_t *c;
    char *m;
    Py_ssize_t n;
    int any_mixed;
} Arrays;

#define COVERS_ALL INT32_MAX /* hazards.COVERS_ALL: above every stamp */

int stamps_init(void);
/* `mem.<slot>` of a `memory.Memory` (a new reference, or NULL with an
 * exception): read at its offset when the type has slots, else by name. */
enum { MEM_WSTAMP, MEM_RSTAMP, MEM_WRITERS, MEM_UNINIT, MEM_NSLOTS };
PyObject *mem_slot(PyObject *mem, int k);
/* Drop the arrays whose buffers are remembered (`forget_buffers`). */
void buffers_forget(void);
/* 0; 1 when `plan` is not one this code takes (a step, a negative or
 * out-of-range index, another dtype: numpy's indexing decides); -1. */
int plan_open(PyObject *plan, Py_ssize_t size, Plan *P);
static inline void plan_close(Plan *P) { (void)P; }
/* A Stamps object's arrays (int32 stamps, bool mixed flags): 0 or -1. */
int arrays_open(PyObject *stamps, Arrays *A);
static inline void arrays_close(Arrays *A) { (void)A; }

/* covered.c: the early exits of HazardDetector._check_writes / _check_reads.
 * 1: every stamp the access covers is covered by the clock (the Python
 * check would return without a report); 0: the Python check decides; -1. */
/* `clock`: the clock the per-stamp test reads (the Python check's `clock`);
 * `reading`: a read's check (a write inside V does not race with V). */
int writes_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *pat, PyObject *addr,
                   PyObject *sw, PyObject *clock_list, PyObject *clock, long pipe, int reading);
int reads_covered(PyObject *hz, PyObject *mem, PyObject *plan, PyObject *pat, PyObject *addr,
                  PyObject *sr, PyObject *clock_list, PyObject *clock, long pipe);

/* partial.c: an access's bytes, as `n` runs of `burst` bytes `stride` apart
 * from byte `first` (a dense pattern is one run), or, with `ix`, the `n`
 * bytes `first + ix[k]` (a pattern given byte by byte); `g` the granule. */
typedef struct {
    int64_t first, n, burst, stride, g;
    const int64_t *ix;
} Runs;

#define RUNS_FOR(U, j, body)                                                    \
    for (int64_t r_ = 0; r_ < (U)->n; r_++)                                     \
        for (int64_t j = (U)->first + ((U)->ix ? (U)->ix[r_] : r_ * (U)->stride), \
                     e_ = j + (U)->burst;                                       \
             j < e_; j++) {                                                     \
            body;                                                               \
        }

/* The bytes of `pat` at `addr` in a Stamps object of `n_granules`: 0, 1
 * (not a pattern this code takes, or out of range: Python decides), -1. */
int access_runs(PyObject *stamps, PyObject *pat, PyObject *addr, Py_ssize_t n_granules,
                Runs *U);
/* `at_most`'s test on every byte's own stamp (`races(R, stamp)`: 1 when it
 * may race): 1 (covered), 0 (Python decides), -1. */
int bytes_at_most(PyObject *stamps, const Arrays *A, PyObject *pat, PyObject *addr,
                  int64_t top, int (*races)(const void *, int64_t), const void *R);
/* `Stamps.set_part(pat, addr, value)`: 0, 1 (Python's must do it), -1. */
int set_part(PyObject *stamps, PyObject *pat, PyObject *addr, int32_t value);
/* hand_over(written, read, top, fill) -> done (module function). */
PyObject *hand_over(PyObject *self, PyObject *args);

#endif
