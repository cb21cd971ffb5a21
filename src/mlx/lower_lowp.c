/* lower_lowp.c: the low-precision storage types (rlx_dtype_is_lowp) on MLX, where they are uint8
 * codes: decoding to float32/int32 and encoding from any numeric array with MLX bitwise and
 * arithmetic ops. The conversions are those of ml_dtypes (which ONNX's reference Cast uses):
 * round to nearest, ties to even; float8 overflow gives NaN (E4M3FN and the FNUZ types) or inf
 * (E5M2) unless saturating (ONNX Cast saturate=1: values beyond the largest finite one, infinities
 * included, clamp to it); float4 E2M1 always saturates and encodes NaN as -0 (0x8); integers from
 * floats truncate toward zero and keep the low bits (NaN and infinities give 0). Formats: OCP
 * 8-bit Floating Point Specification (E4M3, E5M2), the FNUZ variants (bias one higher, 0x80 the
 * only NaN, no -0), OCP Microscaling Formats v1.0 (E2M1). */
#include <math.h>

#include "mlx/lower.h"

#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

typedef struct minifloat {
  int nbits, e, m, bias;
  double max;   /* largest finite value */
  bool fnuz;    /* NaN 0x80, no -0, no infinities */
  bool inf;     /* IEEE-like all-ones exponent: infinities and NaNs (E5M2) */
  unsigned nan; /* the NaN code (sign bit excluded) of non-FNUZ formats */
} minifloat;

static bool format_of(rlx_dtype dt, minifloat *f) {
  switch (dt) {
    case RLX_DTYPE_F8E4M3FN: *f = (minifloat){8, 4, 3, 7, 448, false, false, 0x7F}; return true;
    case RLX_DTYPE_F8E4M3FNUZ: *f = (minifloat){8, 4, 3, 8, 240, true, false, 0}; return true;
    case RLX_DTYPE_F8E5M2: *f = (minifloat){8, 5, 2, 15, 57344, false, true, 0x7E}; return true;
    case RLX_DTYPE_F8E5M2FNUZ: *f = (minifloat){8, 5, 2, 16, 57344, true, false, 0}; return true;
    case RLX_DTYPE_F4E2M1: *f = (minifloat){4, 2, 1, 1, 6, false, false, 0}; return true;
    default: return false;
  }
}

static rlx_mx_arr *u32(rlx_mx *c, double v) { return rlx_mx_scalar(c, v, RLX_DTYPE_U32); }
static rlx_mx_arr *i32(rlx_mx *c, double v) { return rlx_mx_scalar(c, v, RLX_DTYPE_I32); }
static rlx_mx_arr *f32(rlx_mx *c, double v) { return rlx_mx_scalar(c, v, RLX_DTYPE_F32); }

/* The float32 2^k for int32 k in [-126, 127] (exact: built from its exponent bits). */
static rlx_mx_arr *pow2(rlx_mx *c, rlx_mx_arr *k) {
  rlx_mx_arr *bits = B(LEFT_SHIFT, rlx_mx_astype(c, B(ADD, k, i32(c, 127)), RLX_DTYPE_U32), u32(c, 23));
  return rlx_mx_view(c, bits, RLX_DTYPE_F32);
}

