/* lower.c: the lowering driver (topological walk, eager evaluation) and shared helpers. */
#include "mlx/lower.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlx_lower_fn lower_fns[RLX_OP_COUNT] = {
#define RLX_X(e, name, fam, lo, hi, spec) rlx_lower_##fam,
    RLX_OP_TABLE(RLX_X)
#undef RLX_X
};

void rlx_lower_fail(rlx_lower *L, rlx_status_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_mx_fail(L->mx, rlx_status_makev(code, fmt, ap));
  va_end(ap);
}

rlx_status *rlx_lower_graph(rlx_lower *L) {
  const rlx_graph *g = L->g;
  char label[160];
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM || n->op == RLX_OP_CONSTANT) continue;
    rlx_mx_arr *in[256];
    for (uint32_t i = 0; i < n->n_in; i++) in[i] = L->vals[n->in[i]];
    rlx_mx_arr **out = &L->vals[n->out0];
    if (!L->cl || !rlx_lower_cl(L, n, lower_fns[n->op], in, out)) lower_fns[n->op](L, n, in, out);
    if (!rlx_mx_failed(L->mx)) {
      for (uint32_t i = 0; i < n->n_out; i++)
        if (!out[i]) rlx_lower_fail(L, RLX_STATUS_INTERNAL, "lowering produced no output %u", i);
    }
    if (L->eager) rlx_mx_eval(L->mx, out, n->n_out);
    if (rlx_mx_failed(L->mx)) return rlx_status_annotate(rlx_mx_take_error(L->mx), "%s", rlx_node_label(g, n, label, sizeof label));
  }
  if (L->cl) rlx_lower_cl_outputs(L);
  return NULL;
}

void rlx_lower_leaf(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  (void)n, (void)in, (void)out;
  rlx_lower_fail(L, RLX_STATUS_INTERNAL, "leaves are bound, not lowered");
}

rlx_mx_arr *rlx_l_scalar_like(rlx_lower *L, double v, rlx_dtype dt) { return rlx_mx_scalar(L->mx, v, dt); }

rlx_mx_arr *rlx_l_extreme(rlx_lower *L, rlx_dtype dt, bool lowest) {
  if (rlx_dtype_is_float(dt)) return rlx_mx_scalar(L->mx, lowest ? -INFINITY : INFINITY, dt);
  if (dt == RLX_DTYPE_BOOL) return rlx_mx_scalar(L->mx, lowest ? 0 : 1, dt);
  /* integers: the lowest value is exact in a double; the highest is its bitwise complement */
  double lo = rlx_dtype_is_signed(dt) ? -ldexp(1, 8 * (int)rlx_dtype_size(dt) - 1) : 0;
  rlx_mx_arr *a = rlx_mx_scalar(L->mx, lo, dt);
  return lowest ? a : rlx_mx_unary(L->mx, RLX_MXU_BITWISE_INVERT, a);
}

rlx_mx_arr *rlx_l_reshape(rlx_lower *L, rlx_mx_arr *a, const rlx_type *t) {
  return rlx_mx_reshape(L->mx, a, t->rank, t->dims);
}

rlx_mx_arr *rlx_l_activation(rlx_lower *L, const char *act, rlx_mx_arr *x, rlx_dtype dt) {
  rlx_op op;
  if (strcmp(act, "none") == 0) return x;
  rlx_status *st = rlx_op_from_name(act, &op);
  if (st) {
    rlx_mx_fail(L->mx, st);
    return NULL;
  }
  return rlx_l_unary(L, op, x, dt);
}

bool rlx_l_kernel_act(const char *act, rlx_mx_act *out) {
  static const struct {
    const char *name;
    rlx_mx_act act;
  } map[] = {{"none", {RLX_MX_ACT_NONE, 0, 0}},
             {"Relu", {RLX_MX_ACT_RELU, 0, 0}},
             {"Sigmoid", {RLX_MX_ACT_SIGMOID, 0, 0}},
             {"Silu", {RLX_MX_ACT_SILU, 0, 0}},
             {"Tanh", {RLX_MX_ACT_TANH, 0, 0}},
             {"Gelu", {RLX_MX_ACT_GELU, 0, 0}},
             {"GeluApprox", {RLX_MX_ACT_GELU_TANH, 0, 0}},
             {"HardSwish", {RLX_MX_ACT_HARD_SWISH, 1.0f / 6, 0.5f}}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(act, map[i].name)) return *out = map[i].act, true;
  return false;
}

rlx_mx_arr *rlx_l_swap(rlx_lower *L, rlx_mx_arr *a, int rank, int i, int j) {
  int64_t perm[RLX_MAX_RANK];
  for (int k = 0; k < rank; k++) perm[k] = k;
  perm[i] = j;
  perm[j] = i;
  return rlx_mx_transpose(L->mx, a, rank, perm);
}

