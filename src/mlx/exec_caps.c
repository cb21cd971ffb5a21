/* exec_caps.c: per-node rules for compiled mode, shapeless compile and the active extent
 * (exec_caps.h). */
#include "mlx/exec_caps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool family_is(rlx_op op, const char *fam) { return strcmp(rlx_op_info_get(op)->family, fam) == 0; }

static bool elementwise(rlx_op op) {
  return family_is(op, "unary") || family_is(op, "binary") || family_is(op, "where") || family_is(op, "cast") ||
         family_is(op, "region");
}

static rlx_status *node_error(const rlx_graph *g, const rlx_node *n, const char *what, const char *why) {
  char label[160];
  return RLX_ERR(UNIMPLEMENTED, "%s: %s: %s", what, rlx_node_label(g, n, label, sizeof label), why);
}

/* ---- shapeless ---- */

static bool node_static(const rlx_graph *g, const rlx_node *n) {
  for (uint32_t i = 0; i < n->n_in; i++)
    if (!rlx_type_is_static(&g->types[n->in[i]])) return false;
  for (uint32_t i = 0; i < n->n_out; i++)
    if (!rlx_type_is_static(&g->types[n->out0 + i])) return false;
  return true;
}

/* NULL when the node's lowering infers every shape inside MLX; else the reason it does not. */
static const char *shapeless_blocker(const rlx_graph *g, const rlx_node *n) {
  if (elementwise(n->op)) return NULL;
  switch (n->op) {
    case RLX_OP_TRANSPOSE:
    case RLX_OP_CONCAT:
    case RLX_OP_SOFTMAX:
    case RLX_OP_LOG_SOFTMAX:
    case RLX_OP_LAYER_NORM:
    case RLX_OP_LAYER_NORM_2D:
    case RLX_OP_RMS_NORM:
      return NULL;
    case RLX_OP_MATMUL:
      if (g->types[n->in[0]].rank >= 2 && g->types[n->in[1]].rank >= 2) return NULL;
      return "a rank-1 operand is reshaped to the bound sizes";
    case RLX_OP_REDUCE:
      if (!(strcmp(rlx_node_s(n, "kind"), "mean") == 0 && rlx_dtype_is_int(g->types[n->in[0]].dtype))) return NULL;
      return "an integer mean divides by the bound element count";
    default:
      return "its lowering bakes the bound sizes into the trace";
  }
}

rlx_status *rlx_exec_check_shapeless(const rlx_graph *g) {
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM || n->op == RLX_OP_CONSTANT || node_static(g, n)) continue;
    const char *why = shapeless_blocker(g, n);
    if (why) return node_error(g, n, "shapeless compile", why);
  }
  return NULL;
}

/* ---- active extent ----
 * Each value is either independent of the bucketed rows (params, constants, other inputs and
 * what is computed from them only) or "rows": its axis 0 is the bucket axis and its rows are
 * computed independently of each other. A node with a rows input must produce rows outputs by one
 * of the rules below; anything else stops the analysis. */

typedef struct extent_ctx {
  const rlx_graph *g;
  const rlx_node *n;
  const bool *rows; /* per value */
} extent_ctx;

static bool in_rows(const extent_ctx *c, uint32_t i) { return i < c->n->n_in && c->rows[c->n->in[i]]; }
static const rlx_type *in_type(const extent_ctx *c, uint32_t i) { return &c->g->types[c->n->in[i]]; }

/* The node's `axis` attribute normalized against input 0's rank. */
static int64_t attr_axis(const extent_ctx *c) {
  int64_t a = 0;
  rlx_norm_axis(rlx_node_i(c->n, "axis"), in_type(c, 0)->rank, &a);
  return a;
}

/* true when only input 0 carries rows (the other inputs are weights, scales, tables). */
static bool only_first_rows(const extent_ctx *c) {
  for (uint32_t i = 1; i < c->n->n_in; i++)
    if (in_rows(c, i)) return false;
  return in_rows(c, 0);
}

/* Elementwise broadcasting: rows inputs keep the output's rank; the others broadcast along axis 0. */
static const char *broadcast_rule(const extent_ctx *c) {
  int r = c->g->types[c->n->out0].rank;
  for (uint32_t i = 0; i < c->n->n_in; i++) {
    const rlx_type *t = in_type(c, i);
    if (in_rows(c, i) && t->rank != r) return "a rows operand is broadcast to a higher rank";
    if (!in_rows(c, i) && t->rank == r && t->dims[0] != 1) return "an operand without rows spans axis 0";
  }
  return NULL;
}

