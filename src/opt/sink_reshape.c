/* sink_reshape.c: an elementwise op after a Reshape that only drops or inserts size-1 axes moved
 * before it (rlx/optimize.h): f(Reshape(y)) = Reshape(f(y)) for a unary activation f, and
 * Reshape(y) op c = Reshape(y op c') for Add/Sub/Mul/Div by a known constant c that does not
 * broadcast the Reshape's result, c' being c with its axes laid out as y's (c's dims on the axes
 * y shares with the result, 1 on the others). The Reshape has no other reader. A 1D convolution
 * exported as a 2D one over [N, C, L, 1] and squeezed to [N, C, L] then gets its bias and
 * activation next to the Conv, where fold_affine and epilogue fuse them (Magika's Conv1D). */
#include "opt/opt.h"

static bool is_unary_act(rlx_op op) {
  return op == RLX_OP_RELU || op == RLX_OP_GELU || op == RLX_OP_GELU_APPROX || op == RLX_OP_SILU || op == RLX_OP_SIGMOID ||
         op == RLX_OP_TANH || op == RLX_OP_HARD_SWISH || op == RLX_OP_HARD_SIGMOID;
}

/* When r is y with size-1 axes dropped or inserted: pair[i] = the axis of r that y's axis i is (-1
 * for a dropped one), and true. */
static bool squeeze_pairs(const rlx_type *y, const rlx_type *r, int *pair) {
  if (!rlx_type_is_static(y) || !rlx_type_is_static(r)) return false;
  int i = 0, j = 0;
  while (i < y->rank || j < r->rank) {
    if (i < y->rank && j < r->rank && y->dims[i] == r->dims[j]) pair[i++] = j++;
    else if (i < y->rank && y->dims[i] == 1) pair[i++] = -1;
    else if (j < r->rank && r->dims[j] == 1) j++;
    else return false;
  }
  return true;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  bool unary = is_unary_act(n->op), binary = n->op == RLX_OP_ADD || n->op == RLX_OP_SUB || n->op == RLX_OP_MUL || n->op == RLX_OP_DIV;
  if (!unary && !binary) return NULL;
  const rlx_graph *s = r->rw->src;
  rlx_graph *d = r->rw->dst;
  for (int side = 0; side < (binary ? 2 : 1); side++) {
    rlx_value v = n->in[side], c = binary ? rlx_opt_mapped(r, n->in[1 - side]) : 0;
    const rlx_node *rs = rlx_opt_def(d, rlx_opt_mapped(r, v), RLX_OP_RESHAPE);
    if (!rs || r->uses[v] != 1 || !rlx_type_same(&s->types[v], &s->types[n->out0])) continue;
    if (binary && !rlx_opt_const_data(d, c, r->cx)) continue;
    rlx_value y = rs->in[0];
    const rlx_type ty = d->types[y], tr = d->types[rs->out0];
    int pair[RLX_MAX_RANK];
    if (!squeeze_pairs(&ty, &tr, pair)) continue;
    rlx_value in[2], out, back;
    if (binary) {
      const rlx_type tc = d->types[c];
      if (tc.rank > tr.rank) continue;
      int64_t dims[RLX_MAX_RANK];
      for (int i = 0; i < ty.rank; i++) {
        int j = pair[i] - (tr.rank - tc.rank); /* c's axis aligned with the result's axis pair[i] */
        dims[i] = pair[i] >= 0 && j >= 0 ? tc.dims[j] : 1;
      }
      rlx_attr a = RLX_ATTR_IS("shape", ty.rank, dims);
      RLX_TRY(rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &c, 1, &a, &in[1 - side]));
    }
    in[side] = y;
    RLX_TRY(rlx_rw_add_like(d, n, binary ? 2 : 1, in, &out));
    rlx_attr shape = RLX_ATTR_IS("shape", tr.rank, tr.dims);
    RLX_TRY(rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &out, 1, &shape, &back));
    rlx_opt_replace(r, n, 0, back);
    *fired = true;
    return NULL;
  }
  return NULL;
}

rlx_status *rlx_pass_sink_reshape(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
