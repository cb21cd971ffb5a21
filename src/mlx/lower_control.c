/* lower_control.c: MLX lowering of the control family (If, Assert, While, Scan; see rlx/op_table.h).
 * Loops are unrolled: MLX graphs have no control flow, and every shape is static once bound. */
#include <stdlib.h>
#include <string.h>

#include "mlx/lower.h"

/* Records st (if any) on the context; true while the lowering has not failed. */
static bool ok(rlx_lower *L, rlx_status *st) {
  if (st) rlx_mx_fail(L->mx, st);
  return !rlx_mx_failed(L->mx);
}

static bool prepare(rlx_lower *L, const rlx_node *n, const char *attr, const rlx_type *in, size_t cnt, rlx_sub *out) {
  return ok(L, rlx_status_annotate(rlx_sub_prepare(L, rlx_node_g(n, attr), in, cnt, out), "%s", attr));
}

static bool run(rlx_lower *L, const rlx_sub *s, const char *attr, rlx_mx_arr *const *captures, rlx_mx_arr **outs) {
  return ok(L, rlx_status_annotate(rlx_sub_run(L, s, captures, outs), "%s", attr));
}

/* Concrete types of inputs [from, from + cnt) of n. */
static void in_types(const rlx_lower *L, const rlx_node *n, uint32_t from, uint32_t cnt, rlx_type *t) {
  for (uint32_t i = 0; i < cnt; i++) t[i] = *rlx_in_type(L, n, from + i);
}

/* The one element of a bool array as a scalar. */
static rlx_mx_arr *scalar_of(rlx_lower *L, rlx_mx_arr *a) { return rlx_mx_reshape(L->mx, a, 0, NULL); }

/* If: both branches run on the captures; output i = where(cond, then_i, else_i). */
static void lower_if(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_type t[256];
  in_types(L, n, 1, n->n_in - 1, t);
  rlx_sub st = {0}, se = {0};
  rlx_mx_arr *a[RLX_MAX_NODE_OUTPUTS], *b[RLX_MAX_NODE_OUTPUTS];
  /* the index checks of each branch count only where cond takes it (for some element) */
  rlx_mx_arr *outer = L->guard, *cb = rlx_mx_astype(L->mx, in[0], RLX_DTYPE_BOOL);
  rlx_mx_arr *cond = rlx_mx_reduce(L->mx, cb, 7, 0, NULL, false);
  rlx_mx_arr *not_cond = rlx_mx_reduce(L->mx, rlx_mx_unary(L->mx, RLX_MXU_LOGICAL_NOT, cb), 7, 0, NULL, false);
  if (outer) cond = rlx_mx_binary(L->mx, RLX_MXB_LOGICAL_AND, cond, outer), not_cond = rlx_mx_binary(L->mx, RLX_MXB_LOGICAL_AND, not_cond, outer);
  bool done = prepare(L, n, "then_branch", t, n->n_in - 1, &st) && prepare(L, n, "else_branch", t, n->n_in - 1, &se);
  L->guard = cond;
  done = done && run(L, &st, "then_branch", in + 1, a);
  L->guard = not_cond;
  done = done && run(L, &se, "else_branch", in + 1, b);
  L->guard = outer;
  if (done)
    for (uint32_t i = 0; i < n->n_out; i++) out[i] = rlx_mx_where(L->mx, in[0], a[i], b[i]);
  rlx_sub_free(&st);
  rlx_sub_free(&se);
}


/* While, unrolled max_iterations times. active = cond held at every step so far; the carried
 * values change only while active (where(active, body, carried)), so they freeze once cond is
 * false. In eager mode active is read on the host: the loop stops there instead. */
