/* lower_dequant.c: DequantMatMul on MLX. The block-integer schemes map onto MLX's affine
 * quantized_matmul; the GGUF block types are unpacked and dequantized on the device with MLX
 * bitwise and arithmetic ops (the formulas of ggml's dequantize_row_* in ggml-quants.c, over the
 * block_* layouts of ggml-common.h), then multiplied with one matmul. */
#include <math.h>
#include <string.h>

#include "ir/dequant.h"
#include "mlx/lower.h"

#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

/* MLX affine quantized_matmul wants w as unsigned `bits`-bit values packed little-end-first into
 * uint32 words (element j of a word in bits [j*bits, (j+1)*bits)), with w = scale * u + bias per
 * group. Symmetric schemes shift q by 2^(bits-1) into the unsigned range (bias = -2^(bits-1)
 * scale); asymmetric ones keep q and use bias = -zero_point * scale. Values outside the scheme's
 * range wrap modulo 2^bits (masked) instead of spilling into their neighbours. */
static void lower_int_block(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const char *scheme = rlx_node_s(n, "scheme");
  int bits = strncmp(scheme, "int4", 4) == 0 ? 4 : 8;
  bool asym = strstr(scheme, "asym") != NULL;
  int64_t bs = rlx_node_i(n, "block_size");
  const rlx_type *tq = rlx_in_type(L, n, 1);
  rlx_dtype xdt = rlx_in_type(L, n, 0)->dtype;
  int64_t N = tq->dims[0], K = tq->dims[1], epw = 32 / bits;
  rlx_mx_arr *u = rlx_mx_astype(c, in[1], RLX_DTYPE_I32);
  rlx_mx_arr *scale = rlx_mx_astype(c, in[2], xdt), *bias;
  if (asym) {
    bias = rlx_mx_binary(c, RLX_MXB_MULTIPLY, rlx_mx_unary(c, RLX_MXU_NEGATIVE, rlx_mx_astype(c, in[3], xdt)), scale);
  } else {
    double off = bits == 8 ? 128 : 8;
    u = rlx_mx_binary(c, RLX_MXB_ADD, u, rlx_mx_scalar(c, off, RLX_DTYPE_I32));
    bias = rlx_mx_binary(c, RLX_MXB_MULTIPLY, scale, rlx_mx_scalar(c, -off, xdt));
  }
  u = rlx_mx_binary(c, RLX_MXB_BITWISE_AND, rlx_mx_astype(c, u, RLX_DTYPE_U32), rlx_mx_scalar(c, (double)((1 << bits) - 1), RLX_DTYPE_U32));
  if (xdt == RLX_DTYPE_F64) { /* quantized_matmul has no float64: dequantize, then matmul */
    int64_t blk[3] = {N, K / bs, 1};
    rlx_mx_arr *wd = rlx_mx_reshape(c, rlx_mx_astype(c, u, xdt), 3, (int64_t[]){N, K / bs, bs});
    wd = rlx_mx_binary(c, RLX_MXB_ADD, rlx_mx_binary(c, RLX_MXB_MULTIPLY, wd, rlx_mx_reshape(c, scale, 3, blk)), rlx_mx_reshape(c, bias, 3, blk));
    out[0] = rlx_mx_matmul(c, in[0], rlx_mx_transpose(c, rlx_mx_reshape(c, wd, 2, (int64_t[]){N, K}), 2, (int64_t[]){1, 0}));
    return;
  }
  u = rlx_mx_reshape(c, u, 3, (int64_t[]){N, K / epw, epw});
  rlx_type tu = {.dtype = RLX_DTYPE_U32, .rank = 3, .dims = {N, K / epw, epw}};
  rlx_mx_arr *packed = NULL;
  for (int64_t j = 0; j < epw; j++) {
    rlx_mx_arr *part = rlx_l_narrow(L, u, &tu, 2, j, 1);
    part = rlx_mx_binary(c, RLX_MXB_LEFT_SHIFT, part, rlx_mx_scalar(c, (double)(j * bits), RLX_DTYPE_U32));
    packed = packed ? rlx_mx_binary(c, RLX_MXB_BITWISE_OR, packed, part) : part;
  }
  packed = rlx_mx_reshape(c, packed, 2, (int64_t[]){N, K / epw});
  /* MLX's CUDA quantized_matmul needs x of rank >= 2: a vector goes through as one row. */
  const rlx_type *tx = rlx_in_type(L, n, 0);
  rlx_mx_arr *x = tx->rank == 1 ? rlx_mx_reshape(c, in[0], 2, (int64_t[]){1, K}) : in[0];
  rlx_mx_arr *y = rlx_mx_quantized_matmul(c, x, packed, scale, bias, true, (int)bs, bits, "affine");
  out[0] = tx->rank == 1 ? rlx_l_reshape(L, y, rlx_out_type(L, n, 0)) : y;
}


