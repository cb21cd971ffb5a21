/* infer_matmul.c: inference for MatMul, DotGeneral and the matmul variants. */
#include "ir/infer_util.h"

/* numpy.matmul shapes: 1-D operands are promoted ([K] -> [1,K] / [K,1]) and the added dim removed. */
static rlx_status *matmul_shape(const rlx_type *a0, const rlx_type *b0, rlx_type *y) {
  if (a0->rank < 1 || b0->rank < 1) return RLX_ERR(INVALID_ARGUMENT, "operands must have rank >= 1, got %s and %s", TSTR(a0), TSTR(b0));
  rlx_type a = *a0, b = *b0;
  bool va = a.rank == 1, vb = b.rank == 1;
  if (va) a.rank = 2, a.dims[1] = a.dims[0], a.dims[0] = 1;
  if (vb) b.rank = 2, b.dims[1] = 1;
  int64_t k1 = a.dims[a.rank - 1], k2 = b.dims[b.rank - 2];
  if (!rlx_dim_compatible(k1, k2))
    return RLX_ERR(INVALID_ARGUMENT, "contraction dims differ: %s @ %s (%lld vs %lld)", TSTR(a0), TSTR(b0), (long long)k1, (long long)k2);
  rlx_type ba = a, bb = b;
  ba.rank -= 2;
  bb.rank -= 2;
  RLX_TRY(rlx_shape_broadcast(&ba, &bb, y));
  if (y->rank + 2 > RLX_MAX_RANK) return RLX_ERR(INVALID_ARGUMENT, "result rank above %d", RLX_MAX_RANK);
  if (!va) y->dims[y->rank++] = a.dims[a.rank - 2];
  if (!vb) y->dims[y->rank++] = b.dims[b.rank - 1];
  y->dtype = a.dtype;
  return NULL;
}

static rlx_status *need_numeric(const rlx_infer_ctx *c, int i) {
  rlx_dtype d = c->in[i].dtype;
  if (!rlx_dtype_is_float(d) && !rlx_dtype_is_int(d))
    return RLX_ERR(INVALID_ARGUMENT, "input %d must be numeric, got %s", i, rlx_dtype_name(d));
  return NULL;
}

static rlx_status *dot_general(rlx_infer_ctx *c) {
  const rlx_type *a = IN(0), *b = IN(1);
  size_t nlc, nrc, nlb, nrb;
  const int64_t *lc = rlx_node_is(c->n, "lhs_contracting", &nlc), *rc = rlx_node_is(c->n, "rhs_contracting", &nrc);
  const int64_t *lb = rlx_node_is(c->n, "lhs_batch", &nlb), *rb = rlx_node_is(c->n, "rhs_batch", &nrb);
  if (nlc != nrc) FAIL(INVALID_ARGUMENT, "lhs_contracting has %zu dims but rhs_contracting has %zu", nlc, nrc);
  if (nlb != nrb) FAIL(INVALID_ARGUMENT, "lhs_batch has %zu dims but rhs_batch has %zu", nlb, nrb);
  bool used_a[RLX_MAX_RANK] = {0}, used_b[RLX_MAX_RANK] = {0};
  rlx_type y = {.dtype = a->dtype};
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? nlc : nlb;
    const int64_t *la = pass ? lc : lb, *ra = pass ? rc : rb;
    for (size_t i = 0; i < n; i++) {
      int64_t x, z;
      if (!rlx_norm_axis(la[i], a->rank, &x) || !rlx_norm_axis(ra[i], b->rank, &z))
        FAIL(OUT_OF_RANGE, "%s dim pair %zu (%lld, %lld) is outside ranks %d and %d", pass ? "contracting" : "batch", i,
             (long long)la[i], (long long)ra[i], a->rank, b->rank);
      if (used_a[x] || used_b[z]) FAIL(INVALID_ARGUMENT, "a dim is listed twice in the batch/contracting dims");
      used_a[x] = used_b[z] = true;
      if (!rlx_dim_compatible(a->dims[x], b->dims[z]))
        FAIL(INVALID_ARGUMENT, "%s dims differ: lhs dim %lld is %lld, rhs dim %lld is %lld", pass ? "contracting" : "batch",
             (long long)x, (long long)a->dims[x], (long long)z, (long long)b->dims[z]);
      if (!pass) y.dims[y.rank++] = a->dims[x];
    }
  }
  for (int i = 0; i < a->rank; i++)
    if (!used_a[i]) y.dims[y.rank++] = a->dims[i];
  for (int i = 0; i < b->rank; i++) {
    if (used_b[i]) continue;
    if (y.rank == RLX_MAX_RANK) FAIL(INVALID_ARGUMENT, "result rank above %d", RLX_MAX_RANK);
    y.dims[y.rank++] = b->dims[i];
  }
  *OUT(0) = y;
  return NULL;
}