rlx_mx_arr *rlx_l_expert_index(rlx_lower *L, rlx_mx_arr *idx, int64_t E) {
  rlx_mx *c = L->mx;
  idx = rlx_mx_astype(c, idx, RLX_DTYPE_I64);
  rlx_mx_arr *neg = rlx_mx_binary(c, RLX_MXB_LESS, idx, rlx_mx_scalar(c, 0, RLX_DTYPE_I64));
  idx = rlx_mx_where(c, neg, rlx_mx_binary(c, RLX_MXB_ADD, idx, rlx_mx_scalar(c, (double)E, RLX_DTYPE_I64)), idx);
  idx = rlx_mx_clip(c, idx, rlx_mx_scalar(c, 0, RLX_DTYPE_I64), rlx_mx_scalar(c, (double)(E - 1), RLX_DTYPE_I64));
  return rlx_mx_astype(c, idx, RLX_DTYPE_U32);
}

const void *rlx_l_constant(const rlx_lower *L, const rlx_node *n, uint32_t input, int64_t *numel) {
  const rlx_node *src = rlx_value_node(L->g, n->in[input]);
  if (src->op != RLX_OP_CONSTANT || !src->data) return NULL;
  rlx_status *st = rlx_type_numel(rlx_in_type(L, n, input), numel); /* a constant's type is static */
  if (st) return rlx_status_free(st), NULL;
  return src->data;
}

rlx_mx_arr *rlx_l_narrow(rlx_lower *L, rlx_mx_arr *a, const rlx_type *t, int axis, int64_t start, int64_t len) {
  int64_t lo[RLX_MAX_RANK], hi[RLX_MAX_RANK], st[RLX_MAX_RANK];
  for (int i = 0; i < t->rank; i++) lo[i] = 0, hi[i] = t->dims[i], st[i] = 1;
  lo[axis] = start;
  hi[axis] = start + len;
  return rlx_mx_slice(L->mx, a, t->rank, lo, hi, st);
}

rlx_status *rlx_sub_prepare(rlx_lower *L, const rlx_graph *sub, const rlx_type *in, size_t n, rlx_sub *out) {
  size_t nv = sub->n_vals ? sub->n_vals : 1;
  rlx_sub s = {.g = sub, .types = malloc(sizeof(rlx_type) * nv), .leaves = calloc(nv, sizeof(rlx_mx_arr *))};
  rlx_status *st = s.types && s.leaves ? rlx_subgraph_bind(sub, in, n, s.types) : RLX_OOM();
  for (size_t k = 0; !st && k < sub->n_nodes; k++) {
    const rlx_node *nd = &sub->nodes[k];
    if (nd->op == RLX_OP_CONSTANT) {
      s.leaves[nd->out0] = rlx_mx_from_bytes(L->mx, nd->data, &s.types[nd->out0]);
    } else if (nd->op == RLX_OP_PARAM) {
      s.leaves[nd->out0] = L->param ? L->param(L->param_ud, nd->name) : NULL;
      if (!s.leaves[nd->out0]) st = RLX_ERR(NOT_FOUND, "sub-graph param '%s' has no value", nd->name);
    }
  }
  if (!st && rlx_mx_failed(L->mx)) st = rlx_mx_take_error(L->mx);
  if (st) {
    rlx_sub_free(&s);
    return st;
  }
  *out = s;
  return NULL;
}

rlx_status *rlx_sub_run(rlx_lower *L, const rlx_sub *s, rlx_mx_arr *const *captures, rlx_mx_arr **outs) {
  const rlx_graph *sub = s->g;
  rlx_mx_arr **vals = malloc(sizeof *vals * (sub->n_vals ? sub->n_vals : 1));
  if (!vals) return RLX_OOM();
  memcpy(vals, s->leaves, sizeof *vals * sub->n_vals);
  for (size_t i = 0; i < sub->n_inputs; i++) vals[sub->nodes[sub->inputs[i]].out0] = captures[i];
  rlx_lower S = {.mx = L->mx, .g = sub, .types = s->types, .vals = vals, .eager = L->eager, .param = L->param, .param_ud = L->param_ud,
                 .group = L->group,
                 .rng = L->rng,
                 .checks = L->checks, .guard = L->guard, .unchecked_indices = L->unchecked_indices,
                 .site_g = L->site_g,
                 .site_n = L->site_n};
  rlx_status *st = rlx_lower_graph(&S);
  for (size_t i = 0; !st && i < sub->n_outputs; i++) outs[i] = vals[sub->outputs[i]];
  free(vals);
  return rlx_status_annotate(st, "sub-graph");
}

void rlx_sub_free(rlx_sub *s) {
  free(s->types);
  free(s->leaves);
}

