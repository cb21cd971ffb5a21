/* fold_affine.c: Conv / MatMul followed by an affine map by constants, folded into the weights
 * and bias (rlx/optimize.h). With y = Conv(x, W, b) (W [Co,..], constant) read only by
 * z = y op c, c a constant that is one value per output channel (broadcasting along y's axis 1)
 * or a scalar:  Mul: W' = W c, b' = b c;  Div: W' = W / c, b' = b / c;  Add: b' = b + c;
 * Sub (y - c): b' = b - c.  With y = MatMul(x, W[K,N]) (or FusedMatMulBiasAct without
 * activation), c one value per column (broadcasting along the last axis) or a scalar: Mul / Div
 * scale W's columns and the bias (Add is the epilogue pass's). Chains (BatchNormalization is
 * written x a + b by the importer) fold one op at a time, float32 and float64 only.
 * Input side: Conv(a x + b, W, bias) with scalar a, b (Add/Sub/Mul/Div chains by scalar constants,
 * the affine a x + b read only by the Conv) and no padding is Conv(x, a W, bias + b sum(W[o]))
 * (every window reads a x + b only; padded windows would read zeros instead of b). */
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"

/* c as one value per channel along `axis` of y (cnt = y.dims[axis]) into vals[cnt]; false when
 * c does not have that form or is not a known constant. */
static bool per_channel(const rlx_graph *g, rlx_value c, const rlx_type *y, int axis, const rlx_opt_ctx *cx, double **vals) {
  const rlx_type *tc = &g->types[c];
  if (tc->dtype != y->dtype || tc->rank > y->rank) return false;
  int64_t C = y->dims[axis], stride = 0;
  if (C < 0) return false; /* a symbolic channel count: nothing to fold per channel */
  for (int i = 0; i < tc->rank; i++) {
    int yi = y->rank - tc->rank + i;
    if (tc->dims[i] == 1) continue;
    if (yi != axis || tc->dims[i] != C) return false;
    stride = 1;
  }
  double *d;
  int64_t cnt;
  if (!rlx_opt_const_f64(g, c, cx, &d, &cnt)) return false;
  double *v = malloc((size_t)(C ? C : 1) * sizeof *v);
  if (!v) return free(d), false;
  for (int64_t i = 0; i < C; i++) v[i] = d[stride ? i : 0];
  free(d);
  *vals = v;
  return true;
}

typedef struct target {
  rlx_op op;       /* Conv, MatMul or FusedMatMulBiasAct */
  rlx_value x, w, b; /* dst values; b RLX_RW_NONE when absent */
  rlx_type tw;
  double *W, *B;   /* constant weights (and bias, or zeros) */
  int64_t nw, C;   /* W's element count; output channels */
  bool conv;
} target;

static void target_free(target *t) {
  free(t->W);
  free(t->B);
}

/* The Conv / MatMul in rw->dst producing dst value y when it can absorb an affine map. */
static bool find_target(rlx_opt_rule_ctx *r, rlx_value y, target *t) {
  const rlx_graph *d = r->rw->dst;
  const rlx_node *p = rlx_opt_producer(d, y);
  *t = (target){.op = p->op, .b = RLX_RW_NONE};
  if (p->op == RLX_OP_CONV) {
    if (strcmp(rlx_node_s(p, "activation"), "none")) return false; /* the map would follow the activation */
    t->conv = true;
  } else if (p->op == RLX_OP_FUSED_MATMUL_BIAS_ACT) {
    if (strcmp(rlx_node_s(p, "activation"), "none")) return false;
  } else if (p->op != RLX_OP_MATMUL) return false;
  t->x = p->in[0], t->w = p->in[1];
  if (p->n_in == 3) t->b = p->in[2];
  t->tw = d->types[t->w];
  const rlx_type *ty = &d->types[y];
  if (ty->dtype != RLX_DTYPE_F32 && ty->dtype != RLX_DTYPE_F64) return false;
  if (!t->conv && t->tw.rank != 2) return false;
  t->C = t->conv ? t->tw.dims[0] : t->tw.dims[1];
  if (!rlx_opt_const_f64(d, t->w, r->cx, &t->W, &t->nw)) return false;
  if (t->b != RLX_RW_NONE) {
    int64_t nb;
    if (!rlx_opt_const_f64(d, t->b, r->cx, &t->B, &nb) || nb != t->C) return target_free(t), false;
  } else if (!(t->B = calloc((size_t)(t->C ? t->C : 1), sizeof *t->B))) {
    return target_free(t), false;
  }
  return true;
}

