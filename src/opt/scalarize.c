/* scalarize.c: size-1 constants made rank-0 scalars (rlx/optimize.h). A binary elementwise op
 * (rlx/op_table.h's binary family) with a constant operand of one element (or such a param with a
 * given value) whose other operand
 * already has the result's shape reads a rank-0 constant with the same bytes instead: the result
 * is the same (NumPy broadcasting), and MLX compile folds scalars into its fused kernels (a
 * [1]-shaped operand is a broadcast array input there). */
#include <string.h>

#include "opt/opt.h"

/* v's one element's bytes when v is a constant (or a param with a given value) of rank >= 1 and
 * one element; NULL otherwise. */
static const void *size1_constant(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx) {
  const rlx_type *t = &g->types[v];
  if (t->rank == 0) return NULL;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] != 1) return NULL;
  return rlx_opt_const_data(g, v, cx);
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (strcmp(rlx_op_info_get(n->op)->family, "binary") || n->n_in != 2) return NULL;
  const rlx_graph *s = r->rw->src;
  const void *b1 = size1_constant(s, n->in[1], r->cx), *b0 = b1 ? NULL : size1_constant(s, n->in[0], r->cx);
  int k = b1 ? 1 : b0 ? 0 : -1;
  if (k < 0 || !rlx_type_same(&s->types[n->in[1 - k]], &s->types[n->out0]) ||
      s->types[n->in[1 - k]].dtype != s->types[n->in[k]].dtype)
    return NULL;
  rlx_graph *d = r->rw->dst;
  rlx_type t0 = {.dtype = s->types[n->in[k]].dtype};
  rlx_value in[2], y;
  in[1 - k] = rlx_opt_mapped(r, n->in[1 - k]);
  RLX_TRY(rlx_graph_add_constant(d, &t0, k ? b1 : b0, rlx_dtype_size(t0.dtype), &in[k]));
  RLX_TRY(rlx_graph_add1(d, n->op, n->name, 2, in, 0, NULL, &y));
  rlx_opt_replace(r, n, 0, y);
  *fired = true;
  return NULL;
}

rlx_status *rlx_pass_scalarize(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