/* The packed rows viewed as blocks: p is uint8 [rows, nb, bb]. */
typedef struct blocks {
  rlx_lower *L;
  rlx_mx_arr *p;
  int64_t rows, nb, bb;
} blocks;

static rlx_mx_arr *u8(rlx_mx *c, double v) { return rlx_mx_scalar(c, v, RLX_DTYPE_U8); }
static rlx_mx_arr *f32(rlx_mx *c, double v) { return rlx_mx_scalar(c, v, RLX_DTYPE_F32); }
static rlx_mx_arr *tof(rlx_mx *c, rlx_mx_arr *a) { return rlx_mx_astype(c, a, RLX_DTYPE_F32); }

/* Bytes [off, off+len) of every block: uint8 [rows, nb, len]. */
static rlx_mx_arr *field(const blocks *b, int64_t off, int64_t len) {
  rlx_type t = {.dtype = RLX_DTYPE_U8, .rank = 3, .dims = {b->rows, b->nb, b->bb}};
  return rlx_l_narrow(b->L, b->p, &t, 2, off, len);
}

/* A little-endian float16 at byte off of every block, as float32 [rows, nb, 1]. */
static rlx_mx_arr *half_at(const blocks *b, int64_t off) {
  rlx_mx *c = b->L->mx;
  rlx_mx_arr *lo = rlx_mx_astype(c, field(b, off, 1), RLX_DTYPE_U16), *hi = rlx_mx_astype(c, field(b, off + 1, 1), RLX_DTYPE_U16);
  rlx_mx_arr *bits = B(BITWISE_OR, lo, B(LEFT_SHIFT, hi, rlx_mx_scalar(c, 8, RLX_DTYPE_U16)));
  return tof(c, rlx_mx_view(c, bits, RLX_DTYPE_F16));
}

/* Reinterprets uint32 bits as float32. */
static rlx_mx_arr *bits_f32(rlx_mx *c, rlx_mx_arr *bits) { return rlx_mx_view(c, rlx_mx_astype(c, bits, RLX_DTYPE_U32), RLX_DTYPE_F32); }

/* A little-endian float32 at byte off of every block: [rows, nb, 1]. */
static rlx_mx_arr *float_at(const blocks *b, int64_t off) {
  rlx_mx *c = b->L->mx;
  rlx_mx_arr *bits = NULL;
  for (int i = 0; i < 4; i++) {
    rlx_mx_arr *v = B(LEFT_SHIFT, rlx_mx_astype(c, field(b, off + i, 1), RLX_DTYPE_U32), rlx_mx_scalar(c, 8 * i, RLX_DTYPE_U32));
    bits = bits ? B(BITWISE_OR, bits, v) : v;
  }
  return bits_f32(c, bits);
}

/* Bit fields: a [rows, nb, g*l] seen as [g, 1, l], shifted right by each of shifts[0..ns) and
 * masked: [rows, nb, g*ns*l] in that (g, shift, l) order (the pattern of gguf-py's numpy code). */
