/* import_ops_tensor.c: ONNX shape, data-movement, indexing and constant ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

/* ---- constants and shapes ---- */

static rlx_status *map_constant(rlx_imp *I, const Onnx__NodeProto *n) {
  const Onnx__AttributeProto *a = n->n_attribute ? n->attribute[0] : NULL;
  if (!a || !a->name) IMP_FAIL(INVALID_ARGUMENT, "Constant has no value attribute");
  rlx_tensor *t = NULL;
  if (!strcmp(a->name, "value") && a->t) {
    RLX_TRY(rlx_onnx_tensor_from_proto(a->t, I->dir, &t));
  } else if (!strcmp(a->name, "value_float")) {
    float f = a->f;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, 0, NULL, &f, 4, &t));
  } else if (!strcmp(a->name, "value_floats")) {
    int64_t d = (int64_t)a->n_floats;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_F32, 1, &d, a->floats, 4 * a->n_floats, &t));
  } else if (!strcmp(a->name, "value_int")) {
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 0, NULL, &a->i, 8, &t));
  } else if (!strcmp(a->name, "value_ints")) {
    int64_t d = (int64_t)a->n_ints;
    RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 1, &d, a->ints, 8 * a->n_ints, &t));
  } else {
    IMP_FAIL(UNIMPLEMENTED, "Constant attribute '%s' (string and sparse constants are not supported)", a->name);
  }
  return imp_out_data(I, n, 0, t);
}

static rlx_status *map_shape(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  int64_t r = t.rank, s = imp_axis(imp_attr_i(n, "start", 0), r), e = imp_axis(imp_attr_i(n, "end", r), r);
  s = s < 0 ? 0 : s > r ? r : s;
  e = e < 0 ? 0 : e > r ? r : e;
  int64_t len = e > s ? e - s : 0;
  rlx_tensor *out;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 1, &len, len ? t.dims + s : NULL, (size_t)len * 8, &out));
  return imp_out_data(I, n, 0, out);
}

static rlx_status *map_size(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  int64_t cnt;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  RLX_TRY(rlx_type_numel(&t, &cnt));
  rlx_tensor *out;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 0, NULL, &cnt, 8, &out));
  return imp_out_data(I, n, 0, out);
}

/* ConstantOfShape(shape) -> Expand of a one-element value (float32 0 by default). */
static rlx_status *map_constant_of_shape(rlx_imp *I, const Onnx__NodeProto *n) {
  int64_t *shape;
  size_t r;
  RLX_TRY(imp_const_ints(I, n, 0, "shape", &shape, &r));
  const Onnx__AttributeProto *a = imp_attr(n, "value");
  rlx_tensor *v = NULL;
  rlx_status *st = NULL;
  if (a && a->t) st = rlx_onnx_tensor_from_proto(a->t, I->dir, &v);
  else {
    float z = 0;
    st = rlx_tensor_create(RLX_DTYPE_F32, 0, NULL, &z, 4, &v);
  }
  rlx_value c, y;
  if (!st) st = rlx_graph_add_constant(I->g, &(rlx_type){.dtype = rlx_tensor_dtype(v)}, rlx_tensor_cdata(v), rlx_dtype_size(rlx_tensor_dtype(v)), &c);
  rlx_attr at = RLX_ATTR_IS("shape", r, shape);
  if (!st) st = imp_add(I, n, RLX_OP_EXPAND, 1, &c, 1, &at, &y);
  if (!st) st = imp_out(I, n, 0, y);
  rlx_tensor_free(v);
  free(shape);
  return st;
}