/* x[...,K] against a [K,N] weight: y = [...,N]. */
static rlx_status *project(rlx_infer_ctx *c, const rlx_type *x, const rlx_type *w, int wi, rlx_type *y) {
  if (w->rank != 2) FAIL(INVALID_ARGUMENT, "input %d must be a [K,N] matrix, got %s", wi, TSTR(w));
  if (x->rank < 1) FAIL(INVALID_ARGUMENT, "input 0 must have rank >= 1");
  if (!rlx_dim_compatible(x->dims[x->rank - 1], w->dims[0]))
    FAIL(INVALID_ARGUMENT, "input %d %s does not match the last dim of input 0 %s", wi, TSTR(w), TSTR(x));
  *y = *x;
  y->dims[y->rank - 1] = w->dims[1];
  return NULL;
}

rlx_status *rlx_infer_matmul(rlx_infer_ctx *c) {
  switch (OP) {
    case RLX_OP_MATMUL:
      RLX_TRY(infer_same_dtype(c, 0, 1));
      RLX_TRY(need_numeric(c, 0));
      return matmul_shape(IN(0), IN(1), OUT(0));
    case RLX_OP_DOT_GENERAL:
      RLX_TRY(infer_same_dtype(c, 0, 1));
      RLX_TRY(need_numeric(c, 0));
      return dot_general(c);
    case RLX_OP_FUSED_MATMUL_BIAS_ACT: {
      for (int i = 1; i < NIN; i++) RLX_TRY(infer_same_dtype(c, 0, i));
      RLX_TRY(infer_need_float(c, 0));
      RLX_TRY(project(c, IN(0), IN(1), 1, OUT(0)));
      if (NIN == 3 && (IN(2)->rank != 1 || !rlx_dim_compatible(IN(2)->dims[0], IN(1)->dims[1])))
        FAIL(INVALID_ARGUMENT, "input 2 (bias) must be [%lld], got %s", (long long)IN(1)->dims[1], TSTR(IN(2)));
      rlx_op aop;
      return rlx_infer_activation(AS("activation"), &aop);
    }
    case RLX_OP_LORA_MATMUL: {
      for (int i = 1; i < 4; i++) RLX_TRY(infer_same_dtype(c, 0, i));
      RLX_TRY(infer_need_float(c, 0));
      rlx_type t;
      RLX_TRY(project(c, IN(0), IN(1), 1, OUT(0)));
      RLX_TRY(project(c, IN(0), IN(2), 2, &t));
      rlx_type u;
      RLX_TRY(project(c, &t, IN(3), 3, &u));
      if (!rlx_dim_compatible(u.dims[u.rank - 1], OUT(0)->dims[OUT(0)->rank - 1]))
        FAIL(INVALID_ARGUMENT, "B %s must map rank r to N = %lld", TSTR(IN(3)), (long long)OUT(0)->dims[OUT(0)->rank - 1]);
      return NULL;
    }
    case RLX_OP_GROUPED_MATMUL: {
      RLX_TRY(infer_same_dtype(c, 0, 1));
      RLX_TRY(infer_need_float(c, 0));
      RLX_TRY(infer_need_int(c, 2, "expert indices"));
      const rlx_type *x = IN(0), *w = IN(1), *idx = IN(2);
      if (x->rank != 2 || w->rank != 3 || idx->rank != 1)
        FAIL(INVALID_ARGUMENT, "expected x[M,K], w[E,K,N], idx[M]; got %s, %s, %s", TSTR(x), TSTR(w), TSTR(idx));
      if (!rlx_dim_compatible(x->dims[1], w->dims[1]) || !rlx_dim_compatible(x->dims[0], idx->dims[0]))
        FAIL(INVALID_ARGUMENT, "shapes disagree: x %s, w %s, idx %s", TSTR(x), TSTR(w), TSTR(idx));
      *OUT(0) = *x;
      OUT(0)->dims[1] = w->dims[2];
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not a matmul op");
  }
}