static rlx_mx_arr *spread(const blocks *b, rlx_mx_arr *a, int64_t g, int64_t l, int ns, const uint8_t *shifts, unsigned mask) {
  rlx_mx *c = b->L->mx;
  rlx_type ts = {.dtype = RLX_DTYPE_U8, .rank = 2, .dims = {ns, 1}};
  rlx_mx_arr *s = rlx_mx_from_bytes(c, shifts, &ts);
  rlx_mx_arr *v = rlx_mx_reshape(c, a, 5, (int64_t[]){b->rows, b->nb, g, 1, l});
  v = B(BITWISE_AND, B(RIGHT_SHIFT, v, s), u8(c, mask));
  return rlx_mx_reshape(c, v, 3, (int64_t[]){b->rows, b->nb, g * ns * l});
}

static const uint8_t sh_nib[2] = {0, 4}, sh_2bit[4] = {0, 2, 4, 6}, sh_bit[8] = {0, 1, 2, 3, 4, 5, 6, 7};

/* Per-sub-block scales s [rows, nb, ns] applied to q [rows, nb, QK]: s * q (and - m) by sub-block. */
static rlx_mx_arr *by_sub(const blocks *b, rlx_mx_arr *q, int64_t qk, int64_t ns, rlx_mx_arr *s, rlx_mx_arr *m) {
  rlx_mx *c = b->L->mx;
  int64_t sd[4] = {b->rows, b->nb, ns, 1};
  rlx_mx_arr *w = rlx_mx_reshape(c, q, 4, (int64_t[]){b->rows, b->nb, ns, qk / ns});
  w = B(MULTIPLY, rlx_mx_reshape(c, s, 4, sd), w);
  if (m) w = B(SUBTRACT, w, rlx_mx_reshape(c, m, 4, sd));
  return rlx_mx_reshape(c, w, 3, (int64_t[]){b->rows, b->nb, qk});
}

/* The 6-bit scales and mins of Q4_K/Q5_K (ggml-quants.c get_scale_min_k4) from the 12 bytes at
 * off: sc/mn uint8 [rows, nb, 8]. */
static void scale_min_k4(const blocks *b, int64_t off, rlx_mx_arr **sc, rlx_mx_arr **mn) {
  rlx_mx *c = b->L->mx;
  rlx_mx_arr *d = field(b, off, 4), *m = field(b, off + 4, 4), *md = field(b, off + 8, 4);
  rlx_mx_arr *s2[2] = {B(BITWISE_AND, d, u8(c, 63)), B(BITWISE_OR, B(BITWISE_AND, md, u8(c, 15)), B(BITWISE_AND, B(RIGHT_SHIFT, d, u8(c, 2)), u8(c, 48)))};
  rlx_mx_arr *m2[2] = {B(BITWISE_AND, m, u8(c, 63)), B(BITWISE_OR, B(RIGHT_SHIFT, md, u8(c, 4)), B(BITWISE_AND, B(RIGHT_SHIFT, m, u8(c, 2)), u8(c, 48)))};
  *sc = rlx_mx_concatenate(c, s2, 2, 2);
  *mn = rlx_mx_concatenate(c, m2, 2, 2);
}

/* The E2M1 values doubled (index = the 4-bit code), as in ggml's kvalues_mxfp4: the OCP MX spec's
 * FP4 E2M1 table {0, 0.5, 1, 1.5, 2, 3, 4, 6} and its negatives, times 2. */
static rlx_mx_arr *e2m1_x2(rlx_mx *c, rlx_mx_arr *code) {
  static const float kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  rlx_type t = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {16}};
  return rlx_mx_take(c, rlx_mx_from_bytes(c, kv, &t), rlx_mx_astype(c, code, RLX_DTYPE_I32), 0);
}

/* Unsigned E4M3 (bias 7; ggml's ue4m3 as gguf-py decodes it: 0 and 0x7F give 0, bit 7 ignored),
 * halved (the NVFP4 block scale paired with e2m1_x2). */
