/* norm.c: layer and RMS normalization written out, fused into LayerNorm / RmsNorm
 * (rlx/optimize.h), float dtypes:
 *   (x - m) / sqrt(mean((x - m)^2) + eps), m = mean(x)     -> LayerNorm(x, 1)   (Ba et al. 2016)
 *   x / sqrt(mean(x^2) + eps)                               -> RmsNorm(x, 1)     (Zhang & Sennrich 2019)
 * with the means Reduce(mean) over one axis keeping it, the square as Pow(., 2) or a product, the
 * division as Div, or a Mul by Rsqrt / Reciprocal(Sqrt); then
 *   Mul(norm(x, ones), gamma) -> norm(x, gamma) and Add(norm(x, gamma), beta) -> norm(x, gamma, beta)
 * for gamma / beta one value per position along the axis. Also the moments form that jax's
 * flax.linen.LayerNorm exports (tf2onnx), over any one axis:
 *   (x - m) * (rsqrt(max(E[x^2] - m^2, 0) + eps) [* gamma]),  m = E[x]     -> LayerNorm(x, gamma|1)
 * with each mean a Reduce(mean) or a Reduce(sum) scaled by 1/N, kept or not (Reshapes that put the
 * size-1 axis back are looked through), the clamp at 0 optional; the fused op computes the
 * variance from the centred values, which equals E[x^2] - m^2 in exact arithmetic and loses less
 * in float32. Matched on the rewritten graph after copying each node. */
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"

/* v = mean of u over one axis, kept: *u, *axis (non-negative). */
static bool mean_of(const rlx_graph *d, rlx_value v, rlx_value *u, int64_t *axis) {
  const rlx_node *r = rlx_opt_def(d, v, RLX_OP_REDUCE);
  size_t na;
  const int64_t *ax = r ? rlx_node_is(r, "axes", &na) : NULL;
  if (!r || strcmp(rlx_node_s(r, "kind"), "mean") || !rlx_node_i(r, "keepdims") || na != 1) return false;
  int rank = d->types[r->in[0]].rank;
  *axis = ax[0] < 0 ? ax[0] + rank : ax[0];
  *u = r->in[0];
  return *axis >= 0 && *axis < rank;
}

/* v = u^2: Pow(u, 2) or Mul(u, u). */
static bool square_of(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *u) {
  double c;
  const rlx_node *m = rlx_opt_def(d, v, RLX_OP_MUL);
  if (m && m->in[0] == m->in[1]) return *u = m->in[0], true;
  return rlx_opt_bin_scalar(d, cx, v, RLX_OP_POW, u, &c) && c == 2;
}

/* v = num / sqrt(den + eps): Div(num, Sqrt(.)), Mul(num, Rsqrt(.)), Mul(num, Reciprocal(Sqrt(.))). */
static bool div_sqrt(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *num, rlx_value *den, double *eps) {
  const rlx_node *dv = rlx_opt_def(d, v, RLX_OP_DIV), *m = rlx_opt_def(d, v, RLX_OP_MUL);
  rlx_value inner = 0;
  bool ok = false;
  if (dv) {
    const rlx_node *sq = rlx_opt_def(d, dv->in[1], RLX_OP_SQRT);
    if (sq) *num = dv->in[0], inner = sq->in[0], ok = true;
  }
  for (int i = 0; !ok && m && i < 2; i++) {
    const rlx_node *rs = rlx_opt_def(d, m->in[1 - i], RLX_OP_RSQRT), *rc = rlx_opt_def(d, m->in[1 - i], RLX_OP_RECIPROCAL);
    const rlx_node *sq = rc ? rlx_opt_def(d, rc->in[0], RLX_OP_SQRT) : NULL;
    if (rs) *num = m->in[i], inner = rs->in[0], ok = true;
    else if (sq) *num = m->in[i], inner = sq->in[0], ok = true;
  }
  return ok && rlx_opt_bin_scalar(d, cx, inner, RLX_OP_ADD, den, eps) && *eps >= 0;
}

/* p (of x's dtype) as one value per position along axis of x: a rank-1 [C] value of d. */
static bool along_axis(const rlx_graph *d, rlx_value p, rlx_value x, int64_t axis) {
  const rlx_type *tp = &d->types[p], *tx = &d->types[x];
  if (tp->dtype != tx->dtype || tp->rank > tx->rank || tp->rank < 1) return false;
  for (int i = 0; i < tp->rank; i++) {
    int xi = tx->rank - tp->rank + i;
    if (xi == axis ? tp->dims[i] != tx->dims[axis] : tp->dims[i] != 1) return false;
  }
  return tx->rank - 1 - axis < tp->rank; /* the axis is covered */
}

/* v through any Reshapes feeding it. */
static rlx_value through_reshapes(const rlx_graph *d, rlx_value v) {
  for (const rlx_node *r; (r = rlx_opt_def(d, v, RLX_OP_RESHAPE));) v = r->in[0];
  return v;
}

