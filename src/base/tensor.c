/* tensor.c: host tensors. */
#include "rlx/tensor.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

struct rlx_tensor {
  rlx_type type;
  int64_t numel;
  size_t nbytes;
  void *data;
  bool owns;
};

static rlx_status *check_static(rlx_dtype dtype, int32_t rank, const int64_t *dims, rlx_type *t,
                                int64_t *numel, size_t *nbytes) {
  RLX_TRY(rlx_type_make(dtype, rank, dims, t));
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) return RLX_ERR(INVALID_ARGUMENT, "tensor dim %d is %lld; tensors need static dims", i, (long long)dims[i]);
  RLX_TRY(rlx_type_numel(t, numel));
  return rlx_type_nbytes(t, nbytes);
}

static rlx_status *make(rlx_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                        size_t nbytes, bool copy, rlx_tensor **out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "%s: out is NULL", copy ? "rlx_tensor_create" : "rlx_tensor_wrap");
  rlx_type t;
  int64_t numel;
  size_t need;
  RLX_TRY(check_static(dtype, rank, dims, &t, &numel, &need));
  if (data && nbytes != need) {
    char buf[160];
    return RLX_ERR(INVALID_ARGUMENT, "tensor %s needs %zu bytes, got %zu", rlx_type_str(&t, buf, sizeof buf), need, nbytes);
  }
  if (!copy && !data && need) return RLX_ERR(INVALID_ARGUMENT, "rlx_tensor_wrap: data is NULL");
  rlx_tensor *x = calloc(1, sizeof *x);
  if (!x) return RLX_OOM();
  x->type = t;
  x->numel = numel;
  x->nbytes = need;
  if (copy) {
    x->data = need ? malloc(need) : NULL;
    if (need && !x->data) {
      free(x);
      return RLX_OOM();
    }
    if (need) {
      if (data) memcpy(x->data, data, need);
      else memset(x->data, 0, need);
    }
    x->owns = true;
  } else {
    x->data = data;
  }
  *out = x;
  return NULL;
}

rlx_status *rlx_tensor_create(rlx_dtype dtype, int32_t rank, const int64_t *dims, const void *data,
                              size_t nbytes, rlx_tensor **out) {
  return make(dtype, rank, dims, (void *)data, nbytes, true, out);
}

rlx_status *rlx_tensor_wrap(rlx_dtype dtype, int32_t rank, const int64_t *dims, void *data,
                            size_t nbytes, rlx_tensor **out) {
  return make(dtype, rank, dims, data, nbytes, false, out);
}

rlx_status *rlx_tensor_copy(const rlx_tensor *t, rlx_tensor **out) {
  if (!t) return RLX_ERR(INVALID_ARGUMENT, "rlx_tensor_copy: tensor is NULL");
  return make(t->type.dtype, t->type.rank, t->type.dims, t->data, t->nbytes, true, out);
}

void rlx_tensor_free(rlx_tensor *t) {
  if (!t) return;
  if (t->owns) free(t->data);
  free(t);
}

const rlx_type *rlx_tensor_type(const rlx_tensor *t) { return &t->type; }
rlx_dtype rlx_tensor_dtype(const rlx_tensor *t) { return t->type.dtype; }
int32_t rlx_tensor_rank(const rlx_tensor *t) { return t->type.rank; }
const int64_t *rlx_tensor_dims(const rlx_tensor *t) { return t->type.dims; }
int64_t rlx_tensor_numel(const rlx_tensor *t) { return t->numel; }
size_t rlx_tensor_nbytes(const rlx_tensor *t) { return t->nbytes; }
void *rlx_tensor_data(rlx_tensor *t) { return t->data; }
const void *rlx_tensor_cdata(const rlx_tensor *t) { return t->data; }

double rlx_tensor_get_f64(const rlx_tensor *t, int64_t i) {
  if (i < 0 || i >= t->numel) return 0.0;
  const unsigned char *p = (const unsigned char *)t->data + (size_t)i * rlx_dtype_size(t->type.dtype);
#define LOAD(T) do { T v_; memcpy(&v_, p, sizeof v_); return (double)v_; } while (0)
  switch (t->type.dtype) {
    case RLX_DTYPE_F32: case RLX_DTYPE_C64: LOAD(float);
    case RLX_DTYPE_F64: LOAD(double);
    case RLX_DTYPE_I8: LOAD(int8_t);
    case RLX_DTYPE_I16: LOAD(int16_t);
    case RLX_DTYPE_I32: LOAD(int32_t);
    case RLX_DTYPE_I64: LOAD(int64_t);
    case RLX_DTYPE_U8: case RLX_DTYPE_BOOL: LOAD(uint8_t);
    case RLX_DTYPE_U16: LOAD(uint16_t);
    case RLX_DTYPE_U32: LOAD(uint32_t);
    case RLX_DTYPE_U64: LOAD(uint64_t);
    case RLX_DTYPE_F16: { uint16_t h; memcpy(&h, p, 2); return rlx_f16_to_f32(h); }
    case RLX_DTYPE_BF16: { uint16_t h; memcpy(&h, p, 2); return rlx_bf16_to_f32(h); }
    default: return rlx_lowp_to_f32(t->type.dtype, *p);
  }
#undef LOAD
}

void rlx_tensor_summary(const rlx_tensor *t, char *buf, size_t cap) {
  char ty[160];
  rlx_type_str(&t->type, ty, sizeof ty);
  if (t->numel == 0) {
    snprintf(buf, cap, "%s empty", ty);
    return;
  }
  double lo = rlx_tensor_get_f64(t, 0), hi = lo, sum = 0;
  for (int64_t i = 0; i < t->numel; i++) {
    double v = rlx_tensor_get_f64(t, i);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
  }
  snprintf(buf, cap, "%s min %.6g max %.6g mean %.6g", ty, lo, hi, sum / (double)t->numel);
}