static const char *matmul_rule(const extent_ctx *c) {
  const rlx_type *a = in_type(c, 0), *b = in_type(c, 1);
  bool ra = in_rows(c, 0), rb = in_rows(c, 1);
  if (ra && !rb && a->rank >= 2 && (b->rank < a->rank || b->rank <= 2 || b->dims[0] == 1)) return NULL;
  if (!ra && rb && b->rank >= 3 && (a->rank < b->rank || a->dims[0] == 1)) return NULL;
  if (ra && rb && a->rank == b->rank && a->rank >= 3) return NULL;
  return "axis 0 is contracted or broadcast";
}

static const char *attention_rule(const extent_ctx *c) {
  if (!in_rows(c, 0) || !in_rows(c, 1) || !in_rows(c, 2)) return "queries, keys and values must all carry the rows";
  if (c->n->n_in > 3 && !in_rows(c, 3)) {
    const rlx_type *m = in_type(c, 3);
    if (m->rank > 2 && m->dims[0] != 1) return "the mask spans axis 0 without rows";
  }
  return NULL;
}

static const char *reduce_rule(const extent_ctx *c) {
  size_t na;
  const int64_t *axes = rlx_node_is(c->n, "axes", &na);
  if (na == 0) return "it reduces over every axis";
  for (size_t i = 0; i < na; i++) {
    int64_t a = 0;
    rlx_norm_axis(axes[i], in_type(c, 0)->rank, &a);
    if (a == 0) return "it reduces over axis 0";
  }
  return NULL;
}

static const char *slice_rule(const extent_ctx *c) {
  size_t ns, na;
  rlx_node_is(c->n, "starts", &ns);
  const int64_t *axes = rlx_node_is(c->n, "axes", &na);
  for (size_t i = 0; i < ns; i++) {
    int64_t a = (int64_t)i;
    if (na) rlx_norm_axis(axes[i], in_type(c, 0)->rank, &a);
    if (a == 0) return "it slices axis 0";
  }
  return NULL;
}

static const char *gather_rule(const extent_ctx *c) {
  int64_t a = attr_axis(c);
  if (c->n->op == RLX_OP_GATHER && a == 0)
    return !in_rows(c, 0) && in_type(c, 1)->rank >= 1 ? NULL : "it gathers along axis 0 of a rows value";
  if (a == 0) return "it gathers along axis 0";
  if (c->n->op == RLX_OP_GATHER) return only_first_rows(c) ? NULL : "its indices carry rows";
  return in_rows(c, 0) && in_rows(c, 1) ? NULL : "data and indices must both carry rows";
}

