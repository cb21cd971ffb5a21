/* import_helpers.c: what the op mappings use to read an ONNX node (inputs, known values,
 * attributes), define its outputs and add rlx nodes for it. */
#include <stdlib.h>
#include <string.h>

#include "onnx/importer.h"

/* ---- the node's inputs and outputs ---- */

size_t imp_nin(const Onnx__NodeProto *n) {
  size_t k = n->n_input;
  while (k > 0 && !*n->input[k - 1]) k--;
  return k;
}

bool imp_has(const Onnx__NodeProto *n, size_t k) { return k < n->n_input && n->input[k][0]; }

rlx_status *imp_in(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value *out) {
  if (!imp_has(n, k)) return RLX_ERR(INVALID_ARGUMENT, "input %zu is missing", k);
  return imp_value(I, n->input[k], out);
}

const rlx_type *imp_type(rlx_imp *I, rlx_value v) { return rlx_graph_value_type(I->g, v); }

const rlx_tensor *imp_known(rlx_imp *I, const Onnx__NodeProto *n, size_t k) {
  if (!imp_has(n, k)) return NULL;
  const imp_val *v = imp_lookup(I, n->input[k]);
  return v ? v->data : NULL;
}

const rlx_tensor *imp_const(rlx_imp *I, const Onnx__NodeProto *n, size_t k) {
  const rlx_tensor *t = imp_known(I, n, k);
  if (t || !imp_has(n, k) || !imp_lookup(I, n->input[k])) return t;
  rlx_status *st = imp_eval(I, n->input[k], &t);
  if (!st) return t;
  rlx_status_free(st); /* the caller reports that the value must be known at import time */
  return NULL;
}

static rlx_status *const_numbers(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, bool ints, void **out,
                                 size_t *cnt) {
  const rlx_tensor *t = imp_const(I, n, k);
  if (!t) {
    if (!imp_has(n, k)) return RLX_ERR(INVALID_ARGUMENT, "input %zu (%s) is missing", k, what);
    return RLX_ERR(UNIMPLEMENTED, "input %zu (%s) must be known at import time (a constant, an initializer or computed from static shapes); "
                                  "fix symbolic input dims with --dim/--shape", k, what);
  }
  int64_t c = rlx_tensor_numel(t);
  void *buf = malloc((size_t)(c ? c : 1) * 8);
  if (!buf) return RLX_OOM();
  for (int64_t i = 0; i < c; i++) {
    if (ints) ((int64_t *)buf)[i] = imp_tensor_i64(t, i);
    else ((double *)buf)[i] = rlx_tensor_get_f64(t, i);
  }
  *out = buf;
  *cnt = (size_t)c;
  return NULL;
}

rlx_status *imp_const_ints(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, int64_t **out, size_t *cnt) {
  return const_numbers(I, n, k, what, true, (void **)out, cnt);
}

rlx_status *imp_const_floats(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, double **out, size_t *cnt) {
  return const_numbers(I, n, k, what, false, (void **)out, cnt);
}

rlx_status *imp_in_type(rlx_imp *I, const Onnx__NodeProto *n, size_t k, bool need_static, rlx_type *out) {
  if (!imp_has(n, k)) return RLX_ERR(INVALID_ARGUMENT, "input %zu is missing", k);
  const rlx_type *t = imp_name_type(I, n->input[k]);
  if (!t) return RLX_ERR(INVALID_ARGUMENT, "value '%s' is not defined", n->input[k]);
  if (need_static && !rlx_type_is_static(t))
    return RLX_ERR(UNIMPLEMENTED, "input %zu ('%s') has symbolic dims %s; fix the model's input dims with --dim/--shape", k,
                   n->input[k], RLX_TYPE_STR(t));
  *out = *t;
  return NULL;
}

rlx_status *imp_out(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value v) {
  if (k >= n->n_output || !n->output[k][0]) return NULL; /* optional output not requested */
  return imp_define(I, n->output[k], (imp_val){.v = v, .has_v = true});
}

