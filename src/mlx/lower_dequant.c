/* lower_dequant.c: DequantMatMul, DequantGroupedMatMul and Dequantize on MLX. On the CPU float32 rows times
 * GGUF Q8_0, Q4_0, Q4_1 or Q4_K weights (an LLM's decode and prefill steps) run rlx's kernel on the packed
 * bytes (rlx_mx_matvec). The int, MX (mxfp4, mxfp8),
 * NVFP4 and GGUF Q4_0/Q4_1/Q8_0/Q4_K schemes map onto MLX's quantized_matmul / gather_qmm (the int
 * and GGUF ones repacked into MLX's affine layout: in the graph, or once by the executable when the
 * weights are constants or params, rlx_l_dequant_repack); the
 * other GGUF block types and FP8 are unpacked and dequantized on the device with MLX bitwise and
 * arithmetic ops (GGUF: the formulas of ggml's dequantize_row_* in ggml-quants.c over the block_*
 * layouts of ggml-common.h), then multiplied with one matmul. Nothing goes through the host. */
#include <math.h>
#include <string.h>

#include "ir/dequant.h"
#include "mlx/lower.h"

#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))

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

/* Codes uint8[N, K*bits/8] -> float32 [N, K/bs, bs] (4-bit codes: E2M1, low nibble first). */
static rlx_mx_arr *decode_codes(rlx_lower *L, rlx_dq_scheme s, rlx_mx_arr *q, int64_t N, int64_t K, int64_t bs) {
  rlx_mx *c = L->mx;
  rlx_mx_arr *v;
  if (rlx_dq_info_of(s)->bits == 4) {
    blocks b = {.L = L, .p = q, .rows = N, .nb = 1, .bb = K / 2};
    v = rlx_l_lowp_decode(L, spread(&b, rlx_mx_reshape(c, q, 3, (int64_t[]){N, 1, K / 2}), K / 2, 1, 2, sh_nib, 15), RLX_DTYPE_F4E2M1);
  } else { /* FP8 E4M3 (mxfp8, fp8_e4m3) or E5M2 */
    v = rlx_l_lowp_decode(L, q, s == RLX_DQ_FP8_E5M2 ? RLX_DTYPE_F8E5M2 : RLX_DTYPE_F8E4M3FN);
  }
  return rlx_mx_reshape(c, v, 3, (int64_t[]){N, K / bs, bs});
}

/* The weight operands of one product, flattened to R rows of K elements: q/packed codes [R, cols],
 * scale [R, K/bs] (MX/NVFP4: uint8 codes), extra the zero point [R, K/bs] (int asym) or nvfp4's
 * global scale (a scalar, or [R,1,1]). */
typedef struct wops {
  rlx_dq_scheme s;
  const rlx_dq_info *info;
  rlx_mx_arr *q, *scale, *extra;
  int64_t R, K, bs;
} wops;

/* o's operands from the node's weight inputs w[0..) whose leading dims hold R / N rows, N the
 * rows of one matrix; a per-matrix global scale g[R/N] is spread over its N rows. */
static wops wops_of(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *w, int nw, int64_t R, int64_t N, int64_t K) {
  rlx_mx *c = L->mx;
  wops o = {.s = rlx_dq_scheme_of(rlx_node_s(n, "scheme")), .R = R, .K = K};
  o.info = rlx_dq_info_of(o.s);
  o.bs = o.info->block_elems ? o.info->block_elems : rlx_node_i(n, "block_size");
  rlx_type t;
  int64_t cols = o.info->kind == RLX_DQK_GGUF ? K / o.bs * o.info->block_bytes : o.info->kind == RLX_DQK_INT ? K : K * o.info->bits / 8;
  o.q = rlx_mx_reshape(c, w[0], 2, (int64_t[]){R, cols});
  if (nw > 1) o.scale = rlx_mx_reshape(c, w[1], 2, (int64_t[]){R, K / o.bs});
  if (nw > 2 && o.info->kind == RLX_DQK_INT) o.extra = rlx_mx_reshape(c, w[2], 2, (int64_t[]){R, K / o.bs});
  if (nw > 2 && o.info->kind == RLX_DQK_NV && rlx_mx_type(w[2], &t)) {
    int64_t cnt = 1;
    for (int i = 0; i < t.rank; i++) cnt *= t.dims[i];
    if (cnt > 1) { /* one per matrix */
      rlx_mx_arr *g = rlx_mx_broadcast_to(c, rlx_mx_reshape(c, w[2], 2, (int64_t[]){cnt, 1}), 2, (int64_t[]){cnt, N});
      o.extra = rlx_mx_reshape(c, g, 3, (int64_t[]){R, 1, 1});
    } else {
      o.extra = rlx_mx_reshape(c, w[2], 0, NULL);
    }
  }
  return o;
}

