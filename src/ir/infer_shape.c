/* infer_shape.c: inference for the shape and data-movement ops. */
#include "ir/infer_util.h"

static int64_t numel_or_neg(const int64_t *d, int r) {
  int64_t n = 1;
  for (int i = 0; i < r; i++) {
    if (d[i] < 0 || !rlx_mul_i64(n, d[i], &n)) return -1;
  }
  return n;
}

/* ONNX Slice clamping for one axis of size dim: returns the output length and writes the
 * effective start/step. Shared with the lowering. */
int64_t rlx_slice_range(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *out_start) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = start < 0 ? 0 : start > dim ? dim : start;
    end = end < 0 ? 0 : end > dim ? dim : end;
  } else {
    start = start < 0 ? -1 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
  }
  *out_start = start;
  /* ceil((end - start) / step) without overflow: start and end lie in [-1, dim], step anywhere */
  if (step > 0) return end > start ? (end - start - 1) / step + 1 : 0;
  if (start <= end) return 0;
  return step == INT64_MIN ? 1 : (start - end - 1) / -step + 1;
}

static rlx_status *slice(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  size_t ns, ne, na, nst;
  const int64_t *st = rlx_node_is(c->n, "starts", &ns), *en = rlx_node_is(c->n, "ends", &ne);
  const int64_t *ax = rlx_node_is(c->n, "axes", &na), *sp = rlx_node_is(c->n, "steps", &nst);
  if (ns != ne || (na && na != ns) || (nst && nst != ns))
    FAIL(INVALID_ARGUMENT, "starts, ends, axes, steps lengths differ: %zu, %zu, %zu, %zu", ns, ne, na, nst);
  *OUT(0) = *x;
  bool seen[RLX_MAX_RANK] = {0};
  for (size_t i = 0; i < ns; i++) {
    NORM_AXIS(a, na ? ax[i] : (int64_t)i, x->rank, "axis");
    if (seen[a]) FAIL(INVALID_ARGUMENT, "axis %lld is sliced twice", (long long)a);
    seen[a] = true;
    int64_t step = nst ? sp[i] : 1;
    if (step == 0) FAIL(INVALID_ARGUMENT, "step 0 on axis %lld", (long long)a);
    int64_t s0;
    OUT(0)->dims[a] = x->dims[a] < 0 ? RLX_DIM_DYNAMIC : rlx_slice_range(x->dims[a], st[i], en[i], step, &s0);
  }
  return NULL;
}