/* Range(start, limit, delta) with known inputs: computed here (it only sizes a constant). */
static rlx_status *map_range(rlx_imp *I, const Onnx__NodeProto *n) {
  const rlx_tensor *s = imp_const(I, n, 0), *l = imp_const(I, n, 1), *d = imp_const(I, n, 2);
  if (!s || !l || !d) IMP_FAIL(UNIMPLEMENTED, "Range with run-time inputs has a data-dependent shape");
  double start = rlx_tensor_get_f64(s, 0), limit = rlx_tensor_get_f64(l, 0), delta = rlx_tensor_get_f64(d, 0);
  if (delta == 0) IMP_FAIL(INVALID_ARGUMENT, "Range delta is 0");
  double cnt = ceil((limit - start) / delta);
  rlx_dtype dt = rlx_tensor_dtype(s), cast_to = dt;
  if (dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16) dt = RLX_DTYPE_F64; /* computed in float64, cast in the graph */
  if (cnt != cnt || cnt * (double)rlx_dtype_size(dt) > (double)RLX_ONNX_MAX_FOLD_BYTES)
    IMP_FAIL(RESOURCE_EXHAUSTED, "Range(%g, %g, %g) has %g elements, more than a value computed while importing may take (%lld bytes)",
             start, limit, delta, cnt, (long long)RLX_ONNX_MAX_FOLD_BYTES);
  int64_t len = cnt > 0 ? (int64_t)cnt : 0;
  rlx_tensor *out;
  RLX_TRY(rlx_tensor_create(dt, 1, &len, NULL, 0, &out));
  unsigned char *p = rlx_tensor_data(out);
  size_t es = rlx_dtype_size(dt);
  for (int64_t i = 0; i < len; i++) {
    double v = start + (double)i * delta;
    union { float f; double d; int16_t i16; int32_t i32; int64_t i64; } u;
    switch (dt) {
      case RLX_DTYPE_F32: u.f = (float)v; break;
      case RLX_DTYPE_F64: u.d = v; break;
      case RLX_DTYPE_I16: u.i16 = (int16_t)v; break;
      case RLX_DTYPE_I32: u.i32 = (int32_t)v; break;
      case RLX_DTYPE_I64: { /* start + i * delta lies in [start, limit): the wrapping unsigned sum is exact */
        uint64_t s0 = (uint64_t)((const int64_t *)rlx_tensor_cdata(s))[0], d0 = (uint64_t)((const int64_t *)rlx_tensor_cdata(d))[0];
        u.i64 = (int64_t)(s0 + (uint64_t)i * d0);
        break;
      }
      default:
        rlx_tensor_free(out);
        IMP_FAIL(UNIMPLEMENTED, "Range of %s", rlx_dtype_name(dt));
    }
    memcpy(p + (size_t)i * es, &u, es);
  }
  if (cast_to == dt) return imp_out_data(I, n, 0, out);
  rlx_value v;
  rlx_status *st = imp_tensor_const(I, out, &v);
  rlx_tensor_free(out);
  RLX_TRY(st);
  RLX_TRY(imp_cast(I, n, v, cast_to, &v));
  return imp_out(I, n, 0, v);
}

/* ---- reshaping ---- */

/* Output 0 = input 0 reshaped to dims. */
static rlx_status *reshape_out(rlx_imp *I, const Onnx__NodeProto *n, int rank, const int64_t *dims) {
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, rank, dims, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_reshape(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, false, &t));
  int64_t *shape = NULL;
  size_t r;
  RLX_TRY(I->opset < 5 ? imp_attr_ints_copy(n, "shape", &shape, &r) : imp_const_ints(I, n, 1, "shape", &shape, &r));
  rlx_status *st = NULL;
  if (r > RLX_MAX_RANK) st = RLX_ERR(UNIMPLEMENTED, "reshape to rank %zu", r);
  bool allowzero = imp_attr_i(n, "allowzero", 0) != 0;
  int64_t known = 1, infer = -1, total = -1;
  if (!st && rlx_type_is_static(&t)) st = rlx_type_numel(&t, &total);
  for (size_t i = 0; !st && i < r; i++) {
    if (shape[i] == 0 && !allowzero) {
      if ((int)i >= t.rank) st = RLX_ERR(INVALID_ARGUMENT, "shape[%zu] = 0 copies a dim the input does not have", i);
      else shape[i] = t.dims[i];
    }
    if (st) break;
    if (shape[i] == -1) {
      if (infer >= 0) st = RLX_ERR(INVALID_ARGUMENT, "more than one -1 in the shape");
      infer = (int64_t)i;
    } else if (shape[i] < 0 && shape[i] >= -1) {
      st = RLX_ERR(INVALID_ARGUMENT, "shape[%zu] = %lld", i, (long long)shape[i]);
    } else if (shape[i] >= 0) {
      if (shape[i] && known > INT64_MAX / shape[i]) st = RLX_ERR(INVALID_ARGUMENT, "the shape's element count overflows int64");
      else known *= shape[i];
    }
  }
  if (!st && infer >= 0) {
    if (total < 0) st = RLX_ERR(UNIMPLEMENTED, "a -1 in the shape needs a static input shape, got %s", RLX_TYPE_STR(&t));
    else if (known == 0 || total % known) st = RLX_ERR(INVALID_ARGUMENT, "cannot infer the -1 of the shape for %lld elements", (long long)total);
    else shape[infer] = total / known;
  }
  if (!st) st = reshape_out(I, n, (int)r, shape);
  free(shape);
  return st;
}

