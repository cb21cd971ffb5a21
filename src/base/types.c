/* types.c: dtypes and tensor types. */
#include <math.h>
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
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_dtype_from_name: out is NULL");
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

bool rlx_dtype_is_lowp(rlx_dtype dt) { return dt >= RLX_DTYPE_F8E4M3FN && dt < RLX_DTYPE_COUNT; }

/* A minifloat with e exponent bits and m mantissa bits (exponent field f, mantissa field g):
 * subnormal g 2^(1-bias-m) when f = 0, else (1 + g 2^-m) 2^(f-bias). */
static float minifloat(unsigned f, unsigned g, int m, int bias) {
  return f == 0 ? ldexpf((float)g, 1 - bias - m) : ldexpf(1.0f + ldexpf((float)g, -m), (int)f - bias);
}

float rlx_lowp_to_f32(rlx_dtype dt, uint8_t c) {
  float sign = c & 0x80 ? -1.0f : 1.0f;
  switch (dt) {
    case RLX_DTYPE_F8E4M3FN:
      return (c & 0x7F) == 0x7F ? NAN : sign * minifloat((c >> 3) & 15, c & 7, 3, 7);
    case RLX_DTYPE_F8E4M3FNUZ:
      return c == 0x80 ? NAN : sign * minifloat((c >> 3) & 15, c & 7, 3, 8);
    case RLX_DTYPE_F8E5M2:
      if (((c >> 2) & 31) == 31) return c & 3 ? NAN : sign * INFINITY;
      return sign * minifloat((c >> 2) & 31, c & 3, 2, 15);
    case RLX_DTYPE_F8E5M2FNUZ:
      return c == 0x80 ? NAN : sign * minifloat((c >> 2) & 31, c & 3, 2, 16);
    case RLX_DTYPE_F4E2M1:
      return (c & 8 ? -1.0f : 1.0f) * minifloat((c >> 1) & 3, c & 1, 1, 1);
    case RLX_DTYPE_I4:
      return (float)((int)(c & 15) - (c & 8 ? 16 : 0));
    case RLX_DTYPE_U4:
      return (float)(c & 15);
    case RLX_DTYPE_I2:
      return (float)((int)(c & 3) - (c & 2 ? 4 : 0));
    case RLX_DTYPE_U2:
      return (float)(c & 3);
    default:
      return 0.0f;
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
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_type_make: out is NULL");
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
  if (!t || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_type_numel: NULL argument");
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] < 0) return RLX_ERR(INVALID_ARGUMENT, "shape has a symbolic dim %d", i);
    if (!rlx_mul_i64(n, t->dims[i], &n)) return RLX_ERR(RESOURCE_EXHAUSTED, "element count overflows int64");
  }
  *out = n;
  return NULL;
}

rlx_status *rlx_type_nbytes(const rlx_type *t, size_t *out) {
  if (!t || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_type_nbytes: NULL argument");
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

/* ---- float16 / bfloat16 (IEEE 754-2008 binary16; bfloat16 = binary32's top half) ---- */

static float f32_of_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static uint32_t bits_of_f32(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

float rlx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 31) return f32_of_bits(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return f32_of_bits(sign | ((exp + 127 - 15) << 23) | (man << 13));
  float mag = (float)man * 0x1p-24f; /* zero or subnormal: man * 2^-24, exact in float */
  return sign ? -mag : mag;
}

/* Rounds v >> shift to nearest, ties to even (shift >= 1). */
static uint32_t shift_round_even(uint32_t v, unsigned shift) {
  uint32_t r = v >> shift, rem = v & ((1u << shift) - 1), half = 1u << (shift - 1);
  return r + (rem > half || (rem == half && (r & 1)));
}

uint16_t rlx_f32_to_f16(float x) {
  uint32_t b = bits_of_f32(x), sign = (b >> 16) & 0x8000, exp = (b >> 23) & 0xff, man = b & 0x7fffff;
  if (exp == 0xff) { /* inf, or NaN keeping its top payload bits (never turning into inf) */
    uint32_t p = man >> 13;
    return (uint16_t)(sign | 0x7c00 | (man && !p ? 1 : p));
  }
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) { /* subnormal or zero: units of 2^-24; a carry into 0x400 gives the smallest normal */
    unsigned shift = (unsigned)(14 - e);
    return (uint16_t)(sign | (shift > 24 ? 0 : shift_round_even(man | 0x800000, shift)));
  }
  /* normal: a carry out of the mantissa steps the exponent (up to inf, 0x7c00) */
  return (uint16_t)(sign | shift_round_even(((uint32_t)e << 23) | man, 13));
}

float rlx_bf16_to_f32(uint16_t h) { return f32_of_bits((uint32_t)h << 16); }

uint16_t rlx_f32_to_bf16(float x) {
  uint32_t b = bits_of_f32(x);
  if ((b & 0x7fffffff) > 0x7f800000) return (uint16_t)((b >> 16) | 0x40); /* quiet NaN */
  return (uint16_t)(shift_round_even(b, 16));
}