rlx_status *imp_out_data(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_tensor *t) {
  if (k >= n->n_output || !n->output[k][0]) {
    rlx_tensor_free(t);
    return NULL;
  }
  rlx_status *st = imp_define(I, n->output[k], (imp_val){.data = t, .owns_data = true});
  if (st) rlx_tensor_free(t);
  return st;
}

/* ---- attributes ---- */

const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

int64_t imp_attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  return a && a->has_i ? a->i : dflt;
}

double imp_attr_f(const Onnx__NodeProto *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  return a && a->has_f ? a->f : dflt;
}

const char *imp_attr_s(const Onnx__NodeProto *n, const char *name, const char *dflt, char *buf, size_t cap) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a || !a->has_s) return dflt;
  size_t l = a->s.len < cap - 1 ? a->s.len : cap - 1;
  memcpy(buf, a->s.data, l);
  buf[l] = '\0';
  return buf;
}

const int64_t *imp_attr_ints(const Onnx__NodeProto *n, const char *name, size_t *cnt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *cnt = a ? a->n_ints : 0;
  return a ? a->ints : NULL;
}

const float *imp_attr_floats(const Onnx__NodeProto *n, const char *name, size_t *cnt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *cnt = a ? a->n_floats : 0;
  return a ? a->floats : NULL;
}

rlx_status *imp_attr_ints_copy(const Onnx__NodeProto *n, const char *name, int64_t **out, size_t *cnt) {
  size_t c;
  const int64_t *a = imp_attr_ints(n, name, &c);
  int64_t *v = malloc((c ? c : 1) * sizeof *v);
  if (!v) return RLX_OOM();
  if (c) memcpy(v, a, c * sizeof *v);
  *out = v;
  *cnt = c;
  return NULL;
}

/* ---- numbers from the file ---- */

int64_t imp_sat_i64(double v) {
  if (v != v) return 0;
  if (v <= -0x1p63) return INT64_MIN;
  return v >= 0x1p63 ? INT64_MAX : (int64_t)v;
}

int64_t imp_tensor_i64(const rlx_tensor *t, int64_t i) {
  if (rlx_tensor_dtype(t) != RLX_DTYPE_I64 || i < 0 || i >= rlx_tensor_numel(t)) return imp_sat_i64(rlx_tensor_get_f64(t, i));
  int64_t v; /* exact: int64 values beyond 2^53 (INT64_MAX sentinels in Slice) */
  memcpy(&v, (const char *)rlx_tensor_cdata(t) + 8 * i, 8);
  return v;
}

rlx_status *imp_table_size(const char *what, size_t elem, int n, const int64_t *f, int64_t *count) {
  int64_t c = 1;
  bool over = false;
  for (int i = 0; i < n; i++) {
    if (f[i] < 0) return RLX_ERR(INVALID_ARGUMENT, "%s with a negative size (%lld)", what, (long long)f[i]);
    over |= !rlx_mul_i64(c, f[i], &c);
  }
  if (over)
    return RLX_ERR(RESOURCE_EXHAUSTED, "%s of more than 2^63 entries is more than a value computed while importing may take (%lld bytes)",
                   what, (long long)RLX_ONNX_MAX_FOLD_BYTES);
  if (c > RLX_ONNX_MAX_FOLD_BYTES / (int64_t)elem)
    return RLX_ERR(RESOURCE_EXHAUSTED, "%s of %lld entries of %zu bytes is more than a value computed while importing may take (%lld bytes)",
                   what, (long long)c, elem, (long long)RLX_ONNX_MAX_FOLD_BYTES);
  *count = c;
  return NULL;
}

/* ---- adding rlx nodes ---- */

const char *imp_node_label(const Onnx__NodeProto *n) {
  if (n->name && *n->name) return n->name;
  return n->n_output && n->output[0] ? n->output[0] : n->op_type ? n->op_type : "";
}

rlx_status *imp_addn(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                     const rlx_attr *a, size_t cap, rlx_value *out, size_t *nout) {
  return rlx_graph_add(I->g, op, n ? imp_node_label(n) : NULL, nin, in, na, a, cap, out, nout);
}