/* MLX affine quantized_matmul wants w as unsigned `bits`-bit values packed little-end-first into
 * uint32 words (element j of a word in bits [j*bits, (j+1)*bits)), with w = scale * u + bias per
 * group. Symmetric schemes shift q by 2^(bits-1) into the unsigned range (bias = -2^(bits-1)
 * scale); asymmetric ones keep q and use bias = -zero_point * scale. Values outside the scheme's
 * range wrap modulo 2^bits (masked) instead of spilling into their neighbours. u: uint32 [R, K]. */
static void int_affine(rlx_lower *L, const wops *o, rlx_dtype dt, rlx_mx_arr **u, rlx_mx_arr **scale, rlx_mx_arr **bias) {
  rlx_mx *c = L->mx;
  int bits = o->info->bits;
  rlx_mx_arr *v = rlx_mx_astype(c, o->q, RLX_DTYPE_I32);
  *scale = rlx_mx_astype(c, o->scale, dt);
  if (o->extra) {
    *bias = B(MULTIPLY, rlx_mx_unary(c, RLX_MXU_NEGATIVE, rlx_mx_astype(c, o->extra, dt)), *scale);
  } else {
    double off = bits == 8 ? 128 : 8;
    v = B(ADD, v, rlx_mx_scalar(c, off, RLX_DTYPE_I32));
    *bias = B(MULTIPLY, *scale, rlx_mx_scalar(c, -off, dt));
  }
  *u = B(BITWISE_AND, rlx_mx_astype(c, v, RLX_DTYPE_U32), rlx_mx_scalar(c, (double)((1 << bits) - 1), RLX_DTYPE_U32));
}

/* u uint32 [R, K] of `bits`-bit values -> uint32 words [R, K*bits/32]. */
static rlx_mx_arr *pack_words(rlx_lower *L, rlx_mx_arr *u, int64_t R, int64_t K, int bits) {
  rlx_mx *c = L->mx;
  int64_t epw = 32 / bits;
  rlx_type tu = {.dtype = RLX_DTYPE_U32, .rank = 3, .dims = {R, K / epw, epw}};
  u = rlx_mx_reshape(c, u, 3, tu.dims);
  rlx_mx_arr *packed = NULL;
  for (int64_t j = 0; j < epw; j++) {
    rlx_mx_arr *part = B(LEFT_SHIFT, rlx_l_narrow(L, u, &tu, 2, j, 1), rlx_mx_scalar(c, (double)(j * bits), RLX_DTYPE_U32));
    packed = packed ? B(BITWISE_OR, packed, part) : part;
  }
  return rlx_mx_reshape(c, packed, 2, (int64_t[]){R, K / epw});
}