static rlx_status *map_flatten(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  int64_t a = imp_axis(imp_attr_i(n, "axis", 1), t.rank), d[2] = {1, 1};
  if (a < 0 || a > t.rank) IMP_FAIL(OUT_OF_RANGE, "axis %lld for rank %d", (long long)imp_attr_i(n, "axis", 1), t.rank);
  for (int i = 0; i < t.rank; i++) d[i >= a] *= t.dims[i];
  return reshape_out(I, n, 2, d);
}

rlx_status *imp_axes(rlx_imp *I, const Onnx__NodeProto *n, const char *attr, size_t k, bool from_input, int64_t **axes,
                     size_t *cnt, bool *present) {
  *present = false;
  *cnt = 0;
  *axes = NULL;
  if (from_input) {
    if (!imp_has(n, k)) return NULL;
    *present = true;
    return imp_const_ints(I, n, k, "axes", axes, cnt);
  }
  if (!imp_attr(n, attr)) return NULL;
  *present = true;
  return imp_attr_ints_copy(n, attr, axes, cnt);
}

/* Squeeze/Unsqueeze: x's type and the axes (an attribute before opset 13, input 1 after; free). */
static rlx_status *squeeze_args(rlx_imp *I, const Onnx__NodeProto *n, rlx_type *t, int64_t **axes, size_t *na) {
  bool present;
  RLX_TRY(imp_in_type(I, n, 0, false, t));
  return imp_axes(I, n, "axes", 1, I->opset >= 13, axes, na, &present);
}

static rlx_status *map_squeeze(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  int64_t *axes;
  size_t na;
  RLX_TRY(squeeze_args(I, n, &t, &axes, &na));
  bool drop[RLX_MAX_RANK] = {0};
  rlx_status *st = NULL;
  for (size_t i = 0; i < na && !st; i++) {
    int64_t a = imp_axis(axes[i], t.rank);
    if (a < 0 || a >= t.rank || t.dims[a] != 1) st = RLX_ERR(INVALID_ARGUMENT, "cannot squeeze axis %lld of %s", (long long)axes[i], RLX_TYPE_STR(&t));
    else drop[a] = true;
  }
  if (!na)
    for (int i = 0; i < t.rank; i++) drop[i] = t.dims[i] == 1;
  free(axes);
  if (st) return st;
  int64_t d[RLX_MAX_RANK];
  int r = 0;
  for (int i = 0; i < t.rank; i++)
    if (!drop[i]) d[r++] = t.dims[i];
  return reshape_out(I, n, r, d);
}

static rlx_status *map_unsqueeze(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  int64_t *axes;
  size_t na;
  RLX_TRY(squeeze_args(I, n, &t, &axes, &na));
  int64_t r = t.rank + (int64_t)na;
  bool ins[2 * RLX_MAX_RANK] = {0};
  rlx_status *st = r > RLX_MAX_RANK ? RLX_ERR(UNIMPLEMENTED, "result rank %lld", (long long)r) : NULL;
  for (size_t i = 0; i < na && !st; i++) {
    int64_t a = imp_axis(axes[i], r);
    if (a < 0 || a >= r || ins[a]) st = RLX_ERR(INVALID_ARGUMENT, "bad unsqueeze axis %lld for output rank %lld", (long long)axes[i], (long long)r);
    else ins[a] = true;
  }
  free(axes);
  if (st) return st;
  int64_t d[RLX_MAX_RANK];
  for (int64_t i = 0, j = 0; i < r; i++) d[i] = ins[i] ? 1 : t.dims[j++];
  return reshape_out(I, n, (int)r, d);
}

static rlx_status *map_transpose(rlx_imp *I, const Onnx__NodeProto *n) {
  size_t np;
  const int64_t *perm = imp_attr_ints(n, "perm", &np);
  rlx_attr a = RLX_ATTR_IS("perm", np, perm);
  return imp_op_out(I, n, RLX_OP_TRANSPOSE, 1, 1, &a);
}

