/* infer_util.h: shorthands for the shape-inference functions (src/ir/infer_*.c). */
#ifndef RLX_IR_INFER_UTIL_H
#define RLX_IR_INFER_UTIL_H

#include <string.h>

#include "ir/ir.h"

#define IN(i) (&c->in[(i)])
#define OUT(i) (&c->out[(i)])
#define OP (c->n->op)
#define NIN ((int)c->n->n_in)
#define AI(name) rlx_node_i(c->n, name)
#define AF(name) rlx_node_f(c->n, name)
#define AS(name) rlx_node_s(c->n, name)
#define FAIL(code, ...) return RLX_ERR(code, __VA_ARGS__)
#define TSTR(t) RLX_TYPE_STR(t)

/* Normalizes attribute `name` (an axis) against `rank`, or fails with OUT_OF_RANGE. */
#define NORM_AXIS(var, value, rank, what)                                                        \
  int64_t var;                                                                                  \
  do {                                                                                          \
    if (!rlx_norm_axis((value), (rank), &var))                                                  \
      FAIL(OUT_OF_RANGE, "%s %lld is outside [%lld, %lld) for rank %lld", (what),             \
           (long long)(value), (long long)-(int64_t)(rank), (long long)(rank), (long long)(rank)); \
  } while (0)

RLX_MUST_USE static inline rlx_status *infer_same_dtype(const rlx_infer_ctx *c, int a, int b) {
  if (c->in[a].dtype != c->in[b].dtype)
    return RLX_ERR(INVALID_ARGUMENT, "input %d is %s but input %d is %s; dtypes must match", b,
                   rlx_dtype_name(c->in[b].dtype), a, rlx_dtype_name(c->in[a].dtype));
  return NULL;
}

RLX_MUST_USE static inline rlx_status *infer_need_float(const rlx_infer_ctx *c, int i) {
  if (!rlx_dtype_is_float(c->in[i].dtype))
    return RLX_ERR(INVALID_ARGUMENT, "input %d must be a float type, got %s", i, rlx_dtype_name(c->in[i].dtype));
  return NULL;
}

RLX_MUST_USE static inline rlx_status *infer_need_int(const rlx_infer_ctx *c, int i, const char *what) {
  if (!rlx_dtype_is_int(c->in[i].dtype))
    return RLX_ERR(INVALID_ARGUMENT, "input %d (%s) must be an integer type, got %s", i, what,
                   rlx_dtype_name(c->in[i].dtype));
  return NULL;
}

RLX_MUST_USE static inline rlx_status *infer_need_rank(const rlx_infer_ctx *c, int i, int lo, int hi) {
  int r = c->in[i].rank;
  if (r < lo || r > hi) {
    if (lo == hi) return RLX_ERR(INVALID_ARGUMENT, "input %d must have rank %d, got %s", i, lo, RLX_TYPE_STR(&c->in[i]));
    return RLX_ERR(INVALID_ARGUMENT, "input %d must have rank %d..%d, got %s", i, lo, hi, RLX_TYPE_STR(&c->in[i]));
  }
  return NULL;
}

/* Reads an int-list attribute into dims (at most RLX_MAX_RANK), resolving symbols; an entry below
 * -1 must name a symbol that an input of the graph binds (INVALID_ARGUMENT otherwise: a negative
 * size, or a symbol no run binds, which reached the lowering as a negative dim). */
RLX_MUST_USE static inline rlx_status *infer_attr_dims(const rlx_infer_ctx *c, const char *name, int64_t *dims, int *rank) {
  size_t n;
  const int64_t *v = rlx_node_is(c->n, name, &n);
  *rank = 0;
  if (n > RLX_MAX_RANK) return RLX_ERR(INVALID_ARGUMENT, "attribute '%s' has %zu entries; the largest rank is %d", name, n, RLX_MAX_RANK);
  for (size_t i = 0; i < n; i++)
    if (v[i] < -1 && !rlx_graph_input_symbol(c->g, RLX_DIM_SYMBOL_ID(v[i])))
      return RLX_ERR(INVALID_ARGUMENT, "attribute '%s'[%zu] = %lld is negative (and names no symbol of the graph's inputs)", name, i,
                     (long long)v[i]);
  for (size_t i = 0; i < n; i++) dims[i] = rlx_infer_dim(c, v[i]);
  *rank = (int)n;
  return NULL;
}

#endif
