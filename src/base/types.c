/* types.c: dtypes and tensor types. */
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "rlx/types.h"

static const struct {
  const char *name;
  size_t size;
} dtype_info[] = {
#define RLX_X(e, n, s) {n, s},
    RLX_DTYPE_TABLE(RLX_X)
#undef RLX_X
};

size_t rlx_dtype_size(rlx_dtype dt) {
  return (unsigned)dt < RLX_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

const char *rlx_dtype_name(rlx_dtype dt) {
  return (unsigned)dt < RLX_DTYPE_COUNT ? dtype_info[dt].name : "invalid";
}

rlx_status *rlx_dtype_from_name(const char *name, rlx_dtype *out) {
  for (int i = 0; name && i < RLX_DTYPE_COUNT; i++)
    if (strcmp(name, dtype_info[i].name) == 0) {
      *out = (rlx_dtype)i;
      return NULL;
    }
  return RLX_ERR(NOT_FOUND, "unknown dtype '%s'", name ? name : "(null)");
}

bool rlx_dtype_is_float(rlx_dtype dt) {
  return dt == RLX_DTYPE_F32 || dt == RLX_DTYPE_F16 || dt == RLX_DTYPE_BF16 || dt == RLX_DTYPE_F64;
}

bool rlx_dtype_is_int(rlx_dtype dt) {
  switch (dt) {
    case RLX_DTYPE_I8: case RLX_DTYPE_I16: case RLX_DTYPE_I32: case RLX_DTYPE_I64:
    case RLX_DTYPE_U8: case RLX_DTYPE_U16: case RLX_DTYPE_U32: case RLX_DTYPE_U64:
      return true;
    default:
      return false;
  }
}

bool rlx_dtype_is_signed(rlx_dtype dt) {
  switch (dt) {
    case RLX_DTYPE_I8: case RLX_DTYPE_I16: case RLX_DTYPE_I32: case RLX_DTYPE_I64:
    case RLX_DTYPE_C64:
      return true;
    default:
      return rlx_dtype_is_float(dt);
  }
}

rlx_status *rlx_type_make(rlx_dtype dtype, int32_t rank, const int64_t *dims, rlx_type *out) {
  if ((unsigned)dtype >= RLX_DTYPE_COUNT) return RLX_ERR(INVALID_ARGUMENT, "invalid dtype %d", (int)dtype);
  if (rank < 0 || rank > RLX_MAX_RANK)
    return RLX_ERR(INVALID_ARGUMENT, "rank %d outside [0, %d]", (int)rank, RLX_MAX_RANK);
  if (rank > 0 && !dims) return RLX_ERR(INVALID_ARGUMENT, "dims is NULL for rank %d", (int)rank);
  rlx_type t = {.dtype = dtype, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  *out = t;
  return NULL;
}

bool rlx_type_is_static(const rlx_type *t) {
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] < 0) return false;
  return true;
}

rlx_status *rlx_type_numel(const rlx_type *t, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return RLX_ERR(INVALID_ARGUMENT, "shape has a symbolic dim %d", i);
    if (!rlx_mul_i64(n, t->dims[i], &n)) return RLX_ERR(RESOURCE_EXHAUSTED, "element count overflows int64");
  }
  *out = n;
  return NULL;
}

rlx_status *rlx_type_nbytes(const rlx_type *t, size_t *out) {
  int64_t n;
  RLX_TRY(rlx_type_numel(t, &n));
  size_t b;
  if ((uint64_t)n > SIZE_MAX || !rlx_mul_size((size_t)n, rlx_dtype_size(t->dtype), &b))
    return RLX_ERR(RESOURCE_EXHAUSTED, "byte size overflows");
  *out = b;
  return NULL;
}

char *rlx_type_str(const rlx_type *t, char *buf, size_t cap) {
  if (!cap) return buf;
  size_t o = 0;
#define PUT(...)                                                      \
  do {                                                                \
    int w_ = snprintf(buf + o, o < cap ? cap - o : 0, __VA_ARGS__);   \
    if (w_ > 0) o += (size_t)w_;                                      \
  } while (0)
  PUT("%s[", rlx_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++) {
    int64_t d = t->dims[i];
    if (d >= 0) PUT("%s%lld", i ? "," : "", (long long)d);
    else if (d == RLX_DIM_DYNAMIC) PUT("%s?", i ? "," : "");
    else PUT("%ss%lld", i ? "," : "", (long long)RLX_DIM_SYMBOL_ID(d));
  }
  PUT("]");
#undef PUT
  buf[cap - 1 < o ? cap - 1 : o] = '\0';
  return buf;
}