static rlx_status *map_concat(rlx_imp *I, const Onnx__NodeProto *n) {
  size_t k = imp_nin(n);
  rlx_value in[256], y;
  if (k > 256) IMP_FAIL(UNIMPLEMENTED, "Concat of %zu inputs", k);
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if (!imp_has(n, i)) continue;
    RLX_TRY(imp_in(I, n, i, &in[m]));
    /* ONNX allows empty inputs; they contribute nothing */
    const rlx_type *t = imp_type(I, in[m]);
    int64_t cnt;
    if (m > 0 && rlx_type_is_static(t) && !rlx_type_numel(t, &cnt) && cnt == 0) continue;
    m++;
  }
  rlx_attr a = RLX_ATTR_I("axis", imp_attr_i(n, "axis", 0));
  RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, m, in, 1, &a, &y));
  return imp_out(I, n, 0, y);
}


static rlx_status *map_split(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, false, &t));
  int64_t axis = imp_axis(imp_attr_i(n, "axis", 0), t.rank);
  if (axis < 0 || axis >= t.rank || t.dims[axis] < 0) IMP_FAIL(INVALID_ARGUMENT, "bad split axis for %s", RLX_TYPE_STR(&t));
  int64_t *split = NULL;
  size_t ns = 0;
  bool present;
  RLX_TRY(imp_axes(I, n, "split", 1, I->opset >= 13, &split, &ns, &present));
  size_t nout = n->n_output;
  rlx_status *st = NULL;
  int64_t sizes[256];
  if (nout > 256) st = RLX_ERR(UNIMPLEMENTED, "Split into %zu outputs", nout);
  if (!st && ns) {
    if (ns != nout) st = RLX_ERR(INVALID_ARGUMENT, "split has %zu entries for %zu outputs", ns, nout);
    for (size_t i = 0; !st && i < ns; i++) sizes[i] = split[i];
  } else if (!st) {
    int64_t d = t.dims[axis], parts = (int64_t)nout, chunk = (d + parts - 1) / parts;
    for (int64_t i = 0; i < parts; i++) {
      int64_t s = i * chunk;
      sizes[i] = s >= d ? 0 : (s + chunk > d ? d - s : chunk);
    }
  }
  free(split);
  int64_t off = 0;
  for (size_t i = 0; !st && i < nout; i++) {
    rlx_value x, y;
    st = imp_in(I, n, 0, &x);
    if (!st) st = imp_narrow(I, n, x, axis, off, sizes[i], &y);
    if (!st) st = imp_out(I, n, i, y);
    off += sizes[i];
  }
  return st;
}

static rlx_status *map_slice(rlx_imp *I, const Onnx__NodeProto *n) {
  int64_t *st = NULL, *en = NULL, *ax = NULL, *sp = NULL;
  size_t ns = 0, ne = 0, na = 0, nsp = 0;
  rlx_status *e = NULL;
  if (I->opset < 10) {
    e = imp_attr_ints_copy(n, "starts", &st, &ns);
    if (!e) e = imp_attr_ints_copy(n, "ends", &en, &ne);
    if (!e) e = imp_attr_ints_copy(n, "axes", &ax, &na);
  } else {
    e = imp_const_ints(I, n, 1, "starts", &st, &ns);
    if (!e) e = imp_const_ints(I, n, 2, "ends", &en, &ne);
    if (!e && imp_has(n, 3)) e = imp_const_ints(I, n, 3, "axes", &ax, &na);
    if (!e && imp_has(n, 4)) e = imp_const_ints(I, n, 4, "steps", &sp, &nsp);
  }
  rlx_value x, y;
  if (!e) e = imp_in(I, n, 0, &x);
  rlx_attr a[4] = {RLX_ATTR_IS("starts", ns, st), RLX_ATTR_IS("ends", ne, en), RLX_ATTR_IS("axes", na, ax), RLX_ATTR_IS("steps", nsp, sp)};
  if (!e) e = imp_add(I, n, RLX_OP_SLICE, 1, &x, 4, a, &y);
  if (!e) e = imp_out(I, n, 0, y);
  free(st), free(en), free(ax), free(sp);
  return e;
}

