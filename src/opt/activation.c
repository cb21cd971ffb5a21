/* activation.c: activations written out with elementwise ops, fused into their ops
 * (rlx/optimize.h). Matched on the rewritten graph after copying each node (so inner matches are
 * visible to outer ones), float dtypes only:
 *   Gelu        0.5 x (1 + erf(x / sqrt 2))            (any grouping of the product, x c for x / sqrt 2)
 *   GeluApprox  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (0.044715 x^3 as a scaled
 *               Pow(x, 3) or a product of x, x, x and the scalar in any grouping)
 *   Silu        x sigmoid(x)
 *   HardSigmoid s clip(a x + b, 0, h) with s h = 1: alpha = a / h, beta = b / h
 *               (ONNX's clip(alpha x + beta, 0, 1); relu6(x + 3) / 6)
 *   HardSwish   x HardSigmoid(x; 1/6, 1/2), also s x clip(a x + b, 0, h) in that form
 *               (x relu6(x + 3) / 6, as MobileNetV3 exports write it); with any other scale
 *               (x relu6(x + 3), its / 6 folded into the next Conv's weights) as k HardSwish(x)
 *               (a Mul by the constant k, which fold_affine moves into a following Conv)
 * Constants match within a relative 1e-4. */
#include <math.h>
#include <stdlib.h>

#include "opt/opt.h"

typedef struct factors {
  double k;        /* product of the scalar factors */
  rlx_value f[4];  /* the other factors */
  int n;
} factors;

/* Flattens the product rooted at v (Mul nodes, scalar Div) `levels` levels deep into its scalar
 * factors and up to four other factors; deeper Mul nodes stay factors (x may itself be a product). */
static bool flatten(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, factors *fs, int levels) {
  double c;
  rlx_value u;
  const rlx_node *m = rlx_opt_def(d, v, RLX_OP_MUL);
  if (levels > 0 && rlx_opt_bin_scalar(d, cx, v, RLX_OP_DIV, &u, &c) && c != 0) return fs->k /= c, flatten(d, cx, u, fs, levels - 1);
  if (levels > 0 && rlx_opt_bin_scalar(d, cx, v, RLX_OP_MUL, &u, &c)) return fs->k *= c, flatten(d, cx, u, fs, levels - 1);
  if (levels > 0 && m && rlx_type_same(&d->types[m->in[0]], &d->types[v]) && rlx_type_same(&d->types[m->in[1]], &d->types[v]))
    return flatten(d, cx, m->in[0], fs, levels - 1) && flatten(d, cx, m->in[1], fs, levels - 1);
  if (fs->n == 4) return false;
  fs->f[fs->n++] = v;
  return true;
}

/* v = k x^3, *k set: k Pow(x, 3) or a product of three x and scalars, in any grouping
 * (x (x (0.044715 x)), as jax2tf writes it; (x x) x 0.044715). */
static bool scaled_cube(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value x, double *k) {
  double c, a, b;
  rlx_value u, w;
  rlx_opt_affine(d, cx, v, &w, &a, &b);
  if (b != 0) return false;
  if (rlx_opt_bin_scalar(d, cx, w, RLX_OP_POW, &u, &c)) return *k = a, u == x && c == 3;
  factors fs = {.k = a};
  if (!flatten(d, cx, w, &fs, 3) || fs.n != 3 || fs.f[0] != x || fs.f[1] != x || fs.f[2] != x) return false;
  return *k = fs.k, true;
}

/* e = 1 + erf(x / sqrt 2) (*tanh false) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)) (*tanh true). */
static bool gelu_factor(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value e, rlx_value x, bool *tanh_form) {
  rlx_value t, w, p;
  double c, a, b;
  if (!rlx_opt_bin_scalar(d, cx, e, RLX_OP_ADD, &t, &c) || c != 1) return false;
  const rlx_node *erf = rlx_opt_def(d, t, RLX_OP_ERF), *th = rlx_opt_def(d, t, RLX_OP_TANH);
  if (erf) {
    *tanh_form = false;
    return rlx_opt_affine(d, cx, erf->in[0], &w, &a, &b) && w == x && rlx_opt_near(a, M_SQRT1_2) && b == 0;
  }
  if (!th || !rlx_opt_affine(d, cx, th->in[0], &p, &a, &b) || !rlx_opt_near(a, sqrt(2 / M_PI)) || b != 0) return false;
  const rlx_node *s = rlx_opt_def(d, p, RLX_OP_ADD);
  if (!s) return false;
  for (int side = 0; side < 2; side++)
    if (s->in[side] == x && scaled_cube(d, cx, s->in[1 - side], x, &a) && rlx_opt_near(a, 0.044715)) return *tanh_form = true;
  return false;
}

