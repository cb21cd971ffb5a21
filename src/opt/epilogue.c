/* epilogue.c: MatMul + bias + activation into FusedMatMulBiasAct, Conv + activation into Conv's
 * activation attribute (rlx/optimize.h).
 * Add(MatMul(x, W[K,N]), b) with b one value per column (shape [..,1,N], broadcasting along the
 * last axis only) becomes FusedMatMulBiasAct(x, W, b[N]); an activation (Relu, Gelu, GeluApprox,
 * Silu, Sigmoid, Tanh) of a MatMul or of a FusedMatMulBiasAct without one moves into its
 * activation attribute, and one of a float Conv without one (those, or HardSwish) into the
 * Conv's (rlx's CPU convolution kernels apply it to each block of output while it is in cache).
 * The MatMul's or Conv's result must have no other reader. */
#include <string.h>

#include "opt/opt.h"

static bool is_act(rlx_op op) {
  return op == RLX_OP_RELU || op == RLX_OP_GELU || op == RLX_OP_GELU_APPROX || op == RLX_OP_SILU || op == RLX_OP_SIGMOID ||
         op == RLX_OP_TANH;
}

/* b ([..,1,N] of y's dtype, y [..,N]) as a [N] value of dst (a Reshape when needed). */
static rlx_status *bias_vector(rlx_graph *d, const rlx_node *n, rlx_value b, int64_t N, rlx_value *out) {
  if (d->types[b].rank == 1) return *out = b, NULL;
  rlx_attr a = RLX_ATTR_IS("shape", 1, &N);
  return rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &b, 1, &a, out);
}

static bool column_vector(const rlx_type *tb, const rlx_type *ty) {
  if (tb->dtype != ty->dtype || tb->rank < 1 || tb->rank > ty->rank || tb->dims[tb->rank - 1] != ty->dims[ty->rank - 1]) return false;
  for (int i = 0; i + 1 < tb->rank; i++)
    if (tb->dims[i] != 1) return false;
  return true;
}

/* Conv p (in dst) with activation n's op: a copy of p carrying it replaces n. */
static rlx_status *conv_act(rlx_opt_rule_ctx *r, const rlx_node *n, const rlx_node *p, bool *fired) {
  rlx_attr at[16];
  if (p->n_attrs >= 16) return RLX_ERR(INTERNAL, "epilogue: %u attributes", p->n_attrs);
  RLX_TRY(rlx_rw_attrs(p, at));
  uint32_t na = 0;
  for (uint32_t i = 0; i < p->n_attrs; i++)
    if (strcmp(at[i].name, "activation")) at[na++] = at[i];
  at[na++] = RLX_ATTR_S("activation", rlx_op_name(n->op));
  rlx_value out;
  RLX_TRY(rlx_graph_add1(r->rw->dst, RLX_OP_CONV, n->name, p->n_in, p->in, na, at, &out));
  rlx_opt_replace(r, n, 0, out);
  *fired = true;
  return NULL;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  const rlx_graph *s = r->rw->src;
  rlx_graph *d = r->rw->dst;
  if (n->op == RLX_OP_ADD) {
    for (int side = 0; side < 2; side++) {
      rlx_value y = n->in[side], b = n->in[1 - side];
      if (r->uses[y] != 1 || !rlx_type_same(&s->types[y], &s->types[n->out0]) || !column_vector(&s->types[b], &s->types[y])) continue;
      const rlx_node *p = rlx_opt_dst_producer(r, y);
      if (p->op != RLX_OP_MATMUL || d->types[p->in[1]].rank != 2 || !rlx_dtype_is_float(s->types[y].dtype)) continue;
      rlx_value x = p->in[0], w = p->in[1];
      rlx_value in[3] = {x, w, 0}, out;
      RLX_TRY(bias_vector(d, n, rlx_opt_mapped(r, b), s->types[y].dims[s->types[y].rank - 1], &in[2]));
      RLX_TRY(rlx_graph_add1(d, RLX_OP_FUSED_MATMUL_BIAS_ACT, n->name, 3, in, 0, NULL, &out));
      rlx_opt_replace(r, n, 0, out);
      *fired = true;
      return NULL;
    }
    return NULL;
  }
  if ((!is_act(n->op) && n->op != RLX_OP_HARD_SWISH) || r->uses[n->in[0]] != 1) return NULL;
  const rlx_node *p = rlx_opt_dst_producer(r, n->in[0]);
  if (p->op == RLX_OP_CONV && !strcmp(rlx_node_s(p, "activation"), "none") && rlx_dtype_is_float(d->types[p->out0].dtype))
    return conv_act(r, n, p, fired);
  if (!is_act(n->op)) return NULL;
  bool fused = p->op == RLX_OP_FUSED_MATMUL_BIAS_ACT && !strcmp(rlx_node_s(p, "activation"), "none");
  bool plain = p->op == RLX_OP_MATMUL && d->types[p->in[1]].rank == 2 && rlx_dtype_is_float(d->types[p->out0].dtype);
  if (!fused && !plain) return NULL;
  rlx_value in[3] = {p->in[0], p->in[1], p->n_in == 3 ? p->in[2] : 0}, out;
  uint32_t nin = fused ? p->n_in : 2;
  rlx_attr a = RLX_ATTR_S("activation", rlx_op_name(n->op));
  RLX_TRY(rlx_graph_add1(d, RLX_OP_FUSED_MATMUL_BIAS_ACT, n->name, nin, in, 1, &a, &out));
  rlx_opt_replace(r, n, 0, out);
  *fired = true;
  return NULL;
}

rlx_status *rlx_pass_epilogue(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