static rlx_mx_arr *ue4m3_half(rlx_mx *c, rlx_mx_arr *x) {
  rlx_mx_arr *e = rlx_mx_astype(c, B(BITWISE_AND, B(RIGHT_SHIFT, x, u8(c, 3)), u8(c, 15)), RLX_DTYPE_U32);
  rlx_mx_arr *m = rlx_mx_astype(c, B(BITWISE_AND, x, u8(c, 7)), RLX_DTYPE_U32);
  rlx_mx_arr *u32 = rlx_mx_scalar(c, 0, RLX_DTYPE_U32);
  /* normal: 2^(e-7) (1 + m/8), halved: exponent field e - 8 + 127 */
  rlx_mx_arr *nrm = bits_f32(c, B(BITWISE_OR, B(LEFT_SHIFT, B(ADD, e, rlx_mx_scalar(c, 119, RLX_DTYPE_U32)), rlx_mx_scalar(c, 23, RLX_DTYPE_U32)),
                                  B(LEFT_SHIFT, m, rlx_mx_scalar(c, 20, RLX_DTYPE_U32))));
  rlx_mx_arr *sub = B(MULTIPLY, tof(c, m), f32(c, 0x1p-10)); /* m 2^-9, halved */
  rlx_mx_arr *v = rlx_mx_where(c, B(EQUAL, e, u32), sub, nrm);
  rlx_mx_arr *zero = rlx_mx_unary(c, RLX_MXU_LOGICAL_NOT, B(LOGICAL_AND, B(NOT_EQUAL, x, u8(c, 0)), B(NOT_EQUAL, x, u8(c, 0x7F))));
  return rlx_mx_where(c, zero, f32(c, 0), v);
}