static rlx_status *map_gather(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_attr a = RLX_ATTR_I("axis", imp_attr_i(n, "axis", 0));
  return imp_op_out(I, n, RLX_OP_GATHER, 2, 1, &a);
}
static rlx_status *map_gather_elements(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_attr a = RLX_ATTR_I("axis", imp_attr_i(n, "axis", 0));
  return imp_op_out(I, n, RLX_OP_GATHER_ELEMENTS, 2, 1, &a);
}
static rlx_status *map_gather_nd(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_attr a = RLX_ATTR_I("batch_dims", imp_attr_i(n, "batch_dims", 0));
  return imp_op_out(I, n, RLX_OP_GATHER_ND, 2, 1, &a);
}
static rlx_status *map_scatter_elements(rlx_imp *I, const Onnx__NodeProto *n) {
  char buf[16];
  rlx_attr a[2] = {RLX_ATTR_I("axis", imp_attr_i(n, "axis", 0)), RLX_ATTR_S("reduction", imp_attr_s(n, "reduction", "none", buf, sizeof buf))};
  return imp_op_out(I, n, RLX_OP_SCATTER_ELEMENTS, 3, 2, a);
}
static rlx_status *map_scatter_nd(rlx_imp *I, const Onnx__NodeProto *n) {
  char buf[16];
  rlx_attr a = RLX_ATTR_S("reduction", imp_attr_s(n, "reduction", "none", buf, sizeof buf));
  return imp_op_out(I, n, RLX_OP_SCATTER_ND, 3, 1, &a);
}

/* op(x) with the ints attribute `attr` taken from input 1, known at import time. */
static rlx_status *with_known_ints(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, const char *attr) {
  int64_t *v;
  size_t r;
  RLX_TRY(imp_const_ints(I, n, 1, attr, &v, &r));
  rlx_attr a = RLX_ATTR_IS(attr, r, v);
  rlx_status *st = imp_op_out(I, n, op, 1, 1, &a);
  free(v);
  return st;
}
static rlx_status *map_expand(rlx_imp *I, const Onnx__NodeProto *n) { return with_known_ints(I, n, RLX_OP_EXPAND, "shape"); }
static rlx_status *map_tile(rlx_imp *I, const Onnx__NodeProto *n) { return with_known_ints(I, n, RLX_OP_TILE, "repeats"); }

static rlx_status *map_pad(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, false, &t));
  char buf[16];
  const char *mode = imp_attr_s(n, "mode", "constant", buf, sizeof buf);
  int64_t *pads = NULL, *axes = NULL;
  size_t np = 0, na = 0;
  double value = 0;
  rlx_status *st = NULL;
  if (I->opset < 11) {
    st = imp_attr_ints_copy(n, I->opset < 2 ? "paddings" : "pads", &pads, &np);
    value = imp_attr_f(n, "value", 0);
  } else {
    st = imp_const_ints(I, n, 1, "pads", &pads, &np);
    if (!st && imp_has(n, 2)) {
      const rlx_tensor *v = imp_const(I, n, 2);
      if (!v) st = RLX_ERR(UNIMPLEMENTED, "constant_value must be known at import time");
      else value = rlx_tensor_get_f64(v, 0);
    }
    if (!st && imp_has(n, 3)) st = imp_const_ints(I, n, 3, "axes", &axes, &na);
  }
  int64_t full[2 * RLX_MAX_RANK] = {0};
  if (!st && na) { /* pads for the listed axes only */
    if (np != 2 * na) st = RLX_ERR(INVALID_ARGUMENT, "pads has %zu entries for %zu axes", np, na);
    for (size_t i = 0; !st && i < na; i++) {
      int64_t a = imp_axis(axes[i], t.rank);
      if (a < 0 || a >= t.rank) st = RLX_ERR(OUT_OF_RANGE, "axes[%zu] = %lld for rank %d", i, (long long)axes[i], t.rank);
      else full[a] = pads[i], full[a + t.rank] = pads[i + na];
    }
    np = 2 * (size_t)t.rank;
  } else if (!st) {
    if (np != 2 * (size_t)t.rank) st = RLX_ERR(INVALID_ARGUMENT, "pads has %zu entries for rank %d", np, t.rank);
    else memcpy(full, pads, np * 8);
  }
  free(pads), free(axes);
  if (st) return st;
  rlx_attr a[3] = {RLX_ATTR_IS("pads", np, full), RLX_ATTR_S("mode", mode), RLX_ATTR_F("value", value)};
  return imp_op_out(I, n, RLX_OP_PAD, 1, 3, a);
}