static void lower_while(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  uint32_t nc = n->n_in;
  rlx_type t[256];
  in_types(L, n, 0, nc, t);
  rlx_sub sc = {0}, sb = {0};
  for (uint32_t i = 0; i < nc; i++) out[i] = in[i];
  if (prepare(L, n, "cond", t, nc, &sc) && prepare(L, n, "body", t, nc, &sb)) {
    rlx_mx_arr *active = NULL, *next[256];
    for (int64_t it = 0; it < rlx_node_i(n, "max_iterations"); it++) {
      rlx_mx_arr *c;
      if (!run(L, &sc, "cond", out, &c)) break;
      c = scalar_of(L, c);
      active = active ? rlx_mx_binary(L->mx, RLX_MXB_LOGICAL_AND, active, c) : c;
      bool go = true;
      if (L->eager && !rlx_mx_to_host(L->mx, active, &go, 1)) break;
      rlx_mx_arr *outer = L->guard; /* the body's index checks count only while active */
      L->guard = outer ? rlx_mx_binary(L->mx, RLX_MXB_LOGICAL_AND, active, outer) : active;
      bool ran = go && run(L, &sb, "body", out, next);
      L->guard = outer;
      if (!ran) break;
      for (uint32_t i = 0; i < nc; i++) out[i] = L->eager ? next[i] : rlx_mx_where(L->mx, active, next[i], out[i]);
    }
  }
  rlx_sub_free(&sc);
  rlx_sub_free(&sb);
}

/* Scan, unrolled `length` times: carries = body(carries, bcast, xs[t])[:nc]; the per-step
 * carries (save_trajectory) and the body's further outputs (ys) are stacked on a new axis 0. */
static void lower_scan(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  int64_t len = rlx_node_i(n, "length");
  uint32_t nx = (uint32_t)rlx_node_i(n, "num_xs"), nc = n->n_in - (uint32_t)rlx_node_i(n, "num_bcast") - nx;
  uint32_t x0 = n->n_in - nx, nstack = n->n_out - nc; /* the stacked outputs: trajectories, then ys */
  bool traj = rlx_node_i(n, "save_trajectory");
  rlx_type t[256];
  in_types(L, n, 0, n->n_in, t);
  for (uint32_t i = x0; i < n->n_in; i++) { /* the body sees one step of each xs */
    t[i].rank--;
    memmove(t[i].dims, t[i].dims + 1, sizeof(int64_t) * (size_t)t[i].rank);
  }
  rlx_mx_arr **steps = calloc((size_t)(len ? len : 1) * (nstack ? nstack : 1), sizeof *steps);
  if (!steps) {
    ok(L, RLX_OOM());
    return;
  }
  rlx_sub sb = {0};
  rlx_mx_arr *ops[256], *res[RLX_MAX_NODE_OUTPUTS];
  for (uint32_t i = 0; i < x0; i++) ops[i] = in[i];
  if (prepare(L, n, "body", t, n->n_in, &sb)) {
    for (int64_t s = 0; s < len; s++) {
      for (uint32_t i = x0; i < n->n_in; i++)
        ops[i] = rlx_mx_reshape(L->mx, rlx_l_narrow(L, in[i], rlx_in_type(L, n, i), 0, s, 1), t[i].rank, t[i].dims);
      if (!run(L, &sb, "body", ops, res)) break;
      for (uint32_t i = 0; i < nc; i++) ops[i] = res[i];
      for (uint32_t j = 0; j < nstack; j++) steps[(size_t)j * (size_t)len + (size_t)s] = res[traj ? j : nc + j];
    }
  }
  for (uint32_t i = 0; i < nc; i++) out[i] = ops[i];
  for (uint32_t j = 0; j < nstack; j++) {
    const rlx_type *o = rlx_out_type(L, n, nc + j);
    out[nc + j] = len ? rlx_mx_stack(L->mx, steps + (size_t)j * (size_t)len, (size_t)len, 0) : rlx_mx_full(L->mx, o->rank, o->dims, 0, o->dtype);
  }
  rlx_sub_free(&sb);
  free(steps);
}

void rlx_lower_control(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  switch (n->op) {
    case RLX_OP_IF: lower_if(L, n, in, out); break;
    case RLX_OP_ASSERT:
      rlx_l_assert(L, n, in[0]);
      for (uint32_t i = 1; i < n->n_in; i++) out[i - 1] = in[i];
      break;
    case RLX_OP_WHILE: lower_while(L, n, in, out); break;
    case RLX_OP_SCAN: lower_scan(L, n, in, out); break;
    default: rlx_lower_fail(L, RLX_STATUS_INTERNAL, "op %s is not in the control family", rlx_op_name(n->op));
  }
}