/* W[rows, K] in float32 from GGUF blocks (ggml-quants.c dequantize_row_*; gguf-py quants.py). */
static rlx_mx_arr *dequant_gguf(rlx_lower *L, rlx_dq_scheme s, rlx_mx_arr *packed, int64_t rows, int64_t K) {
  rlx_mx *c = L->mx;
  const rlx_dq_info *in = rlx_dq_info_of(s);
  blocks b = {.L = L, .rows = rows, .nb = K / in->block_elems, .bb = in->block_bytes};
  b.p = rlx_mx_reshape(c, packed, 3, (int64_t[]){rows, b.nb, b.bb});
  int64_t qk = in->block_elems;
  rlx_mx_arr *w = NULL, *q, *d, *m, *sc, *mn;
  switch (s) {
    case RLX_DQ_Q4_0: /* d f16, qs[16]: x = d (q - 8), low nibbles first */
      q = spread(&b, field(&b, 2, 16), 1, 16, 2, sh_nib, 15);
      w = B(MULTIPLY, half_at(&b, 0), B(SUBTRACT, tof(c, q), f32(c, 8)));
      break;
    case RLX_DQ_Q4_1: /* d, m f16, qs[16]: x = d q + m */
      q = spread(&b, field(&b, 4, 16), 1, 16, 2, sh_nib, 15);
      w = B(ADD, B(MULTIPLY, half_at(&b, 0), tof(c, q)), half_at(&b, 2));
      break;
    case RLX_DQ_Q5_0: /* d f16, qh u32 (bit j = 5th bit of element j), qs[16]: x = d (q - 16) */
    case RLX_DQ_Q5_1: { /* d, m f16, qh, qs: x = d q + m */
      int64_t o = s == RLX_DQ_Q5_0 ? 2 : 4;
      q = spread(&b, field(&b, o + 4, 16), 1, 16, 2, sh_nib, 15);
      rlx_mx_arr *h = spread(&b, field(&b, o, 4), 4, 1, 8, sh_bit, 1);
      q = tof(c, B(BITWISE_OR, q, B(LEFT_SHIFT, h, u8(c, 4))));
      if (s == RLX_DQ_Q5_0) w = B(MULTIPLY, half_at(&b, 0), B(SUBTRACT, q, f32(c, 16)));
      else w = B(ADD, B(MULTIPLY, half_at(&b, 0), q), half_at(&b, 2));
      break;
    }
    case RLX_DQ_Q8_0: /* d f16, qs int8[32]: x = d q */
      w = B(MULTIPLY, tof(c, rlx_mx_view(c, field(&b, 2, 32), RLX_DTYPE_I8)), half_at(&b, 0));
      break;
    case RLX_DQ_Q8_K: /* d f32, qs int8[256], bsums int16[16] (unused): x = d q */
      w = B(MULTIPLY, float_at(&b, 0), tof(c, rlx_mx_view(c, field(&b, 4, 256), RLX_DTYPE_I8)));
      break;
    case RLX_DQ_Q2_K: /* scales[16] (low nibble scale, high nibble min), qs[64] 2-bit, d, dmin f16 */
      sc = field(&b, 0, 16);
      q = tof(c, spread(&b, field(&b, 16, 64), 2, 32, 4, sh_2bit, 3));
      d = B(MULTIPLY, half_at(&b, 80), tof(c, B(BITWISE_AND, sc, u8(c, 15))));
      m = B(MULTIPLY, half_at(&b, 82), tof(c, B(RIGHT_SHIFT, sc, u8(c, 4))));
      w = by_sub(&b, q, qk, 16, d, m);
      break;
    case RLX_DQ_Q3_K: { /* hmask[32], qs[64] 2-bit, scales[12] 6-bit (packed), d f16 */
      rlx_mx_arr *lo = spread(&b, field(&b, 96, 8), 1, 8, 2, sh_nib, 15);
      rlx_mx_arr *hi = spread(&b, field(&b, 104, 4), 1, 4, 4, sh_2bit, 3);
      sc = B(SUBTRACT, tof(c, B(BITWISE_OR, lo, B(LEFT_SHIFT, hi, u8(c, 4)))), f32(c, 32));
      rlx_mx_arr *ql = tof(c, spread(&b, field(&b, 32, 64), 2, 32, 4, sh_2bit, 3));
      rlx_mx_arr *qh = tof(c, spread(&b, field(&b, 0, 32), 1, 32, 8, sh_bit, 1));
      q = B(SUBTRACT, ql, B(MULTIPLY, B(SUBTRACT, f32(c, 1), qh), f32(c, 4))); /* 4 subtracted where the hmask bit is 0 */
      w = by_sub(&b, q, qk, 16, B(MULTIPLY, half_at(&b, 108), sc), NULL);
      break;
    }
    case RLX_DQ_Q4_K: /* d, dmin f16, scales[12] (6-bit scales and mins), qs[128] */
    case RLX_DQ_Q5_K: { /* d, dmin, scales[12], qh[32], qs[128] */
      scale_min_k4(&b, 4, &sc, &mn);
      int64_t qo = s == RLX_DQ_Q4_K ? 16 : 48;
      q = spread(&b, field(&b, qo, 128), 4, 32, 2, sh_nib, 15);
      if (s == RLX_DQ_Q5_K) q = B(BITWISE_OR, q, B(LEFT_SHIFT, spread(&b, field(&b, 16, 32), 1, 32, 8, sh_bit, 1), u8(c, 4)));
      d = B(MULTIPLY, half_at(&b, 0), tof(c, sc));
      m = B(MULTIPLY, half_at(&b, 2), tof(c, mn));
      w = by_sub(&b, tof(c, q), qk, 8, d, m);
      break;
    }
    case RLX_DQ_Q6_K: { /* ql[128] low nibbles, qh[64] 2-bit high parts, scales int8[16], d f16 */
      rlx_mx_arr *ql = spread(&b, field(&b, 0, 128), 2, 64, 2, sh_nib, 15);
      rlx_mx_arr *qh = spread(&b, field(&b, 128, 64), 2, 32, 4, sh_2bit, 3);
      q = B(SUBTRACT, tof(c, B(BITWISE_OR, ql, B(LEFT_SHIFT, qh, u8(c, 4)))), f32(c, 32));
      sc = tof(c, rlx_mx_view(c, field(&b, 192, 16), RLX_DTYPE_I8));
      w = by_sub(&b, q, qk, 16, B(MULTIPLY, half_at(&b, 208), sc), NULL);
      break;
    }
    case RLX_DQ_MXFP4_GGUF: { /* e E8M0, qs[16] E2M1 codes: x = 2^(e-127) e2m1 (ggml_e8m0_to_fp32_half halves it) */
      rlx_mx_arr *e = rlx_mx_astype(c, field(&b, 0, 1), RLX_DTYPE_U32), *one = rlx_mx_scalar(c, 1, RLX_DTYPE_U32);
      rlx_mx_arr *sub = B(LEFT_SHIFT, rlx_mx_scalar(c, 0x00200000, RLX_DTYPE_U32), e);
      rlx_mx_arr *nrm = B(LEFT_SHIFT, B(SUBTRACT, B(MAXIMUM, e, one), one), rlx_mx_scalar(c, 23, RLX_DTYPE_U32));
      d = bits_f32(c, rlx_mx_where(c, B(LESS, e, rlx_mx_scalar(c, 2, RLX_DTYPE_U32)), sub, nrm));
      w = B(MULTIPLY, d, e2m1_x2(c, spread(&b, field(&b, 1, 16), 1, 16, 2, sh_nib, 15)));
      break;
    }
    case RLX_DQ_NVFP4_GGUF: /* 4 UE4M3 scales (one per 16 elements), qs[32]: per 16, 8 low nibbles then 8 high */
      q = e2m1_x2(c, spread(&b, field(&b, 4, 32), 4, 8, 2, sh_nib, 15));
      w = by_sub(&b, q, qk, 4, ue4m3_half(c, field(&b, 0, 4)), NULL);
      break;
    default:
      rlx_lower_fail(L, RLX_STATUS_INTERNAL, "DequantMatMul: scheme '%s' has no GGUF decoder", in->name);
      return NULL;
  }
  return rlx_mx_reshape(c, w, 2, (int64_t[]){rows, K});
}