rlx_status *imp_add(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                    const rlx_attr *a, rlx_value *out) {
  return imp_addn(I, n, op, nin, in, na, a, 1, out, NULL);
}

rlx_status *imp_op_out(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, size_t na, const rlx_attr *a) {
  rlx_value in[8], y;
  if (nin > RLX_ARRAY_LEN(in)) return RLX_ERR(INTERNAL, "imp_op_out: %zu inputs", nin);
  for (size_t i = 0; i < nin; i++) RLX_TRY(imp_in(I, n, i, &in[i]));
  RLX_TRY(imp_add(I, n, op, nin, in, na, a, &y));
  return imp_out(I, n, 0, y);
}

rlx_status *imp_tensor_const(rlx_imp *I, const rlx_tensor *t, rlx_value *out) {
  return rlx_graph_add_constant(I->g, rlx_tensor_type(t), rlx_tensor_cdata(t), rlx_tensor_nbytes(t), out);
}

rlx_status *imp_host_const(rlx_imp *I, rlx_dtype dt, int rank, const int64_t *dims, const void *data, rlx_value *out) {
  rlx_type ty;
  size_t nbytes;
  RLX_TRY(rlx_type_make(dt, rank, dims, &ty));
  RLX_TRY(rlx_type_nbytes(&ty, &nbytes));
  return rlx_graph_add_constant(I->g, &ty, data, nbytes, out);
}

rlx_status *imp_arange(rlx_imp *I, int64_t L, rlx_value *y) {
  RLX_TRY(imp_table_size("an arange", sizeof(int64_t), 1, &L, &L));
  int64_t *a = malloc(sizeof(int64_t) * (size_t)(L > 0 ? L : 1));
  if (!a) return RLX_OOM();
  for (int64_t i = 0; i < L; i++) a[i] = i;
  rlx_status *st = imp_host_const(I, RLX_DTYPE_I64, 1, &L, a, y);
  free(a);
  return st;
}


rlx_status *imp_scalar(rlx_imp *I, double v, rlx_dtype dt, rlx_value *out) {
  unsigned char buf[8] = {0};
  switch (dt) {
    case RLX_DTYPE_F32: { float f = (float)v; memcpy(buf, &f, 4); break; }
    case RLX_DTYPE_F64: memcpy(buf, &v, 8); break;
    case RLX_DTYPE_I8: case RLX_DTYPE_U8: buf[0] = (unsigned char)imp_sat_i64(v); break;
    case RLX_DTYPE_BOOL: buf[0] = v != 0; break;
    case RLX_DTYPE_I16: case RLX_DTYPE_U16: { uint16_t h = (uint16_t)imp_sat_i64(v); memcpy(buf, &h, 2); break; }
    case RLX_DTYPE_I32: case RLX_DTYPE_U32: { int32_t i = (int32_t)imp_sat_i64(v); memcpy(buf, &i, 4); break; }
    case RLX_DTYPE_I64: case RLX_DTYPE_U64: { int64_t i = imp_sat_i64(v); memcpy(buf, &i, 8); break; }
    default: { /* float16/bfloat16/complex: make f32 and cast */
      float f = (float)v;
      memcpy(buf, &f, 4);
      rlx_type t = {.dtype = RLX_DTYPE_F32};
      rlx_value c;
      RLX_TRY(rlx_graph_add_constant(I->g, &t, buf, 4, &c));
      return imp_cast(I, NULL, c, dt, out);
    }
  }
  rlx_type t = {.dtype = dt};
  return rlx_graph_add_constant(I->g, &t, buf, rlx_dtype_size(dt), out);
}

rlx_status *imp_cast_sat(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_dtype dt, bool saturate, rlx_value *out) {
  if (imp_type(I, v)->dtype == dt) return *out = v, NULL;
  rlx_attr a[2] = {RLX_ATTR_I("to", dt), RLX_ATTR_I("saturate", saturate)};
  return imp_add(I, n, RLX_OP_CAST, 1, &v, 2, a, out);
}