/* The dims of x with its axis made 1: the shape of a mean over it, kept. */
static bool is_kept_stat(const rlx_graph *d, rlx_value v, rlx_value x, int64_t axis) {
  const rlx_type *tv = &d->types[v], *tx = &d->types[x];
  if (tv->rank != tx->rank || tv->dtype != tx->dtype) return false;
  for (int i = 0; i < tx->rank; i++)
    if (tv->dims[i] != (i == axis ? 1 : tx->dims[i]) || tv->dims[i] < 0) return false;
  return true;
}

/* v (through Reshapes) = E[u] over one axis: Reduce(mean), or Reduce(sum) times 1/N (or divided
 * by N), keepdims either way. *u, *axis (non-negative, of u). */
static bool any_mean_of(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *u, int64_t *axis) {
  rlx_value w;
  double a, b;
  rlx_opt_affine(d, cx, through_reshapes(d, v), &w, &a, &b);
  const rlx_node *r = rlx_opt_def(d, w, RLX_OP_REDUCE);
  size_t na;
  const int64_t *ax = r ? rlx_node_is(r, "axes", &na) : NULL;
  if (!r || na != 1 || b != 0) return false;
  const rlx_type *tu = &d->types[r->in[0]];
  int64_t k = ax[0] < 0 ? ax[0] + tu->rank : ax[0];
  if (k < 0 || k >= tu->rank || tu->dims[k] < 1) return false;
  bool mean = !strcmp(rlx_node_s(r, "kind"), "mean") && a == 1;
  bool sum = !strcmp(rlx_node_s(r, "kind"), "sum") && rlx_opt_near(a * (double)tu->dims[k], 1);
  if (!mean && !sum) return false;
  return *u = r->in[0], *axis = k, true;
}

/* The moments form (see the top): v = Mul(Sub(x, m), s), s = R or Mul(R, gamma),
 * R = rsqrt(D) as Rsqrt or Reciprocal(Sqrt), D = Add(V, eps) with V = [Max(., 0) of] E[x^2] - m'^2. */
static bool moments(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *x, int64_t *axis, double *eps, rlx_value *gamma) {
  const rlx_node *mul = rlx_dtype_is_float(d->types[v].dtype) ? rlx_opt_def(d, v, RLX_OP_MUL) : NULL;
  for (int i = 0; mul && i < 2; i++) {
    const rlx_node *sub = rlx_opt_def(d, mul->in[i], RLX_OP_SUB);
    rlx_value xm, sq, xs, xq, var, rinv = mul->in[1 - i], g = 0;
    int64_t a1, a2, a3;
    if (!sub || !any_mean_of(d, cx, sub->in[1], &xm, &a1) || xm != sub->in[0] || !is_kept_stat(d, sub->in[1], xm, a1) ||
        !rlx_type_same(&d->types[v], &d->types[xm]))
      continue;
    const rlx_node *sm = rlx_opt_def(d, rinv, RLX_OP_MUL);
    for (int j = 0; sm && j < 2 && !g; j++)
      if (is_kept_stat(d, sm->in[j], xm, a1)) rinv = sm->in[j], g = sm->in[1 - j];
    if (!is_kept_stat(d, rinv, xm, a1)) continue;
    const rlx_node *rs = rlx_opt_def(d, rinv, RLX_OP_RSQRT), *rc = rlx_opt_def(d, rinv, RLX_OP_RECIPROCAL);
    const rlx_node *sq_root = rc ? rlx_opt_def(d, rc->in[0], RLX_OP_SQRT) : NULL;
    rlx_value den = rs ? rs->in[0] : sq_root ? sq_root->in[0] : 0;
    if ((!rs && !sq_root) || !rlx_opt_bin_scalar(d, cx, through_reshapes(d, den), RLX_OP_ADD, &var, eps) || *eps < 0) continue;
    const rlx_node *mx = rlx_opt_def(d, var, RLX_OP_MAX);
    double zero;
    for (int j = 0; mx && j < 2; j++)
      if (rlx_opt_scalar(d, mx->in[j], cx, &zero) && zero == 0 && rlx_type_same(&d->types[mx->in[1 - j]], &d->types[var])) {
        var = mx->in[1 - j];
        break;
      }
    const rlx_node *dif = rlx_opt_def(d, through_reshapes(d, var), RLX_OP_SUB);
    if (!dif || !any_mean_of(d, cx, dif->in[0], &sq, &a2) || !square_of(d, cx, sq, &xs) || xs != xm || a2 != a1) continue;
    if (!square_of(d, cx, dif->in[1], &xq) || !any_mean_of(d, cx, xq, &xs, &a3) || xs != xm || a3 != a1) continue;
    if (g && !along_axis(d, g, xm, a1)) continue;
    return *x = xm, *axis = a1, *gamma = g, true;
  }
  return false;
}