/* ---- MX (OCP Microscaling Formats v1.0), NVFP4 and FP8 ---- */

/* E8M0 (OCP MX v1.0, 5.4.1): 2^(e-127), 0xFF NaN. float32 bits: e << 23, e = 0 the subnormal 2^-127. */
static rlx_mx_arr *e8m0(rlx_mx *c, rlx_mx_arr *e) {
  rlx_mx_arr *u = rlx_mx_astype(c, e, RLX_DTYPE_U32);
  rlx_mx_arr *bits = B(LEFT_SHIFT, u, rlx_mx_scalar(c, 23, RLX_DTYPE_U32));
  bits = rlx_mx_where(c, B(EQUAL, u, rlx_mx_scalar(c, 0, RLX_DTYPE_U32)), rlx_mx_scalar(c, 0x00400000, RLX_DTYPE_U32), bits);
  bits = rlx_mx_where(c, B(EQUAL, u, rlx_mx_scalar(c, 255, RLX_DTYPE_U32)), rlx_mx_scalar(c, 0x7FC00000, RLX_DTYPE_U32), bits);
  return bits_f32(c, bits);
}

/* FP8 E4M3 (OCP 8-bit Floating Point Specification, "E4M3FN"): bias 7, subnormals m 2^-9,
 * S.1111.111 NaN, no infinities. */