rlx_status *imp_cast(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_dtype dt, rlx_value *out) {
  return imp_cast_sat(I, n, v, dt, true, out);
}

rlx_status *imp_reshape(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int rank, const int64_t *dims, rlx_value *out) {
  rlx_attr a = RLX_ATTR_IS("shape", (size_t)rank, dims);
  return imp_add(I, n, RLX_OP_RESHAPE, 1, &v, 1, &a, out);
}

/* y = op(x, c) with a scalar constant c of x's dtype. */
rlx_status *imp_with_scalar(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value x, double c, rlx_value *y) {
  rlx_value in[2] = {x};
  RLX_TRY(imp_scalar(I, c, imp_type(I, x)->dtype, &in[1]));
  return imp_add(I, n, op, 2, in, 0, NULL, y);
}

rlx_status *imp_bin(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value a, rlx_value b, rlx_value *y) {
  rlx_value in[2] = {a, b};
  return imp_add(I, n, op, 2, in, 0, NULL, y);
}

rlx_status *imp_un(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value a, rlx_value *y) {
  return imp_add(I, n, op, 1, &a, 0, NULL, y);
}

rlx_status *imp_select(rlx_imp *I, const Onnx__NodeProto *n, rlx_value c, rlx_value a, rlx_value b, rlx_value *y) {
  rlx_value in[3] = {c, a, b};
  return imp_add(I, n, RLX_OP_WHERE, 3, in, 0, NULL, y);
}

rlx_status *imp_narrow(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t axis, int64_t start, int64_t len, rlx_value *y) {
  rlx_attr a[3] = {RLX_ATTR_I("axis", axis), RLX_ATTR_I("start", start), RLX_ATTR_I("length", len)};
  return imp_add(I, n, RLX_OP_NARROW, 1, &x, 3, a, y);
}

rlx_status *imp_expand(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int rank, const int64_t *dims, rlx_value *y) {
  rlx_attr a = RLX_ATTR_IS("shape", (size_t)rank, dims);
  return imp_add(I, n, RLX_OP_EXPAND, 1, &x, 1, &a, y);
}

rlx_status *imp_filled(rlx_imp *I, const Onnx__NodeProto *n, double v, rlx_dtype dt, int rank, const int64_t *dims, rlx_value *y) {
  rlx_value c;
  RLX_TRY(imp_scalar(I, v, dt, &c));
  return imp_expand(I, n, c, rank, dims, y);
}

rlx_status *imp_gather(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value x, rlx_value idx, int64_t axis, rlx_value *y) {
  rlx_attr a = RLX_ATTR_I("axis", axis);
  return imp_add(I, n, op, 2, (rlx_value[]){x, idx}, 1, &a, y);
}

rlx_status *imp_along(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int rank, int64_t axis, int64_t L, rlx_value *y) {
  int64_t d[RLX_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = i == axis ? L : 1;
  return imp_reshape(I, n, v, rank, d, y);
}

rlx_status *imp_transpose(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int rank, const int64_t *perm, rlx_value *y) {
  rlx_attr a = RLX_ATTR_IS("perm", (size_t)rank, perm);
  return imp_add(I, n, RLX_OP_TRANSPOSE, 1, &x, 1, &a, y);
}

rlx_status *imp_concat_many(rlx_imp *I, const Onnx__NodeProto *n, rlx_value *v, size_t count, int64_t axis, rlx_value *y) {
  enum { MAX_IN = 256 }; /* Concat's arity */
  rlx_attr a = RLX_ATTR_I("axis", axis);
  while (count > MAX_IN) { /* concatenate groups of MAX_IN in place until one group is left */
    size_t groups = (count + MAX_IN - 1) / MAX_IN;
    for (size_t gi = 0; gi < groups; gi++) {
      size_t lo = gi * MAX_IN, len = count - lo < MAX_IN ? count - lo : MAX_IN;
      RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, len, v + lo, 1, &a, &v[gi]));
    }
    count = groups;
  }
  return imp_add(I, n, RLX_OP_CONCAT, count, v, 1, &a, y);
}