rlx_status *rlx_infer_shape(rlx_infer_ctx *c) {
  const rlx_type *x = IN(0);
  rlx_type *y = OUT(0);
  *y = *x;
  switch (OP) {
    case RLX_OP_RESHAPE: {
      int r;
      RLX_TRY(infer_attr_dims(c, "shape", y->dims, &r));
      y->rank = r;
      for (int i = 0; i < r; i++)
        if (y->dims[i] == RLX_DIM_DYNAMIC) FAIL(INVALID_ARGUMENT, "shape dim %d is -1; Reshape takes explicit dims (or symbols)", i);
      int64_t a = numel_or_neg(x->dims, x->rank), b = numel_or_neg(y->dims, r);
      if (a >= 0 && b >= 0 && a != b)
        FAIL(INVALID_ARGUMENT, "cannot reshape %s (%lld elements) to %s (%lld elements)", TSTR(x), (long long)a, TSTR(y), (long long)b);
      return NULL;
    }
    case RLX_OP_TRANSPOSE: {
      size_t n;
      const int64_t *perm = rlx_node_is(c->n, "perm", &n);
      if (n && n != (size_t)x->rank) FAIL(INVALID_ARGUMENT, "perm has %zu entries for rank %d", n, x->rank);
      bool seen[RLX_MAX_RANK] = {0};
      for (int i = 0; i < x->rank; i++) {
        int64_t p = n ? perm[i] : x->rank - 1 - i;
        NORM_AXIS(a, p, x->rank, "perm entry");
        if (seen[a]) FAIL(INVALID_ARGUMENT, "perm repeats axis %lld", (long long)a);
        seen[a] = true;
        y->dims[i] = x->dims[a];
      }
      return NULL;
    }
    case RLX_OP_NARROW: {
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      int64_t s = AI("start"), l = AI("length"), d = x->dims[a];
      if (s < 0 || l < 0 || (d >= 0 && (s > d || l > d - s)))
        FAIL(OUT_OF_RANGE, "narrow start %lld length %lld is outside axis %lld of size %lld", (long long)s, (long long)l, (long long)a,
             (long long)d);
      y->dims[a] = l;
      return NULL;
    }
    case RLX_OP_SLICE:
      return slice(c);
    case RLX_OP_CONCAT: {
      NORM_AXIS(a, AI("axis"), x->rank, "axis");
      int64_t sum = 0;
      for (int i = 0; i < NIN; i++) {
        const rlx_type *t = IN(i);
        RLX_TRY(infer_same_dtype(c, 0, i));
        if (t->rank != x->rank) FAIL(INVALID_ARGUMENT, "input %d has rank %d, input 0 has rank %d", i, t->rank, x->rank);
        for (int k = 0; k < x->rank; k++)
          if (k != a && !rlx_dim_compatible(t->dims[k], x->dims[k]))
            FAIL(INVALID_ARGUMENT, "input %d %s differs from input 0 %s outside axis %lld", i, TSTR(t), TSTR(x), (long long)a);
        if (sum >= 0 && t->dims[a] >= 0 && t->dims[a] > INT64_MAX - sum)
          FAIL(INVALID_ARGUMENT, "the concatenated size along axis %lld overflows int64", (long long)a);
        sum = (sum < 0 || t->dims[a] < 0) ? RLX_DIM_DYNAMIC : sum + t->dims[a];
      }
      y->dims[a] = sum;
      return NULL;
    }
    case RLX_OP_EXPAND: {
      rlx_type t = {.dtype = x->dtype};
      RLX_TRY(infer_attr_dims(c, "shape", t.dims, &t.rank));
      RLX_TRY(rlx_shape_broadcast(x, &t, y));
      return NULL;
    }
    case RLX_OP_PAD: {
      size_t n;
      const int64_t *p = rlx_node_is(c->n, "pads", &n);
      if (n != 2 * (size_t)x->rank) FAIL(INVALID_ARGUMENT, "pads has %zu entries; rank %d needs %d", n, x->rank, 2 * x->rank);
      const char *mode = AS("mode");
      bool reflect = strcmp(mode, "reflect") == 0, constant = strcmp(mode, "constant") == 0;
      if (!reflect && !constant && strcmp(mode, "edge") && strcmp(mode, "wrap"))
        FAIL(INVALID_ARGUMENT, "pad mode '%s' (expected constant, edge, reflect or wrap)", mode);
      for (int i = 0; i < x->rank; i++) {
        int64_t d = x->dims[i];
        if (d < 0) {
          y->dims[i] = RLX_DIM_DYNAMIC;
          continue;
        }
        int64_t o, kept; /* kept: after cropping */
        if (!rlx_add_i64(d, p[i], &o) || !rlx_add_i64(o, p[i + x->rank], &o))
          FAIL(RESOURCE_EXHAUSTED, "pads %lld, %lld of axis %d (size %lld) overflow int64", (long long)p[i], (long long)p[i + x->rank], i,
               (long long)d);
        if (o < 0) FAIL(INVALID_ARGUMENT, "pads crop axis %d of size %lld below 0", i, (long long)d);
        if (!rlx_add_i64(d, p[i] < 0 ? p[i] : 0, &kept) || !rlx_add_i64(kept, p[i + x->rank] < 0 ? p[i + x->rank] : 0, &kept)) kept = -1;
        if (kept < 0)
          FAIL(INVALID_ARGUMENT, "pads %lld, %lld crop more than axis %d's %lld entries", (long long)p[i], (long long)p[i + x->rank], i,
               (long long)d);
        if (!constant && kept <= 0 && o > 0) FAIL(INVALID_ARGUMENT, "cannot %s-pad axis %d: nothing is left of it to repeat", mode, i);
        y->dims[i] = o;
      }
      return NULL;
    }
    case RLX_OP_TILE: {
      size_t n;
      const int64_t *r = rlx_node_is(c->n, "repeats", &n);
      if (n != (size_t)x->rank) FAIL(INVALID_ARGUMENT, "repeats has %zu entries for rank %d", n, x->rank);
      for (int i = 0; i < x->rank; i++) {
        if (r[i] < 0) FAIL(INVALID_ARGUMENT, "repeats[%d] = %lld is negative", i, (long long)r[i]);
        if (x->dims[i] < 0) y->dims[i] = RLX_DIM_DYNAMIC;
        else if (!rlx_mul_i64(x->dims[i], r[i], &y->dims[i]))
          FAIL(RESOURCE_EXHAUSTED, "axis %d: %lld x %lld repeats overflows int64", i, (long long)x->dims[i], (long long)r[i]);
      }
      return NULL;
    }
    default:
      FAIL(INTERNAL, "not a shape op");
  }
}