/* W [R, K] in dt (float32, or float64 for float64 x), dequantized on the device. */
static rlx_mx_arr *dequant_weight(rlx_lower *L, const wops *o, rlx_dtype dt) {
  rlx_mx *c = L->mx;
  int64_t R = o->R, K = o->K;
  switch (o->info->kind) {
    case RLX_DQK_GGUF: {
      rlx_mx_arr *w = dequant_gguf(L, o->s, o->q, R, K);
      return w ? rlx_mx_astype(c, w, dt) : NULL;
    }
    case RLX_DQK_INT: {
      rlx_mx_arr *u, *scale, *bias;
      int_affine(L, o, dt, &u, &scale, &bias);
      int64_t blk[3] = {R, K / o->bs, 1};
      rlx_mx_arr *w = rlx_mx_reshape(c, rlx_mx_astype(c, u, dt), 3, (int64_t[]){R, K / o->bs, o->bs});
      w = B(ADD, B(MULTIPLY, w, rlx_mx_reshape(c, scale, 3, blk)), rlx_mx_reshape(c, bias, 3, blk));
      return rlx_mx_reshape(c, w, 2, (int64_t[]){R, K});
    }
    default: { /* MX, NVFP4, FP8: codes and scales decode exactly in float32, their products round in dt */
      rlx_mx_arr *sc = o->info->kind == RLX_DQK_MX ? e8m0(c, o->scale) : o->info->kind == RLX_DQK_NV ? rlx_l_lowp_decode(L, o->scale, RLX_DTYPE_F8E4M3FN) : o->scale;
      sc = rlx_mx_reshape(c, rlx_mx_astype(c, sc, dt), 3, (int64_t[]){R, K / o->bs, 1});
      rlx_mx_arr *w = B(MULTIPLY, rlx_mx_astype(c, decode_codes(L, o->s, o->q, R, K, o->bs), dt), sc);
      if (o->extra) w = B(MULTIPLY, w, rlx_mx_astype(c, o->extra, dt));
      return rlx_mx_reshape(c, w, 2, (int64_t[]){R, K});
    }
  }
}

/* The GGUF schemes whose blocks map exactly onto MLX's affine layout. */
static bool affine_gguf(rlx_dq_scheme s) { return s == RLX_DQ_Q4_0 || s == RLX_DQ_Q4_1 || s == RLX_DQ_Q8_0 || s == RLX_DQ_Q4_K; }

/* The rows of x that quantized_matmul takes on the CPU: that kernel goes row by row, and past a few
 * rows (prefill) one dequantization and a BLAS matmul are faster (2048x2048 Q4_0, 16 rows: 0.8 s
 * vs 0.27 s). */
#define QMM_CPU_ROWS 4

/* DequantMatMul on the CPU runs rlx's matvec kernel for float32 x times GGUF Q8_0, Q4_0, Q4_1, Q5_0,
 * Q5_1, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K: the kernel's scheme, or -1. */
static int cpu_matvec(rlx_dq_scheme s, rlx_dtype xdt, bool gpu) {
  if (gpu || xdt != RLX_DTYPE_F32) return -1;
  return s == RLX_DQ_Q8_0 ? 0 : s == RLX_DQ_Q4_K ? 1 : s == RLX_DQ_Q4_0 ? 4 : s == RLX_DQ_Q4_1 ? 5 : s == RLX_DQ_Q6_K ? 6 : s == RLX_DQ_Q5_K ? 7
         : s == RLX_DQ_Q3_K                        ? 8
         : s == RLX_DQ_Q2_K                        ? 9
         : s == RLX_DQ_Q5_0                        ? 10
         : s == RLX_DQ_Q5_1                        ? 11
                                                   : -1;
}

/* true when o maps onto MLX's quantized_matmul / gather_qmm for `rows` rows of x of dtype xdt
 * (no float64 there). */
static bool qmm_able(rlx_lower *L, const wops *o, rlx_dtype xdt, int64_t rows) {
  rlx_dq_kind k = o->info->kind;
  if (rows > QMM_CPU_ROWS && rlx_mx_get_device(L->mx) != RLX_MX_GPU) return false;
  return xdt != RLX_DTYPE_F64 && (k == RLX_DQK_INT || k == RLX_DQK_MX || k == RLX_DQK_NV || affine_gguf(o->s));
}

/* GGUF 4-bit codes in chunks of L bytes (element j < L: low nibble of byte j, else the high nibble
 * of byte j - L: Q4_0, Q4_1, Q4_K) -> MLX's affine order (element i in nibble i % 2 of byte i / 2):
 * byte b < L/2 = lo(2b) | lo(2b+1) << 4, byte L/2 + b = hi(2b) | hi(2b+1) << 4. a: uint8 [R, nb, C*L]. */