/* DepthToSpace (DCR / CRD) and SpaceToDepth: reshape, transpose, reshape (ONNX operator docs). */
static rlx_status *depth_space(rlx_imp *I, const Onnx__NodeProto *n, bool to_space) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  if (t.rank != 4) IMP_FAIL(INVALID_ARGUMENT, "input must be [N,C,H,W], got %s", RLX_TYPE_STR(&t));
  int64_t b = imp_attr_i(n, "blocksize", 0), N = t.dims[0], C = t.dims[1], H = t.dims[2], W = t.dims[3];
  char buf[8];
  bool crd = !strcmp(imp_attr_s(n, "mode", "DCR", buf, sizeof buf), "CRD");
  if (b <= 0) IMP_FAIL(INVALID_ARGUMENT, "blocksize must be > 0");
  int64_t s6[6], perm[6], out[4];
  if (to_space) {
    if (crd) memcpy(s6, (int64_t[]){N, C / (b * b), b, b, H, W}, sizeof s6), memcpy(perm, (int64_t[]){0, 1, 4, 2, 5, 3}, sizeof perm);
    else memcpy(s6, (int64_t[]){N, b, b, C / (b * b), H, W}, sizeof s6), memcpy(perm, (int64_t[]){0, 3, 4, 1, 5, 2}, sizeof perm);
    memcpy(out, (int64_t[]){N, C / (b * b), H * b, W * b}, sizeof out);
  } else {
    memcpy(s6, (int64_t[]){N, C, H / b, b, W / b, b}, sizeof s6), memcpy(perm, (int64_t[]){0, 3, 5, 1, 2, 4}, sizeof perm);
    memcpy(out, (int64_t[]){N, C * b * b, H / b, W / b}, sizeof out);
  }
  rlx_value x, y;
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_reshape(I, n, x, 6, s6, &y));
  RLX_TRY(imp_transpose(I, n, y, 6, perm, &y));
  RLX_TRY(imp_reshape(I, n, y, 4, out, &y));
  return imp_out(I, n, 0, y);
}
static rlx_status *map_depth_to_space(rlx_imp *I, const Onnx__NodeProto *n) { return depth_space(I, n, true); }
static rlx_status *map_space_to_depth(rlx_imp *I, const Onnx__NodeProto *n) { return depth_space(I, n, false); }

/* Trilu: keep x where j - i <= k (lower) or j - i >= k (upper); the mask is a constant. */
static rlx_status *map_trilu(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  if (t.rank < 2) IMP_FAIL(INVALID_ARGUMENT, "input must have rank >= 2");
  int64_t k = 0;
  if (imp_has(n, 1)) {
    const rlx_tensor *kt = imp_const(I, n, 1);
    if (!kt) IMP_FAIL(UNIMPLEMENTED, "k must be known at import time");
    k = imp_tensor_i64(kt, 0);
  }
  bool upper = imp_attr_i(n, "upper", 1) != 0;
  int64_t R = t.dims[t.rank - 2], C = t.dims[t.rank - 1], cells;
  RLX_TRY(imp_table_size("the Trilu mask", 1, 2, (int64_t[]){R, C}, &cells));
  rlx_tensor *m;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_BOOL, 2, (int64_t[]){R, C}, NULL, 0, &m));
  unsigned char *p = rlx_tensor_data(m);
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) p[i * C + j] = upper ? (j - i >= k) : (j - i <= k);
  rlx_value x, mv, z, y;
  rlx_status *st = imp_tensor_const(I, m, &mv);
  rlx_tensor_free(m);
  RLX_TRY(st);
  RLX_TRY(imp_in(I, n, 0, &x));
  RLX_TRY(imp_scalar(I, 0, t.dtype, &z));
  RLX_TRY(imp_select(I, n, mv, x, z, &y));
  return imp_out(I, n, 0, y);
}

