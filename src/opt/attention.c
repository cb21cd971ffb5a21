/* attention.c: scaled dot-product attention written out, fused into Attention (rlx/optimize.h;
 * lowered to MLX fast::scaled_dot_product_attention). On rank-4 q[B,H,Sq,D], k[B,H,Sk,D],
 * v[B,H,Sk,Dv] of one float dtype:
 *   MatMul(Softmax(s (q' k^T) [+ mask]), v)  ->  Attention(q, k, v, [mask]; score_scale s a)
 * where q' = a q (a scalar scale of q, or none), k^T = Transpose(k, [0,1,3,2]) (or any [B,H,D,Sk]
 * value, transposed back), s a scalar Mul / Div (or none), mask an additive float tensor of rank
 * 2..4 broadcasting to [B,H,Sq,Sk] (Attention's "bias" mask), and the Softmax over the last axis,
 * also written as Reshape to [B H Sq, Sk], Softmax, Reshape back (opset < 13 exports). */
#include "opt/opt.h"

/* v = Softmax over the last axis of *s (rank 4). */
static bool softmax_last(const rlx_graph *d, rlx_value v, rlx_value *s) {
  const rlx_node *r = rlx_opt_def(d, v, RLX_OP_RESHAPE), *sm;
  if (r) {
    sm = rlx_opt_def(d, r->in[0], RLX_OP_SOFTMAX);
    const rlx_node *r2 = sm ? rlx_opt_def(d, sm->in[0], RLX_OP_RESHAPE) : NULL;
    if (!r2) return false;
    const rlx_type *t2 = &d->types[sm->in[0]];
    int64_t ax = rlx_node_i(sm, "axis");
    if (ax != -1 && ax != t2->rank - 1) return false;
    *s = r2->in[0];
    const rlx_type *ts = &d->types[*s];
    return rlx_type_same(ts, &d->types[v]) && ts->rank == 4 && t2->dims[t2->rank - 1] == ts->dims[3];
  }
  sm = rlx_opt_def(d, v, RLX_OP_SOFTMAX);
  if (!sm || d->types[v].rank != 4) return false;
  int64_t ax = rlx_node_i(sm, "axis");
  *s = sm->in[0];
  return ax == -1 || ax == 3;
}

static bool is_swap_last2(const rlx_node *t) {
  size_t np;
  const int64_t *p = rlx_node_is(t, "perm", &np);
  return np == 4 && p[0] == 0 && p[1] == 1 && p[2] == 3 && p[3] == 2;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_MATMUL) return NULL;
  RLX_TRY(rlx_rw_copy(r->rw, n));
  *fired = true;
  rlx_graph *d = r->rw->dst;
  const rlx_opt_ctx *cx = r->cx;
  const rlx_node *root = rlx_opt_producer(d, rlx_opt_mapped(r, n->out0));
  rlx_value pv = root->in[0], v = root->in[1], s, s1, mask = RLX_RW_NONE, q;
  const rlx_type *tv = &d->types[v];
  if (tv->rank != 4 || !rlx_dtype_is_float(tv->dtype) || !softmax_last(d, pv, &s)) return NULL;
  /* s = scale (MatMul(q', kt)) [+ mask] */
  const rlx_node *add = rlx_opt_def(d, s, RLX_OP_ADD);
  for (int i = 0; add && i < 2 && mask == RLX_RW_NONE; i++) {
    const rlx_type *tm = &d->types[add->in[1 - i]];
    if (rlx_type_same(&d->types[add->in[i]], &d->types[s]) && tm->rank >= 2 && tm->dtype == tv->dtype)
      s = add->in[i], mask = add->in[1 - i];
  }
  double sc, sb, qa, qb;
  rlx_opt_affine(d, cx, s, &s1, &sc, &sb);
  const rlx_node *mm = rlx_opt_def(d, s1, RLX_OP_MATMUL);
  if (sb != 0 || !mm) return NULL;
  rlx_opt_affine(d, cx, mm->in[0], &q, &qa, &qb);
  rlx_value kt = mm->in[1];
  const rlx_type *tq = &d->types[q], *tk = &d->types[kt];
  if (qb != 0 || sc * qa == 0 || tq->rank != 4 || tk->rank != 4 || tq->dtype != tv->dtype || tk->dtype != tv->dtype) return NULL;
  for (int i = 0; i < 2; i++)
    if (tq->dims[i] != tk->dims[i] || tq->dims[i] != tv->dims[i]) return NULL;
  if (tk->dims[3] != tv->dims[2] || tq->dims[3] != tk->dims[2]) return NULL;
  if (mask != RLX_RW_NONE) { /* the mask must broadcast to [B,H,Sq,Sk] */
    const rlx_type *tm = &d->types[mask], *ts = &d->types[s];
    for (int i = 0; i < tm->rank; i++)
      if (tm->dims[i] != 1 && tm->dims[i] != ts->dims[4 - tm->rank + i]) return NULL;
  }
  rlx_value k, y, in[4];
  const rlx_node *t = rlx_opt_def(d, kt, RLX_OP_TRANSPOSE);
  if (t && is_swap_last2(t)) {
    k = t->in[0];
  } else {
    rlx_attr pa = RLX_ATTR_IS("perm", 4, ((int64_t[]){0, 1, 3, 2}));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_TRANSPOSE, n->name, 1, &kt, 1, &pa, &k));
  }
  in[0] = q, in[1] = k, in[2] = v, in[3] = mask;
  rlx_attr a[4] = {RLX_ATTR_I("num_heads", d->types[q].dims[1]), RLX_ATTR_S("mask", mask == RLX_RW_NONE ? "none" : "bias"),
                   RLX_ATTR_F("score_scale", sc * qa)};
  RLX_TRY(rlx_graph_add1(d, RLX_OP_ATTENTION, n->name, mask == RLX_RW_NONE ? 3 : 4, in, 3, a, &y));
  rlx_opt_replace(r, n, 0, y);
  return NULL;
}

rlx_status *rlx_pass_attention(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