static rlx_mx_arr *nibbles_affine(const blocks *b, rlx_mx_arr *a, int64_t C, int64_t L) {
  rlx_mx *c = b->L->mx;
  rlx_type t = {.dtype = RLX_DTYPE_U8, .rank = 5, .dims = {b->rows, b->nb, C, L / 2, 2}};
  a = rlx_mx_reshape(c, a, 5, t.dims);
  rlx_mx_arr *ev = rlx_l_narrow(b->L, a, &t, 4, 0, 1), *od = rlx_l_narrow(b->L, a, &t, 4, 1, 1);
  rlx_mx_arr *parts[2] = {B(BITWISE_OR, B(BITWISE_AND, ev, u8(c, 15)), B(LEFT_SHIFT, B(BITWISE_AND, od, u8(c, 15)), u8(c, 4))),
                          B(BITWISE_OR, B(RIGHT_SHIFT, ev, u8(c, 4)), B(BITWISE_AND, od, u8(c, 0xF0)))};
  return rlx_mx_concatenate(c, parts, 2, 3);
}

/* Q4_0, Q4_1, Q8_0 and Q4_K in MLX's affine form (groups of 32: w = scale u + bias, exactly the
 * GGUF formulas d (q - 8), d q + m, d q, (d sc) q - dmin m), repacked in the graph from the packed
 * bytes: u bytes [R, K*bits/8] and scales/biases [R, K/32] in dt. */
static void gguf_affine(rlx_lower *L, const wops *o, rlx_dtype dt, rlx_mx_arr **u, rlx_mx_arr **scale, rlx_mx_arr **bias) {
  rlx_mx *c = L->mx;
  blocks b = {.L = L, .rows = o->R, .nb = o->K / o->bs, .bb = o->info->block_bytes};
  b.p = rlx_mx_reshape(c, o->q, 3, (int64_t[]){b.rows, b.nb, b.bb});
  rlx_mx_arr *d = half_at(&b, 0), *m = NULL;
  switch (o->s) {
    case RLX_DQ_Q4_0:
      *u = nibbles_affine(&b, field(&b, 2, 16), 1, 16);
      m = B(MULTIPLY, d, f32(c, -8));
      break;
    case RLX_DQ_Q4_1:
      *u = nibbles_affine(&b, field(&b, 4, 16), 1, 16);
      m = half_at(&b, 2);
      break;
    case RLX_DQ_Q8_0: /* int8 q + 128 = its byte with the top bit flipped */
      *u = B(BITWISE_XOR, field(&b, 2, 32), u8(c, 0x80));
      m = B(MULTIPLY, d, f32(c, -128));
      break;
    default: { /* Q4_K: 8 groups of 32 per block */
      rlx_mx_arr *sc, *mn;
      scale_min_k4(&b, 4, &sc, &mn);
      *u = nibbles_affine(&b, field(&b, 16, 128), 4, 32);
      m = rlx_mx_unary(c, RLX_MXU_NEGATIVE, B(MULTIPLY, half_at(&b, 2), tof(c, mn)));
      d = B(MULTIPLY, d, tof(c, sc));
      break;
    }
  }
  int64_t gdims[2] = {o->R, o->K / 32};
  *u = rlx_mx_reshape(c, *u, 2, (int64_t[]){o->R, o->K * (o->s == RLX_DQ_Q8_0 ? 8 : 4) / 8});
  *scale = rlx_mx_astype(c, rlx_mx_reshape(c, rlx_mx_broadcast_to(c, d, 3, (int64_t[]){b.rows, b.nb, o->K / 32 / b.nb}), 2, gdims), dt);
  *bias = rlx_mx_astype(c, rlx_mx_reshape(c, rlx_mx_broadcast_to(c, m, 3, (int64_t[]){b.rows, b.nb, o->K / 32 / b.nb}), 2, gdims), dt);
}

/* quantized_matmul operands of o, w [R, K*bits/32] uint32, scales/biases [R, K/group]. mxfp4,
 * mxfp8 and nvfp4 take the codes as they are (uint8 rows viewed as uint32 words: the same bytes)
 * and the uint8 scales. */