rlx_mx_arr *rlx_l_lowp_decode(rlx_lower *L, rlx_mx_arr *x, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  minifloat f;
  rlx_mx_arr *v = rlx_mx_astype(c, x, RLX_DTYPE_I32);
  switch (dt) { /* integers: the low bits, two's complement for the signed ones */
    case RLX_DTYPE_I4: case RLX_DTYPE_I2: {
      double half = dt == RLX_DTYPE_I4 ? 8 : 2;
      v = B(BITWISE_AND, v, i32(c, 2 * half - 1));
      return B(SUBTRACT, B(BITWISE_XOR, v, i32(c, half)), i32(c, half));
    }
    case RLX_DTYPE_U4: case RLX_DTYPE_U2:
      return B(BITWISE_AND, v, i32(c, dt == RLX_DTYPE_U4 ? 15 : 3));
    default:
      break;
  }
  if (!format_of(dt, &f)) {
    rlx_lower_fail(L, RLX_STATUS_INTERNAL, "%s is not a low-precision type", rlx_dtype_name(dt));
    return x;
  }
  int emin = 1 - f.bias;
  rlx_mx_arr *code = B(BITWISE_AND, v, i32(c, (1 << f.nbits) - 1));
  rlx_mx_arr *ef = B(BITWISE_AND, B(RIGHT_SHIFT, code, i32(c, f.m)), i32(c, (1 << f.e) - 1));
  rlx_mx_arr *g = B(BITWISE_AND, code, i32(c, (1 << f.m) - 1));
  /* normal: (1 + g 2^-m) 2^(ef - bias) = (2^m + g) 2^(ef - bias - m); subnormal: g 2^(emin - m) */
  rlx_mx_arr *nrm = B(MULTIPLY, rlx_mx_astype(c, B(ADD, g, i32(c, 1 << f.m)), RLX_DTYPE_F32),
                      pow2(c, B(SUBTRACT, ef, i32(c, f.bias + f.m))));
  rlx_mx_arr *sub = B(MULTIPLY, rlx_mx_astype(c, g, RLX_DTYPE_F32), f32(c, ldexp(1, emin - f.m)));
  rlx_mx_arr *val = rlx_mx_where(c, B(EQUAL, ef, i32(c, 0)), sub, nrm);
  rlx_mx_arr *nan;
  if (f.fnuz) {
    nan = B(EQUAL, code, i32(c, 0x80));
  } else if (f.inf) {
    rlx_mx_arr *top = B(EQUAL, ef, i32(c, (1 << f.e) - 1));
    val = rlx_mx_where(c, top, f32(c, INFINITY), val);
    nan = B(LOGICAL_AND, top, B(NOT_EQUAL, g, i32(c, 0)));
  } else if (f.nan) {
    nan = B(EQUAL, B(BITWISE_AND, code, i32(c, 0x7F)), i32(c, (double)f.nan));
  } else {
    nan = NULL;
  }
  if (nan) val = rlx_mx_where(c, nan, f32(c, NAN), val);
  rlx_mx_arr *neg = B(NOT_EQUAL, B(BITWISE_AND, code, i32(c, 1 << (f.nbits - 1))), i32(c, 0));
  return rlx_mx_where(c, neg, rlx_mx_unary(c, RLX_MXU_NEGATIVE, val), val);
}

