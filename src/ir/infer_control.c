/* infer_control.c: inference for the control family (If, Assert, While, Scan; see rlx/op_table.h). */
#include <stdlib.h>

#include "ir/infer_util.h"

/* The sub-graph attribute `name` of the node, typed against operands in[0..n). *types is
 * malloc'ed (sub->n_vals entries) on success. */
static rlx_status *bind_sub(const rlx_infer_ctx *c, const char *name, const rlx_type *in, size_t n, const rlx_graph **sub,
                            rlx_type **types) {
  const rlx_graph *s = rlx_node_g(c->n, name);
  if (s == c->g) FAIL(INVALID_ARGUMENT, "attribute '%s' is the graph the node is added to", name);
  for (uint32_t a = 0; a < c->n->n_attrs; a++)
    if (c->n->attrs[a].graph == s && strcmp(c->n->attrs[a].name, name))
      FAIL(INVALID_ARGUMENT, "attributes '%s' and '%s' are the same graph (each sub-graph is owned by one attribute)", name,
           c->n->attrs[a].name);
  rlx_type *t = malloc(sizeof(rlx_type) * (s->n_vals ? s->n_vals : 1));
  if (!t) return RLX_OOM();
  rlx_status *st = rlx_subgraph_bind(s, in, n, t);
  if (st) {
    free(t);
    return rlx_status_annotate(st, "attribute '%s'", name);
  }
  *sub = s;
  *types = t;
  return NULL;
}

static const rlx_type *sub_out(const rlx_graph *s, const rlx_type *types, size_t i) { return &types[s->outputs[i]]; }

/* Checks that `got` (sub-graph output) has the type `want` (an operand or the other branch);
 * dims may differ only while symbolic. */
static rlx_status *same_type(const rlx_type *want, const rlx_type *got, const char *what, size_t i, const char *vs) {
  bool ok = want->dtype == got->dtype && want->rank == got->rank;
  for (int d = 0; ok && d < want->rank; d++) ok = rlx_dim_compatible(want->dims[d], got->dims[d]);
  if (!ok) FAIL(INVALID_ARGUMENT, "%s %zu is %s but %s is %s; the types must match", what, i, TSTR(got), vs, TSTR(want));
  return NULL;
}

static rlx_status *check_outputs(const rlx_infer_ctx *c, size_t n) {
  if (n > RLX_MAX_NODE_OUTPUTS) FAIL(INVALID_ARGUMENT, "the node would have %zu outputs; at most %d are supported", n, RLX_MAX_NODE_OUTPUTS);
  return NULL;
}

/* If(cond, captures...): then/else outputs pairwise of one type; cond broadcasts into each. */
static rlx_status *infer_if(rlx_infer_ctx *c) {
  if (IN(0)->dtype != RLX_DTYPE_BOOL) FAIL(INVALID_ARGUMENT, "input 0 (cond) must be bool, got %s", TSTR(IN(0)));
  const rlx_graph *gt, *ge;
  rlx_type *tt = NULL, *te = NULL;
  rlx_status *st = bind_sub(c, "then_branch", IN(1), (size_t)NIN - 1, &gt, &tt);
  if (!st) st = bind_sub(c, "else_branch", IN(1), (size_t)NIN - 1, &ge, &te);
  if (!st && gt->n_outputs != ge->n_outputs)
    st = RLX_ERR(INVALID_ARGUMENT, "then_branch has %zu outputs but else_branch has %zu; they must match", gt->n_outputs, ge->n_outputs);
  if (!st) st = check_outputs(c, gt->n_outputs);
  for (size_t i = 0; !st && i < gt->n_outputs; i++) {
    const rlx_type *a = sub_out(gt, tt, i), *b = sub_out(ge, te, i);
    st = same_type(a, b, "else_branch output", i, "the then_branch output");
    if (st) break;
    *OUT(i) = *a;
    for (int d = 0; d < a->rank; d++)
      if (a->dims[d] < 0) OUT(i)->dims[d] = b->dims[d]; /* the static one when a branch knows it */
    rlx_type bc;
    st = rlx_shape_broadcast(IN(0), OUT(i), &bc);
    bool same = !st && bc.rank == OUT(i)->rank;
    for (int d = 0; same && d < bc.rank; d++) same = bc.dims[d] == OUT(i)->dims[d];
    if (!st && !same) st = RLX_ERR(INVALID_ARGUMENT, "cond %s must broadcast into output %zu %s without changing its shape", TSTR(IN(0)), i, TSTR(OUT(i)));
    else if (st) st = rlx_status_annotate(st, "cond and output %zu", i);
  }
  if (!st) c->n_out = (uint32_t)gt->n_outputs;
  free(tt);
  free(te);
  return st;
}