typedef struct qmm {
  rlx_mx_arr *w, *scales, *biases;
  int group, bits;
  const char *mode;
} qmm;

/* The affine schemes' operands are node n's kept ones (L->qmm) when it has them, else repacked here. */
static qmm qmm_of(rlx_lower *L, const rlx_node *n, const wops *o, rlx_dtype xdt) {
  qmm q = {.group = (int)o->bs, .bits = o->info->bits};
  bool gguf = o->info->kind == RLX_DQK_GGUF;
  if (o->info->kind == RLX_DQK_INT || gguf) {
    const rlx_l_qmm *kept = L->qmm && L->qmm[n->out0].w ? &L->qmm[n->out0] : NULL;
    q.mode = "affine";
    if (gguf) q.group = 32, q.bits = o->s == RLX_DQ_Q8_0 ? 8 : 4;
    rlx_mx_arr *u;
    if (kept) {
      q.w = kept->w, q.scales = kept->scales, q.biases = kept->biases;
    } else if (gguf) {
      gguf_affine(L, o, xdt, &u, &q.scales, &q.biases);
      q.w = rlx_mx_view(L->mx, u, RLX_DTYPE_U32);
    } else {
      int_affine(L, o, xdt, &u, &q.scales, &q.biases);
      q.w = pack_words(L, u, o->R, o->K, q.bits);
    }
  } else {
    q.w = rlx_mx_view(L->mx, o->q, RLX_DTYPE_U32);
    q.scales = o->scale;
    q.mode = o->s == RLX_DQ_MXFP4 ? "mxfp4" : o->s == RLX_DQ_MXFP8 ? "mxfp8" : "nvfp4";
  }
  return q;
}

/* MLX reads the E8M0 NaN (0xFF) as 2^128: rows of W holding one give NaN, as the MX spec has it.
 * [R] bool for MX schemes, else NULL. */
static rlx_mx_arr *nan_rows(rlx_lower *L, const wops *o) {
  rlx_mx *c = L->mx;
  if (o->info->kind != RLX_DQK_MX) return NULL;
  return rlx_mx_reduce(c, B(EQUAL, o->scale, u8(c, 255)), 7, 1, (int[]){1}, false);
}

/* The weight operands of DequantMatMul (N rows) or DequantGroupedMatMul (E experts of N rows)
 * node n from its inputs in[1..]. */
static wops node_wops(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in) {
  const rlx_type *tx = rlx_in_type(L, n, 0), *tq = rlx_in_type(L, n, 1);
  int64_t K = tx->dims[tx->rank - 1];
  if (n->op == RLX_OP_DEQUANT_GROUPED_MATMUL) return wops_of(L, n, in + 1, (int)n->n_in - 2, tq->dims[0] * tq->dims[1], tq->dims[1], K);
  return wops_of(L, n, in + 1, (int)n->n_in - 1, tq->dims[0], tq->dims[0], K);
}

bool rlx_l_dequant_repacks(const rlx_graph *g, const rlx_node *n, bool gpu) {
  bool grouped = n->op == RLX_OP_DEQUANT_GROUPED_MATMUL;
  if (!grouped && n->op != RLX_OP_DEQUANT_MATMUL) return false;
  rlx_dq_scheme s = rlx_dq_scheme_of(rlx_node_s(n, "scheme"));
  const rlx_type *tx = &g->types[n->in[0]];
  if (tx->dtype == RLX_DTYPE_F64 || !(rlx_dq_info_of(s)->kind == RLX_DQK_INT || affine_gguf(s)) || tx->dims[tx->rank - 1] < 0) return false;
  for (uint32_t i = 1; i < n->n_in - grouped; i++)
    for (int d = 0; d < g->types[n->in[i]].rank; d++)
      if (g->types[n->in[i]].dims[d] < 0) return false;
  if (gpu) return true;
  int64_t rows = 1; /* the least number of rows a run can have */
  for (int d = 0; d < (grouped ? 1 : tx->rank - 1); d++) rows *= tx->dims[d] < 0 ? 1 : tx->dims[d];
  return rows <= QMM_CPU_ROWS && (grouped || cpu_matvec(s, tx->dtype, false) < 0);
}