static rlx_mx_arr *e4m3fn(rlx_mx *c, rlx_mx_arr *x) {
  rlx_mx_arr *e = rlx_mx_astype(c, B(BITWISE_AND, B(RIGHT_SHIFT, x, u8(c, 3)), u8(c, 15)), RLX_DTYPE_U32);
  rlx_mx_arr *m = rlx_mx_astype(c, B(BITWISE_AND, x, u8(c, 7)), RLX_DTYPE_U32);
  rlx_mx_arr *nrm = bits_f32(c, B(BITWISE_OR, B(LEFT_SHIFT, B(ADD, e, rlx_mx_scalar(c, 120, RLX_DTYPE_U32)), rlx_mx_scalar(c, 23, RLX_DTYPE_U32)),
                                  B(LEFT_SHIFT, m, rlx_mx_scalar(c, 20, RLX_DTYPE_U32))));
  rlx_mx_arr *v = rlx_mx_where(c, B(EQUAL, e, rlx_mx_scalar(c, 0, RLX_DTYPE_U32)), B(MULTIPLY, tof(c, m), f32(c, 0x1p-9)), nrm);
  v = rlx_mx_where(c, B(EQUAL, B(BITWISE_AND, x, u8(c, 0x7F)), u8(c, 0x7F)), f32(c, NAN), v);
  return rlx_mx_where(c, B(GREATER_EQUAL, x, u8(c, 0x80)), rlx_mx_unary(c, RLX_MXU_NEGATIVE, v), v);
}

/* FP8 E5M2 (OCP 8-bit FP spec; IEEE-like: infinities, NaNs): the high byte of a float16. */
static rlx_mx_arr *e5m2(rlx_mx *c, rlx_mx_arr *x) {
  rlx_mx_arr *h = B(LEFT_SHIFT, rlx_mx_astype(c, x, RLX_DTYPE_U16), rlx_mx_scalar(c, 8, RLX_DTYPE_U16));
  return tof(c, rlx_mx_view(c, h, RLX_DTYPE_F16));
}

/* Codes uint8[N, K*bits/8] -> float32 [N, K/bs, bs] (4-bit codes: E2M1, low nibble first). */
static rlx_mx_arr *decode_codes(rlx_lower *L, rlx_dq_scheme s, rlx_mx_arr *q, int64_t N, int64_t K, int64_t bs) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *v;
  if (rlx_dq_info_of(s)->bits == 4) {
    blocks b = {.L = L, .p = q, .rows = N, .nb = 1, .bb = K / 2};
    v = B(MULTIPLY, e2m1_x2(c, spread(&b, rlx_mx_reshape(c, q, 3, (int64_t[]){N, 1, K / 2}), K / 2, 1, 2, sh_nib, 15)), f32(c, 0.5));
  } else {
    v = s == RLX_DQ_FP8_E5M2 ? e5m2(c, q) : e4m3fn(c, q);
  }
  return rlx_mx_reshape(c, v, 3, (int64_t[]){N, K / bs, bs});
}

/* W[N,K] of an MX, NVFP4 or FP8 scheme, dequantized with MLX ops in dtype dt (float32, or
 * float64 for float64 x: codes and scales decode exactly in float32, their products round). */
static rlx_mx_arr *dequant_fp(rlx_lower *L, const rlx_node *n, rlx_dq_scheme s, rlx_mx_arr *const *in, int64_t N, int64_t K,
                              rlx_dtype dt) {
  rlx_mx *c = L->mx;
  const rlx_dq_info *info = rlx_dq_info_of(s);
  int64_t bs = info->block_elems ? info->block_elems : rlx_node_i(n, "block_size");
  rlx_mx_arr *sc = info->kind == RLX_DQK_MX ? e8m0(c, in[2]) : info->kind == RLX_DQK_NV ? e4m3fn(c, in[2]) : in[2];
  sc = rlx_mx_reshape(c, rlx_mx_astype(c, sc, dt), 3, (int64_t[]){N, K / bs, 1});
  rlx_mx_arr *w = B(MULTIPLY, rlx_mx_astype(c, decode_codes(L, s, in[1], N, K, bs), dt), sc);
  if (info->kind == RLX_DQK_NV) w = B(MULTIPLY, w, rlx_mx_reshape(c, rlx_mx_astype(c, in[3], dt), 0, NULL));
  return rlx_mx_reshape(c, w, 2, (int64_t[]){N, K});
}

