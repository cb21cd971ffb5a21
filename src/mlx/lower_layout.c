/* lower_layout.c: convolution chains in channels-last layout (see lower.h, rlx_lower_cl).
 *
 * MLX's convolutions take and return channels-last arrays ([N, d1..dn, C]) while the IR is
 * channels-first ([N, C, d1..dn]). Converting around every Conv costs a transposing copy of the
 * input and leaves the output a transposed view, so the bias add and whatever follows run MLX's
 * strided general kernels (on the H100, ResNet-50 at batch 8 spent a quarter of its time there).
 * With L->cl set, a Conv's output stays channels-last and so do the ops that read it where their
 * lowering does not depend on the layout: elementwise ops (their other operands broadcast to the
 * same rank and permuted alike; a per-channel [C,1,1] constant becomes a [1,1,1,C] view),
 * Reduce (the axes permuted) and Pool with a small kernel (rlx_l_pool_separable over the spatial
 * axes). Any other reader gets the value back in its logical layout (a transposed view), as do
 * graph outputs (rlx_lower_cl_outputs). This is ONNX Runtime's layout transformation done during
 * lowering: the IR and the CPU paths are unchanged. */
#include <string.h>

#include "mlx/conv_ops.h"

rlx_mx_arr *rlx_l_to_last(rlx_lower *L, rlx_mx_arr *x, int rank) {
  int64_t p[RLX_MAX_RANK] = {0};
  for (int i = 1; i < rank - 1; i++) p[i] = i + 1;
  p[rank - 1] = 1;
  return rlx_mx_transpose(L->mx, x, rank, p);
}

rlx_mx_arr *rlx_l_to_first(rlx_lower *L, rlx_mx_arr *x, int rank) {
  int64_t p[RLX_MAX_RANK] = {0};
  p[1] = rank - 1;
  for (int i = 2; i < rank; i++) p[i] = i - 1;
  return rlx_mx_transpose(L->mx, x, rank, p);
}

/* The channels-last axis of logical axis a of a rank-r value. */
static int cl_axis(int a, int r) { return a == 0 ? 0 : a == 1 ? r - 1 : a - 1; }

static bool cl_float(rlx_dtype dt) { return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16; }

/* A 1x1 convolution of group 1 without padding on channels-last x (strides: a strided slice
 * first) as one matmul [N*d.., Ci] @ [Ci, Co] of w ([Co, 1.., Ci], channels-last): on a GPU
 * cuBLAS reads and writes channels-last, while MLX hands cuDNN channels-last tensors that its
 * float32 kernels convert to channels-first and back around every convolution. */
static rlx_mx_arr *pointwise(rlx_lower *L, rlx_mx_arr *x, rlx_mx_arr *w, const rlx_type *tx, const rlx_type *ty,
                             const rlx_conv_geom *gm) {
  rlx_mx *c = L->mx;
  int r = tx->rank, nsp = r - 2;
  int64_t lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK], st[RLX_MAX_RANK], rows = ty->dims[0], ci = tx->dims[1], co = ty->dims[1];
  int64_t yd[RLX_MAX_RANK] = {ty->dims[0]};
  bool strided = false;
  hi[0] = tx->dims[0], st[0] = 1, hi[r - 1] = ci, st[r - 1] = 1;
  for (int i = 0; i < nsp; i++) {
    hi[1 + i] = tx->dims[2 + i], st[1 + i] = gm->s[i], strided |= gm->s[i] != 1;
    rows *= ty->dims[2 + i], yd[1 + i] = ty->dims[2 + i];
  }
  yd[r - 1] = co;
  if (strided) x = rlx_mx_slice(c, x, r, lo, hi, st);
  rlx_mx_arr *wt = rlx_l_swap(L, rlx_mx_reshape(c, w, 2, (int64_t[]){co, ci}), 2, 0, 1);
  return rlx_mx_reshape(c, rlx_mx_matmul(c, rlx_mx_reshape(c, x, 2, (int64_t[]){rows, ci}), wt), r, yd);
}

/* Conv through MLX's conv_general where rlx_l_conv takes it on a GPU (1D/2D, or 3D of group 1),
 * or as a matmul (pointwise), float, not empty: the input as is when channels-last, the output,
 * bias add and activation channels-last. In lazy runs a bias + Relu is one call of the epilogue
 * function, and a bias add without an activation is recorded for a residual Add + Relu. */