/* NULL when node n maps rows inputs to rows outputs; else the reason it does not. */
static const char *extent_blocker(const extent_ctx *c) {
  const rlx_node *n = c->n;
  if (elementwise(n->op)) return broadcast_rule(c);
  switch (n->op) {
    case RLX_OP_MATMUL:
      return matmul_rule(c);
    case RLX_OP_FUSED_MATMUL_BIAS_ACT:
    case RLX_OP_LORA_MATMUL:
    case RLX_OP_DEQUANT_MATMUL:
      return only_first_rows(c) && in_type(c, 0)->rank >= 2 ? NULL : "only x may carry rows, at rank >= 2";
    case RLX_OP_ATTENTION:
      return attention_rule(c);
    case RLX_OP_ROPE:
      return only_first_rows(c) && in_type(c, 0)->rank >= 3 ? NULL : "x must carry rows ahead of its sequence axis";
    case RLX_OP_LAYER_NORM:
    case RLX_OP_RMS_NORM:
    case RLX_OP_SOFTMAX:
    case RLX_OP_LOG_SOFTMAX:
    case RLX_OP_CUMSUM:
    case RLX_OP_ARG_MAX:
    case RLX_OP_ARG_MIN:
    case RLX_OP_TOPK:
      if (!only_first_rows(c)) return "only the data operand may carry rows";
      return attr_axis(c) != 0 ? NULL : "it works along axis 0";
    case RLX_OP_LAYER_NORM_2D:
    case RLX_OP_GROUP_NORM:
    case RLX_OP_FUSED_SWIGLU:
      return only_first_rows(c) ? NULL : "only x may carry rows";
    case RLX_OP_FUSED_RESIDUAL_LN:
    case RLX_OP_FUSED_RESIDUAL_RMS_NORM:
      return broadcast_rule(c);
    case RLX_OP_REDUCE:
      return reduce_rule(c);
    case RLX_OP_TRANSPOSE: {
      size_t np;
      const int64_t *perm = rlx_node_is(n, "perm", &np);
      int64_t p0 = np ? perm[0] : in_type(c, 0)->rank - 1;
      return p0 == 0 ? NULL : "it moves axis 0";
    }
    case RLX_OP_NARROW:
      return attr_axis(c) != 0 ? NULL : "it narrows axis 0";
    case RLX_OP_SLICE:
      return slice_rule(c);
    case RLX_OP_CONCAT:
      for (uint32_t i = 0; i < n->n_in; i++)
        if (!in_rows(c, i)) return "an operand without rows is concatenated";
      return attr_axis(c) != 0 ? NULL : "it concatenates along axis 0";
    case RLX_OP_PAD: {
      size_t np;
      const int64_t *p = rlx_node_is(n, "pads", &np);
      return p[0] == 0 && p[np / 2] == 0 ? NULL : "it pads axis 0";
    }
    case RLX_OP_TILE: {
      size_t nr;
      return rlx_node_is(n, "repeats", &nr)[0] == 1 ? NULL : "it tiles axis 0";
    }
    case RLX_OP_GATHER:
    case RLX_OP_GATHER_ELEMENTS:
      return gather_rule(c);
    case RLX_OP_RESHAPE:
    case RLX_OP_EXPAND:
      return "its shape attribute holds the full extent";
    case RLX_OP_SAMPLE:
      return "its random draws depend on the extent";
    default:
      return "it is not known to keep the rows of axis 0 independent";
  }
}

/* UNIMPLEMENTED when no input's declared dim 0 is `upper` (nothing would be cut), naming an input
 * whose dim 0 is symbolic when there is one. */
static rlx_status *extent_inputs(const rlx_graph *g, int64_t upper) {
  const char *symbolic = NULL;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const rlx_type *t = &g->types[g->nodes[g->inputs[i]].out0];
    if (t->rank >= 1 && t->dims[0] == upper) return NULL;
    if (t->rank >= 1 && t->dims[0] < 0 && !symbolic) symbolic = g->nodes[g->inputs[i]].name;
  }
  if (symbolic)
    return RLX_ERR(UNIMPLEMENTED, "active extent: no input has a static dim 0 of %lld; input '%s' has a symbolic dim 0, whose size "
                                  "each run already sets (pass the rows you have, or declare dim 0 as %lld to use the extent)",
                   (long long)upper, symbolic, (long long)upper);
  return RLX_ERR(UNIMPLEMENTED, "active extent: no input has a dim 0 of %lld, so there are no rows to cut", (long long)upper);
}

rlx_status *rlx_exec_check_extent(const rlx_graph *g, int64_t upper) {
  RLX_TRY(extent_inputs(g, upper));
  bool *rows = calloc(g->n_vals ? g->n_vals : 1, sizeof *rows);
  if (!rows) return RLX_OOM();
  rlx_status *st = NULL;
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    const rlx_type *t0 = &g->types[n->out0];
    if (n->op == RLX_OP_INPUT) {
      rows[n->out0] = t0->rank >= 1 && t0->dims[0] == upper;
      continue;
    }
    extent_ctx c = {g, n, rows};
    bool any = false;
    for (uint32_t i = 0; i < n->n_in; i++) any |= rows[n->in[i]];
    if (!any) continue;
    const char *why = extent_blocker(&c);
    for (uint32_t i = 0; !why && i < n->n_out; i++) {
      const rlx_type *t = &g->types[n->out0 + i];
      if (t->rank < 1 || t->dims[0] != upper) why = "its output does not keep the rows on axis 0";
    }
    if (why) st = node_error(g, n, "active extent", why);
    for (uint32_t i = 0; i < n->n_out; i++) rows[n->out0 + i] = true;
  }
  free(rows);
  return st;
}