/* x[...,K] @ W^T for a float32 W[N,K], in x's dtype (a 1-D x as one row). */
static void matmul_wt(rlx_lower *L, const rlx_node *n, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0);
  int64_t K = tx->dims[tx->rank - 1];
  w = rlx_mx_astype(c, w, tx->dtype); /* a no-op for float32 */
  if (tx->rank == 1) x = rlx_mx_reshape(c, x, 2, (int64_t[]){1, K});
  rlx_mx_arr *y = rlx_mx_matmul(c, x, rlx_mx_transpose(c, w, 2, (int64_t[]){1, 0}));
  out[0] = tx->rank == 1 ? rlx_l_reshape(L, y, rlx_out_type(L, n, 0)) : y;
}

/* mxfp4, mxfp8, nvfp4: MLX's quantized_matmul in that mode takes the codes as they are (uint8
 * rows viewed as uint32 words: the same bytes) and the uint8 scales; nvfp4's global scale
 * multiplies the result. float64 x (no quantized_matmul) and FP8 schemes: dequantize, matmul. */
static void lower_fp(rlx_lower *L, const rlx_node *n, rlx_dq_scheme s, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_dq_info *info = rlx_dq_info_of(s);
  const rlx_type *tx = rlx_in_type(L, n, 0), *tq = rlx_in_type(L, n, 1);
  int64_t K = tx->dims[tx->rank - 1], N = tq->dims[0];
  if (info->kind == RLX_DQK_FP8 || tx->dtype == RLX_DTYPE_F64) {
    matmul_wt(L, n, in[0], dequant_fp(L, n, s, in, N, K, tx->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32), out);
    return;
  }
  const char *mode = s == RLX_DQ_MXFP4 ? "mxfp4" : s == RLX_DQ_MXFP8 ? "mxfp8" : "nvfp4";
  rlx_mx_arr *x = tx->rank == 1 ? rlx_mx_reshape(c, in[0], 2, (int64_t[]){1, K}) : in[0];
  rlx_mx_arr *y = rlx_mx_quantized_matmul(c, x, rlx_mx_view(c, in[1], RLX_DTYPE_U32), in[2], NULL, true, (int)info->block_elems, info->bits, mode);
  if (info->kind == RLX_DQK_NV) y = B(MULTIPLY, y, rlx_mx_reshape(c, rlx_mx_astype(c, in[3], tx->dtype), 0, NULL));
  else { /* MLX reads the E8M0 NaN (0xFF) as 2^128: rows with one give NaN, as the MX spec has it */
    rlx_mx_arr *nan = rlx_mx_reduce(c, B(EQUAL, in[2], u8(c, 255)), 7, 1, (int[]){1}, false);
    y = rlx_mx_where(c, nan, rlx_mx_scalar(c, NAN, tx->dtype), y);
  }
  out[0] = tx->rank == 1 ? rlx_l_reshape(L, y, rlx_out_type(L, n, 0)) : y;
}

static void lower_gguf(rlx_lower *L, const rlx_node *n, rlx_dq_scheme s, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_type *tx = rlx_in_type(L, n, 0);
  rlx_mx_arr *w = dequant_gguf(L, s, in[1], rlx_in_type(L, n, 1)->dims[0], tx->dims[tx->rank - 1]);
  if (w) matmul_wt(L, n, in[0], w, out);
}

void rlx_lower_dequant(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_dq_scheme s = rlx_dq_scheme_of(rlx_node_s(n, "scheme"));
  switch (rlx_dq_info_of(s)->kind) {
    case RLX_DQK_GGUF:
      lower_gguf(L, n, s, in, out);
      return;
    case RLX_DQK_INT:
      lower_int_block(L, n, in, out);
      return;
    default:
      lower_fp(L, n, s, in, out);
  }
}