int rlx_l_dequant_rows8(const rlx_graph *g, const rlx_node *n) {
  if (n->op != RLX_OP_DEQUANT_MATMUL || strcmp(rlx_node_s(n, "activations"), "q8_0")) return -1;
  const rlx_type *tx = &g->types[n->in[0]], *tw = &g->types[n->in[1]];
  int s = cpu_matvec(rlx_dq_scheme_of(rlx_node_s(n, "scheme")), tx->dtype, false);
  if (s < 0 || tw->rank != 2 || !RLX_DIM_IS_STATIC(tw->dims[0]) || !RLX_DIM_IS_STATIC(tw->dims[1]) || tw->dims[0] < 8 ||
      tw->dtype != RLX_DTYPE_U8)
    return -1;
  return rlx_mx_matvec_rows8_able(s) ? s : -1;
}

void rlx_l_dequant_repack(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_l_qmm *out) {
  wops o = node_wops(L, n, in);
  qmm q = qmm_of(L, n, &o, rlx_in_type(L, n, 0)->dtype);
  *out = (rlx_l_qmm){.w = q.w, .scales = q.scales, .biases = q.biases};
}

/* x rounded to GGUF Q8_0 blocks along its last axis (DequantMatMul's activations "q8_0",
 * rlx/op_table.h), in float32: per 32 values d = max|x| / 127 and v = x (1 / d) (0 where d is 0),
 * q = v rounded half away from zero as gguf-py's np_roundf forms it (sign(v) (floor|v| +
 * floor(2 (|v| - floor|v|)))), x = q float16(d); a block holding a non-finite value unchanged.
 * Returned in x's dtype. */
static rlx_mx_arr *q8_0_round(rlx_lower *L, rlx_mx_arr *x, const rlx_type *tx) {
  rlx_mx *c = L->mx;
  int r = tx->rank, ax = r;
  int64_t bshape[RLX_MAX_RANK + 1];
  memcpy(bshape, tx->dims, sizeof(int64_t) * (size_t)r);
  bshape[r - 1] /= 32, bshape[r] = 32;
  rlx_mx_arr *v = rlx_mx_reshape(c, rlx_mx_astype(c, x, RLX_DTYPE_F32), r + 1, bshape), *zero = rlx_mx_scalar(c, 0, RLX_DTYPE_F32);
  rlx_mx_arr *bad = B(LOGICAL_OR, rlx_mx_unary(c, RLX_MXU_ISNAN, v), rlx_mx_unary(c, RLX_MXU_ISINF, v));
  rlx_mx_arr *finite = rlx_mx_unary(c, RLX_MXU_LOGICAL_NOT, rlx_mx_reduce(c, bad, 7, 1, &ax, true));
  rlx_mx_arr *d = B(DIVIDE, rlx_mx_reduce(c, rlx_mx_unary(c, RLX_MXU_ABS, v), 2, 1, &ax, true), rlx_mx_scalar(c, 127, RLX_DTYPE_F32));
  rlx_mx_arr *d16 = rlx_mx_astype(c, rlx_mx_astype(c, d, RLX_DTYPE_F16), RLX_DTYPE_F32);
  /* a float16 d of 0 (d below its range: 1 / d may overflow) dequantizes to 0 whatever the codes */
  rlx_mx_arr *id = rlx_mx_where(c, B(EQUAL, d16, zero), zero, rlx_mx_unary(c, RLX_MXU_RECIPROCAL, d));
  rlx_mx_arr *t = B(MULTIPLY, v, id), *a = rlx_mx_unary(c, RLX_MXU_ABS, t), *f = rlx_mx_unary(c, RLX_MXU_FLOOR, a);
  rlx_mx_arr *half = rlx_mx_unary(c, RLX_MXU_FLOOR, B(MULTIPLY, B(SUBTRACT, a, f), rlx_mx_scalar(c, 2, RLX_DTYPE_F32)));
  rlx_mx_arr *q = B(MULTIPLY, rlx_mx_unary(c, RLX_MXU_SIGN, t), B(ADD, f, half));
  rlx_mx_arr *y = rlx_mx_where(c, finite, B(MULTIPLY, q, d16), v);
  return rlx_mx_astype(c, rlx_mx_reshape(c, y, r, tx->dims), tx->dtype);
}

