/* onehot.c: a product of a one-hot encoding with a matrix into a row gather (rlx/optimize.h).
 * MatMul(Cast(Equal(idx, r)), W) with W a float32 [V, D] matrix, r the constant 0, 1, .., V - 1
 * along the last axis ([V] or [1, .., 1, V]) and idx int32 or int64 [.., N, 1] is W's row idx for
 * each index: Gather(Concat(W, 0[1, D]), Where(0 <= i < V, i, V)), i = idx without its last axis;
 * an index outside [0, V) matches no column of r, so its one-hot row is zeros and so is its
 * product (row V of the padded W). The one-hot [.., N, V] and its N x V x D product are never
 * formed (jax.nn.one_hot(idx) @ W as jax2tf exports it: Magika's byte embedding). */
#include <stdlib.h>

#include "opt/opt.h"

/* v is the known constant 0, 1, .., V - 1 of an integer dtype, its dims 1 but the last (V), of
 * rank at most `rank`. */
static bool is_range(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, int64_t V, int rank) {
  const rlx_type *t = &d->types[v];
  if (!rlx_dtype_is_int(t->dtype) || t->rank < 1 || t->rank > rank || t->dims[t->rank - 1] != V) return false;
  for (int i = 0; i + 1 < t->rank; i++)
    if (t->dims[i] != 1) return false;
  double *w;
  int64_t cnt;
  if (!rlx_opt_const_f64(d, v, cx, &w, &cnt)) return false;
  bool ok = cnt == V;
  for (int64_t i = 0; ok && i < cnt; i++) ok = w[i] == (double)i;
  free(w);
  return ok;
}

/* idx is int32 or int64 [.., N, 1] of a's shape but its last axis. */
static bool column_of(const rlx_type *ti, const rlx_type *ta) {
  if ((ti->dtype != RLX_DTYPE_I32 && ti->dtype != RLX_DTYPE_I64) || ti->rank != ta->rank || ti->dims[ti->rank - 1] != 1) return false;
  for (int i = 0; i + 1 < ti->rank; i++)
    if (ti->dims[i] != ta->dims[i]) return false;
  return true;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_MATMUL) return NULL;
  rlx_graph *d = r->rw->dst;
  rlx_value a = rlx_opt_mapped(r, n->in[0]), w = rlx_opt_mapped(r, n->in[1]);
  const rlx_type *ta = &d->types[a], *tw = &d->types[w];
  if (tw->rank != 2 || tw->dtype != RLX_DTYPE_F32 || ta->dtype != tw->dtype || ta->rank < 2 || !rlx_type_is_static(ta) ||
      !rlx_type_is_static(tw) || ta->dims[ta->rank - 1] != tw->dims[0])
    return NULL;
  const rlx_node *cast = rlx_opt_def(d, a, RLX_OP_CAST), *eq = cast ? rlx_opt_def(d, cast->in[0], RLX_OP_EQUAL) : NULL;
  if (!eq) return NULL;
  const int64_t V = tw->dims[0], D = tw->dims[1];
  const rlx_type at = *ta; /* d's types and nodes move as nodes are added */
  for (int side = 0; side < 2; side++) {
    rlx_value idx = eq->in[side], range = eq->in[1 - side];
    if (!column_of(&d->types[idx], &at) || !is_range(d, r->cx, range, V, at.rank)) continue;
    const rlx_dtype it = d->types[idx].dtype;
    int64_t dims[RLX_MAX_RANK];
    for (int k = 0; k + 1 < at.rank; k++) dims[k] = at.dims[k];
    rlx_value i, zero, vV, ge, lt, ok, safe, zrow, wp, y;
    rlx_attr shape = RLX_ATTR_IS("shape", at.rank - 1, dims), axis0 = RLX_ATTR_I("axis", 0);
    RLX_TRY(rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &idx, 1, &shape, &i));
    RLX_TRY(rlx_opt_scalar_const(d, it, 0, &zero));
    RLX_TRY(rlx_opt_scalar_const(d, it, (double)V, &vV));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_GREATER_EQUAL, n->name, 2, (rlx_value[]){i, zero}, 0, NULL, &ge));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_LESS, n->name, 2, (rlx_value[]){i, vV}, 0, NULL, &lt));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_AND, n->name, 2, (rlx_value[]){ge, lt}, 0, NULL, &ok));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_WHERE, n->name, 3, (rlx_value[]){ok, i, vV}, 0, NULL, &safe));
    double *zeros = calloc((size_t)(D ? D : 1), sizeof *zeros);
    if (!zeros) return RLX_OOM();
    rlx_type tz = {.dtype = at.dtype, .rank = 2, .dims = {1, D}};
    rlx_status *st = rlx_opt_const_from_f64(d, &tz, zeros, &zrow);
    free(zeros);
    RLX_TRY(st);
    RLX_TRY(rlx_graph_add1(d, RLX_OP_CONCAT, n->name, 2, (rlx_value[]){w, zrow}, 1, &axis0, &wp));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_GATHER, n->name, 2, (rlx_value[]){wp, safe}, 1, &axis0, &y));
    rlx_opt_replace(r, n, 0, y);
    *fired = true;
    return NULL;
  }
  return NULL;
}

rlx_status *rlx_pass_onehot(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