/* While(carried...): cond -> one bool element; body -> the carried types. */
static rlx_status *infer_while(rlx_infer_ctx *c) {
  if (AI("max_iterations") < 0) FAIL(INVALID_ARGUMENT, "attribute 'max_iterations' must be >= 0, got %lld", (long long)AI("max_iterations"));
  const rlx_graph *gc, *gb;
  rlx_type *tc = NULL, *tb = NULL;
  rlx_status *st = bind_sub(c, "cond", IN(0), (size_t)NIN, &gc, &tc);
  if (!st) st = bind_sub(c, "body", IN(0), (size_t)NIN, &gb, &tb);
  if (!st) {
    const rlx_type *k = sub_out(gc, tc, 0);
    bool one = gc->n_outputs == 1 && k->dtype == RLX_DTYPE_BOOL;
    for (int d = 0; one && d < k->rank; d++) one = k->dims[d] == 1;
    if (!one) st = RLX_ERR(INVALID_ARGUMENT, "the cond sub-graph must have one output, a bool scalar (or one element); got %zu outputs, the first %s",
                           gc->n_outputs, TSTR(k));
  }
  if (!st && gb->n_outputs != (size_t)NIN)
    st = RLX_ERR(INVALID_ARGUMENT, "the body sub-graph has %zu outputs but there are %d carried values", gb->n_outputs, NIN);
  for (int i = 0; !st && i < NIN; i++) st = same_type(IN(i), sub_out(gb, tb, (size_t)i), "body output", (size_t)i, "the carried value");
  for (int i = 0; !st && i < NIN; i++) *OUT(i) = *IN(i);
  if (!st) c->n_out = (uint32_t)NIN;
  free(tc);
  free(tb);
  return st;
}

/* The type of `length` values of type t stacked on a new leading axis. */
static rlx_status *stacked(const rlx_type *t, int64_t len, rlx_type *out) {
  if (t->rank == RLX_MAX_RANK) FAIL(INVALID_ARGUMENT, "stacking %s over the steps would exceed rank %d", TSTR(t), RLX_MAX_RANK);
  *out = *t;
  out->rank++;
  out->dims[0] = len;
  memcpy(out->dims + 1, t->dims, sizeof(int64_t) * (size_t)t->rank);
  return NULL;
}

/* Scan(carries..., bcast..., xs...) -> carries..., [trajectories...], ys...: the body sees
 * (carries, bcast, xs[t]) and returns (carries, ys[t]). */
static rlx_status *infer_scan(rlx_infer_ctx *c) {
  int64_t len = AI("length"), nb = AI("num_bcast"), nx = AI("num_xs"), traj = AI("save_trajectory");
  if (len < 0) FAIL(INVALID_ARGUMENT, "attribute 'length' must be >= 0, got %lld", (long long)len);
  if (nb < 0 || nx < 0 || nb + nx > NIN)
    FAIL(INVALID_ARGUMENT, "num_bcast %lld and num_xs %lld must be >= 0 and leave the carries among the %d inputs", (long long)nb,
         (long long)nx, NIN);
  if (traj != 0 && traj != 1) FAIL(INVALID_ARGUMENT, "attribute 'save_trajectory' must be 0 or 1, got %lld", (long long)traj);
  if (AI("num_checkpoints") < 0) FAIL(INVALID_ARGUMENT, "attribute 'num_checkpoints' must be >= 0, got %lld", (long long)AI("num_checkpoints"));
  int nc = NIN - (int)nb - (int)nx;
  rlx_type ops[256];
  for (int i = 0; i < NIN; i++) {
    ops[i] = *IN(i);
    if (i < nc + nb) continue;
    if (IN(i)->rank < 1 || !rlx_dim_compatible(IN(i)->dims[0], len))
      FAIL(INVALID_ARGUMENT, "input %d (xs %d) is %s; it must have rank >= 1 and a leading dim of length %lld", i, i - nc - (int)nb,
           TSTR(IN(i)), (long long)len);
    ops[i].rank--;
    memmove(ops[i].dims, ops[i].dims + 1, sizeof(int64_t) * (size_t)ops[i].rank);
  }
  const rlx_graph *gb;
  rlx_type *tb;
  RLX_TRY(bind_sub(c, "body", ops, (size_t)NIN, &gb, &tb));
  size_t ny = gb->n_outputs >= (size_t)nc ? gb->n_outputs - (size_t)nc : 0;
  rlx_status *st = gb->n_outputs < (size_t)nc
                       ? RLX_ERR(INVALID_ARGUMENT, "the body has %zu outputs but there are %d carries (it returns the carries, then the per-step outputs)",
                                 gb->n_outputs, nc)
                       : check_outputs(c, (size_t)nc * (traj ? 2 : 1) + ny);
  for (int i = 0; !st && i < nc; i++) st = same_type(IN(i), sub_out(gb, tb, (size_t)i), "body output", (size_t)i, "the carry");
  size_t k = 0;
  for (int i = 0; !st && i < nc; i++) *OUT(k++) = *IN(i);
  for (int i = 0; !st && traj && i < nc; i++) st = stacked(IN(i), len, OUT(k++));
  for (size_t j = 0; !st && j < ny; j++) st = stacked(sub_out(gb, tb, (size_t)nc + j), len, OUT(k++));
  if (!st) c->n_out = (uint32_t)k;
  free(tb);
  return st;
}

rlx_status *rlx_infer_control(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_IF: return infer_if(c);
    case RLX_OP_ASSERT:
      if (IN(0)->dtype != RLX_DTYPE_BOOL) FAIL(INVALID_ARGUMENT, "input 0 (cond) must be bool, got %s", TSTR(IN(0)));
      RLX_TRY(check_outputs(c, (size_t)NIN - 1));
      for (int i = 1; i < NIN; i++) *OUT(i - 1) = *IN(i);
      c->n_out = (uint32_t)NIN - 1;
      return NULL;
    case RLX_OP_WHILE: return infer_while(c);
    case RLX_OP_SCAN: return infer_scan(c);
    default: FAIL(INTERNAL, "op %s is not in the control family", rlx_op_name(OP));
  }
}