static bool conv(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *ty = rlx_out_type(L, n, 0);
  int r = tx->rank, nsp = r - 2;
  if (r < 3 || r > 5 || !cl_float(tx->dtype) || L->cl[n->in[1]]) return false;
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, nsp, &gm);
  if (nsp == 3 && gm.group != 1) return false;
  int64_t nx = 1, ny = 1, ones[3] = {1, 1, 1};
  for (int i = 0; i < r; i++) nx *= tx->dims[i], ny *= ty->dims[i];
  if (!nx || !ny) return false;
  rlx_mx_arr *x = L->cl[n->in[0]] ? in[0] : rlx_l_to_last(L, in[0], r);
  rlx_mx_arr *w = L->w_last && L->w_last[n->in[1]] ? L->w_last[n->in[1]] : rlx_l_to_last(L, in[1], r);
  bool one = gm.group == 1;
  for (int i = 0; i < nsp; i++) one &= rlx_in_type(L, n, 1)->dims[2 + i] == 1 && gm.p[i] == 0 && gm.p[nsp + i] == 0;
  rlx_mx_arr *y = one ? pointwise(L, x, w, tx, ty, &gm)
                      : rlx_mx_conv_general(c, x, w, nsp, gm.s, gm.p, gm.p + nsp, gm.d, ones, (int)gm.group, false);
  const char *act = rlx_node_s(n, "activation");
  rlx_l_epilogue *e = n->n_in == 3 ? L->epilogue : NULL;
  if (e && !strcmp(act, "Relu")) {
    rlx_mx_call(c, e->fn, (rlx_mx_arr *[]){y, in[2]}, 2, out, 1);
    return true;
  }
  if (e && !strcmp(act, "none")) e->pre[n->out0][0] = y, e->pre[n->out0][1] = in[2];
  out[0] = rlx_l_activation(L, act, n->n_in == 3 ? rlx_mx_binary(c, RLX_MXB_ADD, y, in[2]) : y, tx->dtype);
  return true;
}

rlx_status *rlx_l_epilogue_trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  (void)ud;
  rlx_type t;
  if (n_in < 2 || n_in > 3 || n_out != 1 || !rlx_mx_type(in[0], &t))
    return RLX_ERR(INTERNAL, "conv epilogue traced with %zu inputs and %zu outputs", n_in, n_out);
  rlx_mx_arr *s = rlx_mx_binary(c, RLX_MXB_ADD, in[0], in[1]);
  if (n_in == 3) s = rlx_mx_binary(c, RLX_MXB_ADD, s, in[2]);
  out[0] = rlx_mx_binary(c, RLX_MXB_MAXIMUM, s, rlx_mx_scalar(c, 0, t.dtype));
  return NULL;
}

/* The epilogue forms of n (see rlx_l_epilogue): a ReLU of a pending sum as one call of the
 * compiled function (true), or an Add of a pending y + b and a residual of the same shape
 * recorded as pending (false: the Add is lowered as usual). */
static bool epilogue(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_l_epilogue *e = L->epilogue;
  if (n->op == RLX_OP_RELU) {
    rlx_mx_arr **p = e->pre[n->in[0]];
    if (!p[0] || !rlx_l_read_once(L, n->in[0])) return false;
    rlx_mx_call(L->mx, e->fn, p, p[2] ? 3 : 2, out, 1);
    return true;
  }
  if (n->op != RLX_OP_ADD) return false;
  const rlx_type *to = rlx_out_type(L, n, 0);
  for (int side = 0; side < 2; side++) {
    rlx_value v = n->in[side], r = n->in[1 - side];
    const rlx_type *tr = rlx_in_type(L, n, 1 - side);
    rlx_mx_arr **p = e->pre[v];
    if (!p[0] || p[2] || !rlx_l_read_once(L, v) || !L->cl[r] || tr->rank != to->rank || memcmp(tr->dims, to->dims, sizeof(int64_t) * (size_t)to->rank))
      continue;
    e->pre[n->out0][0] = p[0], e->pre[n->out0][1] = p[1], e->pre[n->out0][2] = in[1 - side];
    return false;
  }
  return false;
}