/* Conv(a u + b, W, bias) without padding -> Conv(u, a W, bias + b sum(W[o])). */
static rlx_status *input_side(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  size_t np;
  const int64_t *pads = rlx_node_is(n, "pads", &np);
  for (size_t i = 0; i < np; i++)
    if (pads[i]) return NULL;
  if (r->uses[n->in[0]] != 1) return NULL;
  rlx_graph *d = r->rw->dst;
  const rlx_opt_ctx *cx = r->cx;
  rlx_value u, w = rlx_opt_mapped(r, n->in[1]), b = n->n_in == 3 ? rlx_opt_mapped(r, n->in[2]) : RLX_RW_NONE, out, in[3];
  double a, c, *W = NULL, *B = NULL;
  int64_t nw, nb, C = d->types[w].dims[0];
  rlx_type tw = d->types[w], tb = {.dtype = tw.dtype, .rank = 1, .dims = {C}};
  if ((tw.dtype != RLX_DTYPE_F32 && tw.dtype != RLX_DTYPE_F64) || !rlx_opt_affine(d, cx, rlx_opt_mapped(r, n->in[0]), &u, &a, &c)) return NULL;
  if (!rlx_opt_const_f64(d, w, cx, &W, &nw)) return NULL;
  if (b != RLX_RW_NONE ? !rlx_opt_const_f64(d, b, cx, &B, &nb) || nb != C : !(B = calloc((size_t)(C ? C : 1), sizeof *B))) {
    free(W);
    return NULL;
  }
  int64_t inner = C ? nw / C : 0;
  for (int64_t o = 0; o < C; o++) {
    double sum = 0;
    for (int64_t i = 0; i < inner; i++) sum += W[o * inner + i], W[o * inner + i] *= a;
    B[o] += c * sum;
  }
  rlx_status *st = rlx_opt_const_from_f64(d, &tw, W, &in[1]);
  if (!st) st = rlx_opt_const_from_f64(d, &tb, B, &in[2]);
  free(W);
  free(B);
  RLX_TRY(st);
  in[0] = u;
  RLX_TRY(rlx_rw_add_like(d, n, 3, in, &out));
  rlx_opt_replace(r, n, 0, out);
  *fired = true;
  return NULL;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op == RLX_OP_CONV) return input_side(r, n, fired);
  if (n->op != RLX_OP_MUL && n->op != RLX_OP_DIV && n->op != RLX_OP_ADD && n->op != RLX_OP_SUB) return NULL;
  const rlx_graph *s = r->rw->src;
  for (int side = 0; side < 2; side++) {
    if (side == 1 && (n->op == RLX_OP_DIV || n->op == RLX_OP_SUB)) break;
    rlx_value y = n->in[side], c = n->in[1 - side];
    if (r->uses[y] != 1) continue;
    const rlx_type *ty = &s->types[y];
    if (!rlx_type_same(ty, &s->types[n->out0])) continue; /* c must not broadcast y */
    const rlx_node *p = rlx_opt_dst_producer(r, y);
    bool scale = n->op == RLX_OP_MUL || n->op == RLX_OP_DIV, conv = p->op == RLX_OP_CONV;
    double *cv = NULL;
    if ((p->op != RLX_OP_CONV && p->op != RLX_OP_MATMUL && p->op != RLX_OP_FUSED_MATMUL_BIAS_ACT) || (!conv && !scale) ||
        !per_channel(s, c, ty, conv ? 1 : ty->rank - 1, r->cx, &cv))
      continue;
    target t;
    if (!find_target(r, rlx_opt_mapped(r, y), &t)) {
      free(cv);
      continue;
    }
    int64_t inner = t.C ? t.nw / t.C : 0; /* Conv: W[o] is contiguous; MatMul: column j is W[:, j] */
    for (int64_t o = 0; o < t.C; o++) {
      double f = n->op == RLX_OP_DIV ? 1 / cv[o] : cv[o];
      if (scale) {
        for (int64_t i = 0; i < inner; i++) t.W[t.conv ? o * inner + i : i * t.C + o] *= f;
        t.B[o] *= f;
      } else {
        t.B[o] += n->op == RLX_OP_SUB ? -cv[o] : cv[o];
      }
    }
    free(cv);
    rlx_graph *d = r->rw->dst;
    rlx_type tb = {.dtype = t.tw.dtype, .rank = 1, .dims = {t.C}};
    rlx_value w = t.w, b = RLX_RW_NONE, in[3], out;
    /* a scale of a bias-free op keeps it bias-free; an Add of a MatMul is left to the epilogue */
    bool with_bias = t.b != RLX_RW_NONE || !scale;
    rlx_status *st = scale ? rlx_opt_const_from_f64(d, &t.tw, t.W, &w) : NULL;
    if (!st && with_bias) st = rlx_opt_const_from_f64(d, &tb, t.B, &b);
    p = rlx_opt_producer(d, rlx_opt_mapped(r, y)); /* nodes may have moved */
    rlx_attr a[16];
    uint32_t na = p->n_attrs;
    in[0] = t.x, in[1] = w, in[2] = b;
    if (!st) st = na <= 16 ? rlx_rw_attrs(p, a) : RLX_ERR(INTERNAL, "fold_affine: %u attributes", na);
    if (!st) st = rlx_graph_add1(d, t.op, n->name, with_bias ? 3 : 2, in, na, a, &out);
    target_free(&t);
    RLX_TRY(st);
    rlx_opt_replace(r, n, 0, out);
    *fired = true;
    return NULL;
  }
  return NULL;
}

rlx_status *rlx_pass_fold_affine(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