/* DequantMatMul: y[..., N] = x @ W^T. A 1-D x goes through as one row (MLX's CUDA
 * quantized_matmul needs rank >= 2). */
static void lower_dequant_matmul(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0);
  int64_t K = tx->dims[tx->rank - 1];
  wops o = node_wops(L, n, in);
  bool q8 = !strcmp(rlx_node_s(n, "activations"), "q8_0");
  int kernel = cpu_matvec(o.s, tx->dtype, rlx_mx_get_device(c) == RLX_MX_GPU);
  if (kernel >= 0) { /* the rows8 form of W where the executable keeps one (exec_layout.c) */
    rlx_mx_arr *w8 = q8 && L->w_packed && rlx_l_dequant_rows8(L->g, n) == kernel ? L->w_packed[n->in[1]] : NULL;
    out[0] = rlx_mx_matvec(c, in[0], o.q, w8, kernel, q8, rlx_l_read_once(L, n->in[0])); /* [.., N] */
    return;
  }
  rlx_mx_arr *x = q8 ? q8_0_round(L, in[0], tx) : in[0], *y;
  if (tx->rank == 1) x = rlx_mx_reshape(c, x, 2, (int64_t[]){1, K});
  int64_t rows = 1;
  for (int i = 0; i + 1 < tx->rank; i++) rows *= tx->dims[i];
  if (qmm_able(L, &o, tx->dtype, rows)) {
    qmm q = qmm_of(L, n, &o, tx->dtype);
    y = rlx_mx_quantized_matmul(c, x, q.w, q.scales, q.biases, true, q.group, q.bits, q.mode);
    if (o.extra && o.info->kind == RLX_DQK_NV) y = B(MULTIPLY, y, rlx_mx_astype(c, o.extra, tx->dtype));
    rlx_mx_arr *nan = nan_rows(L, &o);
    if (nan) y = rlx_mx_where(c, nan, rlx_mx_scalar(c, NAN, tx->dtype), y);
  } else {
    rlx_mx_arr *w = dequant_weight(L, &o, tx->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32);
    if (!w) return;
    y = rlx_mx_matmul(c, x, rlx_mx_transpose(c, rlx_mx_astype(c, w, tx->dtype), 2, (int64_t[]){1, 0}));
  }
  out[0] = tx->rank == 1 ? rlx_l_reshape(L, y, rlx_out_type(L, n, 0)) : y;
}

/* DequantGroupedMatMul: y[m] = x[m] @ W[idx[m]]^T over x[M,1,K]. gather_qmm for the int, MX and
 * NVFP4 schemes; otherwise the selected experts' weights are gathered (still packed) and
 * dequantized when M <= E (decoding: few tokens) or x is not float32, or every expert is dequantized
 * once and gather_mm picks (prefill). */