/* Reduce of a channels-last float value over a non-empty set of given axes: permuted axes; kept
 * dims stay channels-last, dropped ones go back to the logical layout. */
static bool reduce(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out, bool *cl_out) {
  const rlx_type *t = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  size_t na;
  const int64_t *axes = rlx_node_is(n, "axes", &na);
  int r = t->rank, ax[RLX_MAX_RANK];
  if (!cl_float(t->dtype) || na == 0) return false;
  for (int i = 0; i < r; i++)
    if (t->dims[i] == 0) return false;
  for (size_t i = 0; i < na; i++) ax[i] = cl_axis((int)(axes[i] < 0 ? axes[i] + r : axes[i]), r);
  rlx_mx_arr *y = rlx_mx_reduce(L->mx, in[0], rlx_reduce_kind(rlx_node_s(n, "kind")), (int)na, ax, true);
  *cl_out = rlx_node_i(n, "keepdims") != 0;
  out[0] = *cl_out ? y : rlx_l_reshape(L, rlx_l_to_first(L, y, r), to);
  return true;
}

/* An elementwise op reading channels-last operands, all of the output's rank: the others
 * broadcast to that rank and permuted alike (views), then the op's own lowering. */
static bool elementwise(rlx_lower *L, const rlx_node *n, rlx_lower_fn fn, rlx_mx_arr **in, rlx_mx_arr **out) {
  if (fn != rlx_lower_unary && fn != rlx_lower_binary && fn != rlx_lower_where && fn != rlx_lower_cast && fn != rlx_lower_region)
    return false;
  if (n->op == RLX_OP_IS_INF) return false; /* its all-false form is made from the logical shape */
  for (uint32_t i = 0; i < n->n_in; i++) /* the low-precision types pack along the last axis */
    if (rlx_dtype_is_lowp(rlx_in_type(L, n, i)->dtype)) return false;
  if (n->op == RLX_OP_CAST && rlx_dtype_is_lowp((rlx_dtype)rlx_node_i(n, "to"))) return false;
  int r = rlx_out_type(L, n, 0)->rank;
  for (uint32_t i = 0; i < n->n_in; i++)
    if (L->cl[n->in[i]] && rlx_in_type(L, n, i)->rank != r) return false;
  for (uint32_t i = 0; i < n->n_in; i++) {
    const rlx_type *t = rlx_in_type(L, n, i);
    if (L->cl[n->in[i]] || t->rank == 0) continue;
    int64_t d[RLX_MAX_RANK];
    for (int k = 0; k < r; k++) d[k] = k < r - t->rank ? 1 : t->dims[k - (r - t->rank)];
    in[i] = rlx_l_to_last(L, rlx_mx_reshape(L->mx, in[i], r, d), r);
  }
  if (!L->epilogue || !epilogue(L, n, in, out)) fn(L, n, in, out);
  return true;
}

bool rlx_lower_cl(rlx_lower *L, const rlx_node *n, rlx_lower_fn fn, rlx_mx_arr **in, rlx_mx_arr **out) {
  bool any = false, done = false, cl_out = true;
  for (uint32_t i = 0; i < n->n_in; i++) any |= L->cl[n->in[i]];
  if (n->op == RLX_OP_CONV) done = conv(L, n, in, out);
  else if (any && n->op == RLX_OP_POOL && rlx_l_pool_separable_ok(n)) {
    out[0] = rlx_l_pool_separable(L, n, in[0], 1);
    done = true;
  } else if (any && n->op == RLX_OP_REDUCE) done = reduce(L, n, in, out, &cl_out);
  else if (any) done = elementwise(L, n, fn, in, out);
  if (done) {
    for (uint32_t i = 0; i < n->n_out; i++) L->cl[n->out0 + i] = cl_out;
    return true;
  }
  for (uint32_t i = 0; i < n->n_in; i++)
    if (L->cl[n->in[i]]) in[i] = rlx_l_to_first(L, in[i], rlx_in_type(L, n, i)->rank);
  return false;
}

void rlx_lower_cl_outputs(rlx_lower *L) {
  for (size_t i = 0; i < L->g->n_outputs; i++) {
    rlx_value v = L->g->outputs[i];
    if (!L->cl[v]) continue;
    L->vals[v] = rlx_l_to_first(L, L->vals[v], L->types[v].rank);
    L->cl[v] = false;
  }
}