/* v = s clip(a x + b, 0, h): *x, alpha = a / h, beta = b / h, *scale = s h. */
static bool hard_sigmoid_form(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *x, double *alpha, double *beta,
                              double *scale) {
  rlx_value z, u, w;
  double s, t, lo, hi, a, b;
  rlx_opt_affine(d, cx, v, &z, &s, &t);
  if (t != 0) return false;
  /* clip: Min(Max(u, 0), h) or Max(Min(u, h), 0) */
  if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_MIN, &w, &hi) && rlx_opt_bin_scalar(d, cx, w, RLX_OP_MAX, &u, &lo)) {
  } else if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_MAX, &w, &lo) && rlx_opt_bin_scalar(d, cx, w, RLX_OP_MIN, &u, &hi)) {
  } else {
    return false;
  }
  if (lo != 0 || !(hi > 0)) return false;
  rlx_opt_affine(d, cx, u, x, &a, &b);
  *alpha = a / hi, *beta = b / hi, *scale = s * hi;
  return true;
}

/* The fused op and operand for dst value v, when v is one of the forms above; *k is the factor
 * the op's result is multiplied by (1 but for the scaled HardSwish). */
static bool match(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_op *op, rlx_value *x, double *alpha, double *beta,
                  double *k) {
  *k = 1;
  if (!rlx_dtype_is_float(d->types[v].dtype)) return false;
  double s;
  if (hard_sigmoid_form(d, cx, v, x, alpha, beta, &s) && rlx_opt_near(s, 1)) return *op = RLX_OP_HARD_SIGMOID, true;
  /* x sigmoid(x), x HardSigmoid(x; 1/6, 1/2): the two operands of a Mul */
  const rlx_node *m = rlx_opt_def(d, v, RLX_OP_MUL);
  for (int i = 0; m && i < 2; i++) {
    const rlx_node *sg = rlx_opt_def(d, m->in[1 - i], RLX_OP_SIGMOID), *hs = rlx_opt_def(d, m->in[1 - i], RLX_OP_HARD_SIGMOID);
    if (sg && sg->in[0] == m->in[i]) return *x = m->in[i], *op = RLX_OP_SILU, true;
    if (hs && hs->in[0] == m->in[i] && rlx_opt_near(rlx_node_f(hs, "alpha"), 1.0 / 6) && rlx_opt_near(rlx_node_f(hs, "beta"), 0.5))
      return *x = m->in[i], *op = RLX_OP_HARD_SWISH, true;
  }
  factors fs = {.k = 1};
  if (!flatten(d, cx, v, &fs, 2) || fs.n != 2) return false;
  for (int i = 0; i < 2; i++) {
    rlx_value a = fs.f[i], e = fs.f[1 - i], hx;
    bool tanh_form;
    if (rlx_opt_near(fs.k, 0.5) && gelu_factor(d, cx, e, a, &tanh_form)) return *x = a, *op = tanh_form ? RLX_OP_GELU_APPROX : RLX_OP_GELU, true;
    if (hard_sigmoid_form(d, cx, e, &hx, alpha, beta, &s) && hx == a && fs.k * s != 0 && rlx_opt_near(*alpha, 1.0 / 6) &&
        rlx_opt_near(*beta, 0.5)) {
      if (!rlx_opt_near(fs.k * s, 1)) *k = fs.k * s;
      return *x = a, *op = RLX_OP_HARD_SWISH, true;
    }
  }
  return false;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_MUL && n->op != RLX_OP_DIV && n->op != RLX_OP_MIN && n->op != RLX_OP_MAX) return NULL;
  RLX_TRY(rlx_rw_copy(r->rw, n));
  *fired = true;
  rlx_graph *d = r->rw->dst;
  rlx_value x, y;
  rlx_op op;
  double alpha = 0, beta = 0, k;
  if (!match(d, r->cx, rlx_opt_mapped(r, n->out0), &op, &x, &alpha, &beta, &k)) return NULL;
  const bool *scaled_later = r->state;
  if (k != 1 && scaled_later[n->out0]) return NULL; /* the scaling node matches with the whole factor */
  rlx_attr a[2] = {RLX_ATTR_F("alpha", alpha), RLX_ATTR_F("beta", beta)};
  RLX_TRY(rlx_graph_add1(d, op, n->name, 1, &x, op == RLX_OP_HARD_SIGMOID ? 2 : 0, a, &y));
  if (k != 1) {
    rlx_value in[2] = {y, 0};
    RLX_TRY(rlx_opt_scalar_const(d, d->types[y].dtype, k, &in[1]));
    RLX_TRY(rlx_graph_add1(d, RLX_OP_MUL, n->name, 2, in, 0, NULL, &y));
  }
  rlx_opt_replace(r, n, 0, y);
  return NULL;
}

rlx_status *rlx_pass_activation(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  /* values that a Mul or Div by a scalar constant reads */
  bool *scaled_later = calloc(g->n_vals ? g->n_vals : 1, sizeof *scaled_later);
  if (!scaled_later) return RLX_ERR(RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < g->n_nodes; i++) {
    const rlx_node *n = &g->nodes[i];
    double c;
    if ((n->op != RLX_OP_MUL && n->op != RLX_OP_DIV) || n->n_in != 2) continue;
    for (int side = 0; side < 2; side++)
      if (rlx_opt_scalar(g, n->in[1 - side], cx, &c) && (side == 0 || n->op == RLX_OP_MUL)) scaled_later[n->in[side]] = true;
  }
  rlx_status *st = rlx_opt_run_rule(g, cx, rule, scaled_later, out, changed);
  free(scaled_later);
  return st;
}
