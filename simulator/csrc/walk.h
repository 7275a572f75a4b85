/* The compiled scalar walk (`_cengine.Walker`): one core's walk of a decoded
 * hivm program (`program.Program.walk`), run from the flat code that
 * simulator/walk_code.py makes of the decoder's closures. It computes the
 * same integers as the closures (Python's int semantics on int64) and
 * appends the same trace entries; whatever it cannot do exactly (an
 * overflow of int64, a division by zero, a non-positive loop step, a mask
 * that is not a leading run, a failed assert) ends the walk with "bail", and
 * Python walks that core again: its closures raise the located error or
 * compute with big ints. */
#ifndef NPU_SIM_WALK_H
#define NPU_SIM_WALK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Opcodes and their words (walk_code.py writes them; keep both in step):
 *   BINARY kind r a b          CMPI pred r a b       SELECT r c t f
 *   COPY r a                   ADDR r base n (slot scale)*n
 *   COST n                     ASSERT cond           MASK hi lo
 *   REG which slot             SYNC obj pre
 *   DISPATCH table pre n src*n (src >= 0 a slot, < 0 a register)
 *   FOR lb ub step iv cost n inits*n bargs*n results*n ny yields*ny len body
 *   IF cond cost nr results*nr nt tyields*nt ne eyields*ne tlen elen then else */
enum { W_BINARY, W_CMPI, W_SELECT, W_COPY, W_ADDR, W_COST, W_ASSERT, W_MASK, W_REG,
       W_SYNC, W_DISPATCH, W_FOR, W_IF };
/* arith binary ops (scalar_unit.INT_BINARY), in walk_code.BINARY's order */
enum { B_ADD, B_SUB, B_MUL, B_DIVS, B_DIVU, B_REMS, B_REMU, B_FLOORDIV, B_CEILDIVS, B_CEILDIVU,
       B_MAXS, B_MINS, B_MAXU, B_MINU, B_AND, B_OR, B_XOR, B_SHL, B_SHRS, B_SHRU, B_NBINARY };
/* registers a dispatch key may read: hivm_decode.MASK, FMATRIX, PADDING, NO_REGISTER */
#define R_MASK (-1)
#define R_FMATRIX (-2)
#define R_PADDING (-3)
#define R_NONE (-4)
#define MAX_CARRIED 16 /* loop-carried values of one scf.for (more: not compiled) */

enum { WALK_OK = 0, WALK_BAIL = 1, WALK_ERROR = -1 };

/* One dispatch's cache: its key words (the sources' values and a word of
 * which registers were unset) -> (instr, views). */
typedef struct {
    int n;
    Py_ssize_t cap, count;
    int64_t *keys;
    PyObject **vals;
} Table;

typedef struct {
    PyObject_HEAD
    int64_t *code;
    Py_ssize_t ncode;
    int64_t *env, *env0; /* the slots; their values before a walk */
    uint8_t *tag, *tag0; /* 1: the slot holds a Python bool */
    Py_ssize_t nslots, block_slot;
    PyObject *resolvers; /* tuple: each dispatch's resolve(*key) -> (instr, views) */
    PyObject *objects;   /* tuple: the sync entries' instrs */
    PyObject *empty;     /* (), a sync entry's views */
    Table *tables;
    Py_ssize_t ntables;
    /* one walk's state */
    Py_ssize_t limit; /* the trace's most entries (WalkLimit past it) */
    uint32_t ticks;   /* loop iterations, to look at signals now and then */
    int64_t pending;
    int64_t reg[3];
    uint8_t reg_set[3], reg_tag[3];
    PyObject *trace;
} Walker;

/* `_cengine.WalkLimit`: the walk would make the trace longer than its limit. */
extern PyObject *walk_limit_error;

int walk_run(Walker *W, const int64_t *pc, const int64_t *end);
PyObject **table_find(Table *T, const int64_t *key, int *found);
int table_grow(Table *T);
int walk_register(PyObject *module);

#endif