static void lower_grouped(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tx = rlx_in_type(L, n, 0), *tq = rlx_in_type(L, n, 1);
  int64_t M = tx->dims[0], K = tx->dims[1], E = tq->dims[0], N = tq->dims[1];
  int nw = (int)n->n_in - 2;
  rlx_mx_arr *idx = rlx_l_expert_index(L, in[n->n_in - 1], E), *x = rlx_mx_reshape(c, in[0], 3, (int64_t[]){M, 1, K}), *y;
  wops o = node_wops(L, n, in);
  rlx_dtype wdt = tx->dtype == RLX_DTYPE_F64 ? RLX_DTYPE_F64 : RLX_DTYPE_F32;
  if (qmm_able(L, &o, tx->dtype, M)) {
    qmm q = qmm_of(L, n, &o, tx->dtype);
    int64_t ws[3] = {E, N, K * q.bits / 32}, ss[3] = {E, N, K / q.group};
    rlx_mx_arr *w = rlx_mx_reshape(c, q.w, 3, ws), *s = rlx_mx_reshape(c, q.scales, 3, ss);
    rlx_mx_arr *b = q.biases ? rlx_mx_reshape(c, q.biases, 3, ss) : NULL;
    y = rlx_mx_reshape(c, rlx_mx_gather_qmm(c, x, w, s, b, idx, q.group, q.bits, q.mode), 2, (int64_t[]){M, N});
    if (o.extra && o.info->kind == RLX_DQK_NV) { /* one scale, or one per row of expert idx[m] */
      rlx_mx_arr *g = o.extra;
      rlx_type tg;
      if (rlx_mx_type(g, &tg) && tg.rank == 3) g = rlx_mx_take(c, rlx_mx_reshape(c, g, 2, (int64_t[]){E, N}), idx, 0);
      y = B(MULTIPLY, y, rlx_mx_astype(c, g, tx->dtype));
    }
    rlx_mx_arr *nan = nan_rows(L, &o);
    if (nan) y = rlx_mx_where(c, rlx_mx_take(c, rlx_mx_reshape(c, nan, 2, (int64_t[]){E, N}), idx, 0), rlx_mx_scalar(c, NAN, tx->dtype), y);
    out[0] = y;
    return;
  }
  rlx_mx_arr *w;
  if (M <= E || tx->dtype != RLX_DTYPE_F32) { /* (MLX's CPU gather_mm is float32 only) */
    rlx_mx_arr *sel[3];
    for (int i = 0; i < nw; i++) {
      rlx_type t;
      sel[i] = rlx_mx_type(in[1 + i], &t) && t.rank >= 1 && t.dims[0] == E ? rlx_mx_take(c, in[1 + i], idx, 0) : in[1 + i];
    }
    wops os = wops_of(L, n, sel, nw, M * N, N, K);
    if (!(w = dequant_weight(L, &os, wdt))) return;
    w = rlx_mx_transpose(c, rlx_mx_reshape(c, rlx_mx_astype(c, w, tx->dtype), 3, (int64_t[]){M, N, K}), 3, (int64_t[]){0, 2, 1});
    y = rlx_mx_matmul(c, x, w);
  } else {
    if (!(w = dequant_weight(L, &o, wdt))) return;
    w = rlx_mx_transpose(c, rlx_mx_reshape(c, rlx_mx_astype(c, w, tx->dtype), 3, (int64_t[]){E, N, K}), 3, (int64_t[]){0, 2, 1});
    y = rlx_mx_gather_mm(c, x, w, NULL, idx);
  }
  out[0] = rlx_mx_reshape(c, y, 2, (int64_t[]){M, N});
}

/* Dequantize: rlx's kernel on the CPU for the schemes of its matvec, else the MLX decoder of
 * DequantMatMul's GGUF schemes. */
static void lower_dequantize(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *tq = rlx_in_type(L, n, 0), *to = rlx_out_type(L, n, 0);
  rlx_dq_scheme s = rlx_dq_scheme_of(rlx_node_s(n, "scheme"));
  int kernel = cpu_matvec(s, RLX_DTYPE_F32, rlx_mx_get_device(c) == RLX_MX_GPU);
  if (kernel >= 0) {
    out[0] = rlx_mx_dequant(c, in[0], kernel);
    return;
  }
  int64_t rows = 1, rb = tq->dims[tq->rank - 1], K = to->dims[to->rank - 1];
  for (int i = 0; i + 1 < tq->rank; i++) rows *= tq->dims[i];
  rlx_mx_arr *w = dequant_gguf(L, s, rlx_mx_reshape(c, in[0], 2, (int64_t[]){rows, rb}), rows, K);
  if (w) out[0] = rlx_l_reshape(L, w, to);
}

void rlx_lower_dequant(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  if (n->op == RLX_OP_DEQUANTIZE) lower_dequantize(L, n, in, out);
  else if (n->op == RLX_OP_DEQUANT_GROUPED_MATMUL) lower_grouped(L, n, in, out);
  else lower_dequant_matmul(L, n, in, out);
}