/* OneHot(indices, depth, values[off, on]): (idx mod depth == arange(depth)) along axis. */
static rlx_status *map_one_hot(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type ti;
  RLX_TRY(imp_in_type(I, n, 0, false, &ti));
  const rlx_tensor *dt = imp_const(I, n, 1);
  if (!dt) IMP_FAIL(UNIMPLEMENTED, "depth must be known at import time");
  int64_t depth = imp_tensor_i64(dt, 0), r = ti.rank + 1, axis = imp_axis(imp_attr_i(n, "axis", -1), r);
  if (r > RLX_MAX_RANK || axis < 0 || axis >= r) IMP_FAIL(INVALID_ARGUMENT, "bad axis for indices %s", RLX_TYPE_STR(&ti));
  rlx_value idx, vals, ar, eq, on, off, y;
  RLX_TRY(imp_in(I, n, 0, &idx));
  RLX_TRY(imp_in(I, n, 2, &vals));
  RLX_TRY(imp_cast(I, n, idx, RLX_DTYPE_I64, &idx));
  /* negative indices count from the end */
  rlx_value neg, wrapped;
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_LESS, idx, 0, &neg));
  RLX_TRY(imp_with_scalar(I, n, RLX_OP_ADD, idx, (double)depth, &wrapped));
  RLX_TRY(imp_select(I, n, neg, wrapped, idx, &idx));
  int64_t d[RLX_MAX_RANK];
  for (int64_t i = 0, j = 0; i < r; i++) d[i] = i == axis ? 1 : ti.dims[j++];
  RLX_TRY(imp_reshape(I, n, idx, (int)r, d, &idx));
  RLX_TRY(imp_arange(I, depth, &ar));
  RLX_TRY(imp_along(I, n, ar, (int)r, axis, depth, &ar));
  RLX_TRY(imp_bin(I, n, RLX_OP_EQUAL, idx, ar, &eq));
  RLX_TRY(imp_narrow(I, n, vals, 0, 0, 1, &off));
  RLX_TRY(imp_narrow(I, n, vals, 0, 1, 1, &on));
  RLX_TRY(imp_reshape(I, n, off, 0, NULL, &off));
  RLX_TRY(imp_reshape(I, n, on, 0, NULL, &on));
  RLX_TRY(imp_select(I, n, eq, on, off, &y));
  return imp_out(I, n, 0, y);
}

static rlx_status *map_eye_like(rlx_imp *I, const Onnx__NodeProto *n) {
  rlx_type t;
  RLX_TRY(imp_in_type(I, n, 0, true, &t));
  if (t.rank != 2) IMP_FAIL(INVALID_ARGUMENT, "input must be 2-D");
  rlx_dtype dt = t.dtype;
  if (imp_attr(n, "dtype")) RLX_TRY(rlx_onnx_dtype((int32_t)imp_attr_i(n, "dtype", 1), &dt));
  int64_t k = imp_attr_i(n, "k", 0), R = t.dims[0], C = t.dims[1], cells;
  RLX_TRY(imp_table_size("the EyeLike mask", 1, 2, (int64_t[]){R, C}, &cells));
  rlx_tensor *m;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_BOOL, 2, t.dims, NULL, 0, &m));
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) ((unsigned char *)rlx_tensor_data(m))[i * C + j] = j - i == k;
  rlx_value v, y;
  rlx_status *st = imp_tensor_const(I, m, &v);
  rlx_tensor_free(m);
  RLX_TRY(st);
  RLX_TRY(imp_cast(I, n, v, dt, &y));
  return imp_out(I, n, 0, y);
}

const rlx_onnx_op rlx_onnx_tensor_ops[] = {
    {"Constant", 0, map_constant, false},
    {"Shape", 0, map_shape, false},
    {"Size", 0, map_size, false},
    {"ConstantOfShape", 0, map_constant_of_shape, false},
    {"Range", 0, map_range, false},
    {"Reshape", 0, map_reshape, false},
    {"Flatten", 0, map_flatten, false},
    {"Squeeze", 0, map_squeeze, false},
    {"Unsqueeze", 0, map_unsqueeze, false},
    {"Transpose", 0, map_transpose, false},
    {"Concat", 0, map_concat, false},
    {"Split", 0, map_split, false},
    {"Slice", 0, map_slice, false},
    {"Gather", 0, map_gather, false},
    {"GatherElements", 0, map_gather_elements, false},
    {"GatherND", 0, map_gather_nd, false},
    {"ScatterElements", 0, map_scatter_elements, false},
    {"Scatter", 0, map_scatter_elements, false},
    {"ScatterND", 0, map_scatter_nd, false},
    {"Expand", 0, map_expand, false},
    {"Tile", 6, map_tile, false},
    {"Pad", 0, map_pad, false},
    {"DepthToSpace", 0, map_depth_to_space, false},
    {"SpaceToDepth", 0, map_space_to_depth, false},
    {"Trilu", 0, map_trilu, false},
    {"OneHot", 0, map_one_hot, false},
    {"EyeLike", 0, map_eye_like, false},
};
const size_t rlx_onnx_tensor_ops_len = RLX_ARRAY_LEN(rlx_onnx_tensor_ops);