/* The core forms: *op LayerNorm or RmsNorm of *x over *axis with *eps. */
static bool core(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_op *op, rlx_value *x, int64_t *axis, double *eps) {
  rlx_value num, den, sq, c, mx, xx;
  int64_t a1, a2;
  if (!rlx_dtype_is_float(d->types[v].dtype) || !div_sqrt(d, cx, v, &num, &den, eps)) return false;
  if (!mean_of(d, den, &sq, &a1) || !square_of(d, cx, sq, &c)) return false;
  const rlx_node *sub = rlx_opt_def(d, num, RLX_OP_SUB);
  if (c == num && sub && sub->in[0] != sub->in[1] && mean_of(d, sub->in[1], &mx, &a2) && mx == sub->in[0] && a1 == a2)
    return *op = RLX_OP_LAYER_NORM, *x = mx, *axis = a1, true;
  xx = num;
  if (c == xx) return *op = RLX_OP_RMS_NORM, *x = xx, *axis = a1, true;
  return false;
}

static rlx_status *as_vector(rlx_graph *d, const rlx_node *n, rlx_value p, int64_t C, rlx_value *out) {
  if (d->types[p].rank == 1) return *out = p, NULL;
  rlx_attr a = RLX_ATTR_IS("shape", 1, &C);
  return rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &p, 1, &a, out);
}

static bool all_ones(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v) {
  double *w;
  int64_t cnt;
  if (!rlx_opt_const_f64(d, v, cx, &w, &cnt)) return false;
  bool ones = true;
  for (int64_t i = 0; i < cnt; i++) ones &= w[i] == 1;
  free(w);
  return ones;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_MUL && n->op != RLX_OP_DIV && n->op != RLX_OP_ADD) return NULL;
  RLX_TRY(rlx_rw_copy(r->rw, n));
  *fired = true;
  rlx_graph *d = r->rw->dst;
  rlx_value v = rlx_opt_mapped(r, n->out0), x, y, in[3];
  rlx_op op;
  int64_t axis;
  double eps;
  rlx_value scale = 0;
  bool mom = false;
  if (core(d, r->cx, v, &op, &x, &axis, &eps) || (mom = moments(d, r->cx, v, &x, &axis, &eps, &scale))) {
    int64_t C = d->types[x].dims[axis];
    if (mom) op = RLX_OP_LAYER_NORM;
    if (scale) {
      RLX_TRY(as_vector(d, n, scale, C, &in[1]));
    } else {
      rlx_type tg = {.dtype = d->types[x].dtype, .rank = 1, .dims = {C}};
      if (tg.dtype != RLX_DTYPE_F32 && tg.dtype != RLX_DTYPE_F64) return NULL;
      double *ones = malloc((size_t)(C ? C : 1) * sizeof *ones);
      if (!ones) return RLX_OOM();
      for (int64_t i = 0; i < C; i++) ones[i] = 1;
      rlx_status *st = rlx_opt_const_from_f64(d, &tg, ones, &in[1]);
      free(ones);
      RLX_TRY(st);
    }
    in[0] = x;
    rlx_attr a[2] = {RLX_ATTR_I("axis", axis), RLX_ATTR_F("epsilon", eps)};
    RLX_TRY(rlx_graph_add1(d, op, n->name, 2, in, 2, a, &y));
    rlx_opt_replace(r, n, 0, y);
    return NULL;
  }
  /* Mul(norm(x, ones), gamma), Add(norm(x, gamma), beta) */
  if (n->op == RLX_OP_DIV) return NULL;
  const rlx_node *m = rlx_opt_producer(d, v);
  for (int i = 0; i < 2; i++) {
    const rlx_node *nn = rlx_opt_producer(d, m->in[i]);
    if ((nn->op != RLX_OP_LAYER_NORM && nn->op != RLX_OP_RMS_NORM) || nn->n_in != 2) continue;
    rlx_value p = m->in[1 - i], nx = nn->in[0], gamma = nn->in[1];
    int64_t ax = rlx_node_i(nn, "axis");
    ax = ax < 0 ? ax + d->types[nx].rank : ax;
    if (!rlx_type_same(&d->types[m->in[i]], &d->types[v]) || !along_axis(d, p, nx, ax)) continue;
    if (n->op == RLX_OP_MUL && !all_ones(d, r->cx, gamma)) continue;
    rlx_value vec;
    RLX_TRY(as_vector(d, n, p, d->types[nx].dims[ax], &vec));
    nn = rlx_opt_producer(d, m->in[i]); /* nodes may have moved */
    in[0] = nx, in[1] = n->op == RLX_OP_MUL ? vec : gamma, in[2] = vec;
    rlx_attr a[2];
    RLX_TRY(rlx_rw_attrs(nn, a));
    RLX_TRY(rlx_graph_add1(d, nn->op, n->name, n->op == RLX_OP_MUL ? 2 : 3, in, nn->n_attrs, a, &y));
    rlx_opt_replace(r, n, 0, y);
    return NULL;
  }
  return NULL;
}

rlx_status *rlx_pass_norm(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