/* float32 x -> codes (uint32) of minifloat f. */
static rlx_mx_arr *encode_float(rlx_lower *L, rlx_mx_arr *x, const minifloat *f, bool saturate) {
  rlx_mx *c = L->mx;
  int emin = 1 - f->bias;
  unsigned sbit = 1u << (f->nbits - 1);
  rlx_mx_arr *sign = B(RIGHT_SHIFT, rlx_mx_view(c, x, RLX_DTYPE_U32), u32(c, 31));
  rlx_mx_arr *a = rlx_mx_unary(c, RLX_MXU_ABS, x);
  if (saturate) a = rlx_mx_where(c, B(GREATER, a, f32(c, f->max)), f32(c, f->max), a); /* NaN stays */
  /* round to the format's precision: the quantum is 2^(max(floor(log2 a), emin) - m) */
  rlx_mx_arr *ea = B(SUBTRACT, rlx_mx_astype(c, B(RIGHT_SHIFT, rlx_mx_view(c, a, RLX_DTYPE_U32), u32(c, 23)), RLX_DTYPE_I32), i32(c, 127));
  rlx_mx_arr *q = pow2(c, B(SUBTRACT, B(MAXIMUM, ea, i32(c, emin)), i32(c, f->m)));
  rlx_mx_arr *r = B(MULTIPLY, rlx_mx_unary(c, RLX_MXU_ROUND, B(DIVIDE, a, q)), q); /* ties to even */
  /* r is representable (or beyond max): its fields */
  rlx_mx_arr *rb = rlx_mx_view(c, r, RLX_DTYPE_U32);
  rlx_mx_arr *er = B(SUBTRACT, rlx_mx_astype(c, B(RIGHT_SHIFT, rb, u32(c, 23)), RLX_DTYPE_I32), i32(c, 127));
  rlx_mx_arr *nrm = B(BITWISE_OR, B(LEFT_SHIFT, rlx_mx_astype(c, B(ADD, er, i32(c, f->bias)), RLX_DTYPE_U32), u32(c, f->m)),
                      B(BITWISE_AND, B(RIGHT_SHIFT, rb, u32(c, 23 - f->m)), u32(c, (1 << f->m) - 1)));
  rlx_mx_arr *sub = rlx_mx_astype(c, B(MULTIPLY, r, f32(c, ldexp(1, f->m - emin))), RLX_DTYPE_U32);
  rlx_mx_arr *mag = rlx_mx_where(c, B(LESS, er, i32(c, emin)), sub, nrm);
  rlx_mx_arr *over = B(GREATER, r, f32(c, f->max)), *nan = rlx_mx_unary(c, RLX_MXU_ISNAN, a);
  if (f->fnuz) {
    rlx_mx_arr *code = rlx_mx_where(c, B(EQUAL, mag, u32(c, 0)), u32(c, 0), B(BITWISE_OR, mag, B(LEFT_SHIFT, sign, u32(c, 7))));
    return rlx_mx_where(c, B(LOGICAL_OR, over, nan), u32(c, 0x80), code);
  }
  if (f->inf) mag = rlx_mx_where(c, over, u32(c, (double)(((1u << f->e) - 1) << f->m)), mag);
  else if (f->nan) mag = rlx_mx_where(c, over, u32(c, f->nan), mag);
  rlx_mx_arr *code = B(BITWISE_OR, mag, B(LEFT_SHIFT, sign, u32(c, f->nbits - 1)));
  if (f->nan) return rlx_mx_where(c, nan, B(BITWISE_OR, u32(c, f->nan), B(BITWISE_AND, code, u32(c, sbit))), code);
  return rlx_mx_where(c, nan, u32(c, sbit), code); /* E2M1: NaN -> -0 */
}

rlx_mx_arr *rlx_l_lowp_encode(rlx_lower *L, rlx_mx_arr *x, rlx_dtype from, rlx_dtype to, bool saturate) {
  rlx_mx *c = L->mx;
  minifloat f;
  rlx_mx_arr *code;
  if (format_of(to, &f)) {
    code = encode_float(L, rlx_mx_astype(c, x, RLX_DTYPE_F32), &f, saturate || to == RLX_DTYPE_F4E2M1);
  } else { /* integers: truncate toward zero, keep the low bits; NaN and infinities give 0 */
    if (rlx_dtype_is_float(from)) {
      rlx_mx_arr *fin = rlx_mx_unary(c, RLX_MXU_LOGICAL_NOT, B(LOGICAL_OR, rlx_mx_unary(c, RLX_MXU_ISNAN, x), rlx_mx_unary(c, RLX_MXU_ISINF, x)));
      x = rlx_mx_where(c, fin, x, rlx_mx_scalar(c, 0, from));
    }
    double mask = to == RLX_DTYPE_I4 || to == RLX_DTYPE_U4 ? 15 : 3;
    code = B(BITWISE_AND, rlx_mx_astype(c, rlx_mx_astype(c, x, RLX_DTYPE_I64), RLX_DTYPE_U32), u32(c, mask));
  }
  return rlx_mx_astype(c, code, RLX_DTYPE_U8);
}
