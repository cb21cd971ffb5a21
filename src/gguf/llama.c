/* llama.c: Llama-family models from GGUF files (rlx/llm.h): configuration from the metadata,
 * the decoder graph in the rlx IR, weights as params, the cached step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/gguf.h"
#include "rlx/llm.h"

#define TRY(expr)                 \
  do {                            \
    rlx_status *try_st_ = (expr); \
    if (try_st_) return try_st_;  \
  } while (0)

struct rlx_llm {
  rlx_llm_config cfg;
  int64_t capacity, pos;
  rlx_executable *ex;
  size_t n_outputs; /* logits, next, the caches k0, v0, k1 .., next_tokens, next_positions */
  bool packed;      /* caches positions first (build) */
};

/* The output index of layer l's key (j 0) or value (j 1) cache, that of next_tokens (the next
 * token as int32 [1, 1], fed back to the tokens input for rlx_llm_generate) and of next_positions
 * (the last position + 1, int32 [1], fed back to the positions input). */
#define CACHE_OUT(l, j) (2 + 2 * (size_t)(l) + (size_t)(j))
#define NEXT_TOKENS_OUT(m) ((m)->n_outputs - 2)
#define NEXT_POSITIONS_OUT(m) ((m)->n_outputs - 1)

/* ---- metadata ---- */

static rlx_status *meta_int(const rlx_gguf *f, const char *arch, const char *key, bool required, int64_t dflt, int64_t *out) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  size_t i;
  rlx_status *st = rlx_gguf_find_kv(f, full, &i);
  if (st && !required) {
    rlx_status_free(st);
    *out = dflt;
    return NULL;
  }
  if (st) return st;
  return rlx_gguf_kv_int(f, i, 0, out);
}

static rlx_status *meta_float(const rlx_gguf *f, const char *arch, const char *key, double dflt, double *out) {
  char full[128];
  snprintf(full, sizeof full, "%s.%s", arch, key);
  size_t i;
  rlx_status *st = rlx_gguf_find_kv(f, full, &i);
  if (st) {
    rlx_status_free(st);
    *out = dflt;
    return NULL;
  }
  return rlx_gguf_kv_float(f, i, 0, out);
}

static rlx_status *read_config(const rlx_gguf *f, rlx_llm_config *c) {
  size_t i;
  const char *arch;
  size_t len;
  TRY(rlx_gguf_find_kv(f, "general.architecture", &i));
  TRY(rlx_gguf_kv_string(f, i, 0, &arch, &len));
  bool neox = !strcmp(arch, "qwen2");
  if (strcmp(arch, "llama") && strcmp(arch, "mistral") && !neox)
    return rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "general.architecture '%s': rlx_llm reads llama, mistral and qwen2", arch);
  snprintf(c->arch, sizeof c->arch, "%s", arch);
  c->rope_neox = neox;
  TRY(meta_int(f, arch, "block_count", true, 0, &c->n_layers));
  TRY(meta_int(f, arch, "embedding_length", true, 0, &c->dim));
  TRY(meta_int(f, arch, "feed_forward_length", true, 0, &c->ffn_dim));
  TRY(meta_int(f, arch, "attention.head_count", true, 0, &c->n_heads));
  TRY(meta_int(f, arch, "attention.head_count_kv", false, c->n_heads, &c->n_kv_heads));
  if (c->n_layers < 1 || c->n_layers > 4096 || c->dim < 1 || c->ffn_dim < 1 || c->n_heads < 1 || c->n_kv_heads < 1 ||
      c->n_heads % c->n_kv_heads || c->dim % c->n_heads)
    return rlx_status_make(RLX_STATUS_DATA_LOSS,
                           "%s: block_count %lld, embedding_length %lld, feed_forward_length %lld, head_count %lld, head_count_kv %lld "
                           "(expected positive, head_count a multiple of head_count_kv dividing embedding_length)",
                           arch, (long long)c->n_layers, (long long)c->dim, (long long)c->ffn_dim, (long long)c->n_heads,
                           (long long)c->n_kv_heads);
  TRY(meta_int(f, arch, "attention.key_length", false, c->dim / c->n_heads, &c->head_dim));
  TRY(meta_int(f, arch, "rope.dimension_count", false, c->head_dim, &c->n_rot));
  TRY(meta_int(f, arch, "context_length", false, 2048, &c->context));
  if (c->head_dim < 2 || c->head_dim % 2 || c->n_rot < 2 || c->n_rot % 2 || c->n_rot > c->head_dim || c->context < 1)
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "%s: key_length %lld, rope.dimension_count %lld, context_length %lld (expected even, n_rot <= key_length)",
                           arch, (long long)c->head_dim, (long long)c->n_rot, (long long)c->context);
  /* The query projection maps embedding_length to head_count * key_length outputs, a ggml dim
   * (< 2^31): checked on layer 0's tensor before key_length sizes anything (the rotary tables,
   * the cache), so a hostile key_length can neither overflow nor allocate beyond the file. */
  size_t t;
  rlx_gguf_tensor info;
  TRY(rlx_gguf_find_tensor(f, "blk.0.attn_q.weight", &t));
  TRY(rlx_gguf_tensor_info(f, t, &info));
  if (c->head_dim > INT32_MAX / c->n_heads || info.n_dims != 2 || info.dims[0] != c->dim || info.dims[1] != c->n_heads * c->head_dim)
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "blk.0.attn_q.weight: ggml shape [%lld, %lld] with %d dims (expected [%lld, %lld * %lld]: "
                           "embedding_length, head_count * key_length)", (long long)info.dims[0], (long long)info.dims[1], info.n_dims,
                           (long long)c->dim, (long long)c->n_heads, (long long)c->head_dim);
  TRY(meta_float(f, arch, "attention.layer_norm_rms_epsilon", 1e-5, &c->rms_eps));
  TRY(meta_float(f, arch, "rope.freq_base", 10000.0, &c->rope_base));
  c->rope_scale = 1.0;
  char key[128];
  snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
  rlx_status *absent = rlx_gguf_find_kv(f, key, &i);
  rlx_status_free(absent); /* no scaling key: none */
  if (!absent) {
    const char *type;
    TRY(rlx_gguf_kv_string(f, i, 0, &type, &len));
    if (!strcmp(type, "linear")) TRY(meta_float(f, arch, "rope.scaling.factor", 1.0, &c->rope_scale));
    else if (strcmp(type, "none"))
      return rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "%s: rope scaling '%s' (rlx_llm applies none and linear)", key, type);
  }
  if (!(c->rope_scale > 0) || !(c->rope_base > 0) || !(c->rms_eps >= 0))
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "%s: rope.freq_base %g, rope scale %g, rms epsilon %g (expected positive)", arch, c->rope_base,
                           c->rope_scale, c->rms_eps);
  TRY(rlx_gguf_find_tensor(f, "token_embd.weight", &t));
  TRY(rlx_gguf_tensor_info(f, t, &info));
  if (info.n_dims != 2 || info.dims[0] != c->dim)
    return rlx_status_make(RLX_STATUS_DATA_LOSS, "token_embd.weight: ggml shape [%lld, %lld] (expected [%lld, vocab])", (long long)info.dims[0],
                           (long long)info.dims[1], (long long)c->dim);
  c->vocab = info.dims[1];
  return NULL;
}

/* ---- graph building with a sticky status ---- */

typedef struct builder {
  rlx_graph *g;
  const rlx_gguf *f;
  rlx_status *st;
  bool packed; /* the caches positions first and attention on packed heads (the CPU, see build) */
  bool q8;     /* x rounded to Q8_0 blocks for the schemes of rlx's integer kernel (the CPU) */
} builder;

static rlx_value op(builder *b, rlx_op o, size_t n, const rlx_value *in, size_t na, const rlx_attr *attrs) {
  rlx_value v = 0;
  if (!b->st) b->st = rlx_graph_add1(b->g, o, NULL, n, in, na, attrs, &v);
  return v;
}

static rlx_value leaf(builder *b, bool param, const char *name, rlx_dtype dt, int rank, const int64_t *dims) {
  rlx_type t = {.dtype = dt, .rank = rank};
  memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
  rlx_value v = 0;
  if (!b->st) b->st = param ? rlx_graph_add_param(b->g, name, &t, &v) : rlx_graph_add_input(b->g, name, &t, &v);
  return v;
}

static rlx_value constant(builder *b, rlx_dtype dt, int rank, const int64_t *dims, const void *data) {
  rlx_type t = {.dtype = dt, .rank = rank};
  size_t n = rlx_dtype_size(dt);
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i], n *= (size_t)dims[i];
  rlx_value v = 0;
  if (!b->st) b->st = rlx_graph_add_constant(b->g, &t, data, n, &v);
  return v;
}

#define V2(a, b) ((const rlx_value[]){(a), (b)})

/* The DequantMatMul scheme of a quantized ggml type; NULL for F32/F16; "" for a type without one. */
static const char *scheme_of(uint32_t type) {
  switch (type) {
    case RLX_GGML_F32: case RLX_GGML_F16: return NULL;
    case RLX_GGML_Q4_0: return "gguf_q4_0";
    case RLX_GGML_Q4_1: return "gguf_q4_1";
    case RLX_GGML_Q5_0: return "gguf_q5_0";
    case RLX_GGML_Q5_1: return "gguf_q5_1";
    case RLX_GGML_Q8_0: return "gguf_q8_0";
    case RLX_GGML_Q2_K: return "gguf_q2k";
    case RLX_GGML_Q3_K: return "gguf_q3k";
    case RLX_GGML_Q4_K: return "gguf_q4k";
    case RLX_GGML_Q5_K: return "gguf_q5k";
    case RLX_GGML_Q6_K: return "gguf_q6k";
    case RLX_GGML_Q8_K: return "gguf_q8k";
    case RLX_GGML_MXFP4: return "gguf_mxfp4";
    default: return "";
  }
}

/* The info of tensor `name`, or for parts joined by '+' (matrices of one type and width K, see
 * linear_parts) that of their rows stacked: the first part's, with the rows and bytes of all. */
static rlx_status *tensor_info(const rlx_gguf *f, const char *name, rlx_gguf_tensor *out) {
  char part[96];
  for (const char *p = name;; p++) {
    size_t n = strcspn(p, "+"), i;
    rlx_gguf_tensor t;
    if (n >= sizeof part) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "tensor name '%.*s...' too long", 40, p);
    memcpy(part, p, n);
    part[n] = 0;
    TRY(rlx_gguf_find_tensor(f, part, &i));
    TRY(rlx_gguf_tensor_info(f, i, &t));
    if (p == name) {
      *out = t;
    } else if (t.type != out->type || t.n_dims != 2 || out->n_dims != 2 || t.dims[0] != out->dims[0]) {
      return rlx_status_make(RLX_STATUS_INTERNAL, "tensor '%s' cannot be stacked under '%s'", part, name);
    } else {
      out->dims[1] += t.dims[1];
      out->nbytes += t.nbytes;
    }
    p += n;
    if (!*p) return NULL;
  }
}

/* Looks up tensor `name` (or stacked parts, tensor_info) and checks it is a ggml [K, N] matrix
 * (N = 0: any; K = 0 with N: a vector of N). Declares its param: float32 [N, K] (or [N]),
 * float16 [N, K] for an F16 matrix (kept as stored: half the bytes a decode step reads), or
 * packed uint8 [N, row bytes]. */
static rlx_value weight(builder *b, const char *name, int64_t K, int64_t N, const char **out_scheme) {
  if (b->st) return 0;
  rlx_gguf_tensor t;
  if ((b->st = tensor_info(b->f, name, &t))) return 0;
  bool vec = K == 0;
  if (vec ? (t.n_dims != 1 || t.dims[0] != N) : (t.n_dims != 2 || t.dims[0] != K || t.dims[1] != N)) {
    if (vec)
      b->st = rlx_status_make(RLX_STATUS_DATA_LOSS, "tensor '%s': ggml shape [%lld] with %d dims (expected [%lld])", name, (long long)t.dims[0],
                              t.n_dims, (long long)N);
    else
      b->st = rlx_status_make(RLX_STATUS_DATA_LOSS, "tensor '%s': ggml shape [%lld, %lld] with %d dims (expected [%lld, %lld])", name,
                              (long long)t.dims[0], (long long)(t.n_dims > 1 ? t.dims[1] : 1), t.n_dims, (long long)K, (long long)N);
    return 0;
  }
  const char *scheme = scheme_of(t.type);
  if (scheme && (vec || !*scheme)) {
    const char *tn = "?";
    rlx_ggml_type_info(t.type, &tn, NULL, NULL);
    b->st = rlx_status_make(RLX_STATUS_UNIMPLEMENTED, "tensor '%s': ggml type %s (rlx_llm reads F32, F16 and %s)", name, tn,
                            vec ? "no quantized vectors" : "Q4_0..Q8_K, MXFP4 matrices");
    return 0;
  }
  *out_scheme = scheme;
  rlx_value seen; /* a tied table: the embedding's param serves the logits too */
  rlx_status *absent = rlx_graph_find(b->g, name, &seen);
  if (!absent) return seen;
  rlx_status_free(absent);
  if (vec) return leaf(b, true, name, RLX_DTYPE_F32, 1, (const int64_t[]){N});
  if (scheme) return leaf(b, true, name, RLX_DTYPE_U8, 2, (const int64_t[]){N, (int64_t)(t.nbytes / (size_t)N)});
  return leaf(b, true, name, t.type == RLX_GGML_F16 ? RLX_DTYPE_F16 : RLX_DTYPE_F32, 2, (const int64_t[]){N, K});
}

/* v as float32 (a float16 weight widened where it is used). */
static rlx_value f32(builder *b, rlx_value v) {
  if (b->st || rlx_graph_value_type(b->g, v)->dtype == RLX_DTYPE_F32) return v;
  return op(b, RLX_OP_CAST, 1, &v, 1, (rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_F32)});
}

/* y = x W^T (+ bias) for the file's [N, K] matrix `name`; bias `bias_name` [N] when the file has
 * it. A float16 W is MatMul(x, Transpose(Cast(W))), which rlx's matvec kernels run on W as
 * stored (lower_matmul.c: on the CPU; on a GPU for up to 8 rows of x, a decode step, while a
 * longer prefill widens W in MLX). */
static rlx_value linear(builder *b, rlx_value x, const char *name, const char *bias_name, int64_t K, int64_t N) {
  const char *scheme = NULL;
  rlx_value w = weight(b, name, K, N, &scheme), y;
  if (scheme) {
    bool q8 = b->q8 && (!strcmp(scheme, "gguf_q4_0") || !strcmp(scheme, "gguf_q4_1") || !strcmp(scheme, "gguf_q5_0") ||
                        !strcmp(scheme, "gguf_q5_1") || !strcmp(scheme, "gguf_q8_0") ||
                        !strcmp(scheme, "gguf_q2k") || !strcmp(scheme, "gguf_q3k") || !strcmp(scheme, "gguf_q4k") || !strcmp(scheme, "gguf_q5k") ||
                        !strcmp(scheme, "gguf_q6k"));
    y = op(b, RLX_OP_DEQUANT_MATMUL, 2, V2(x, w), 2,
           (rlx_attr[]){RLX_ATTR_S("scheme", scheme), RLX_ATTR_S("activations", q8 ? "q8_0" : "float")});
  } else {
    w = f32(b, w);
    rlx_value wt = op(b, RLX_OP_TRANSPOSE, 1, &w, 1, (rlx_attr[]){RLX_ATTR_IS("perm", 2, ((const int64_t[]){1, 0}))});
    y = op(b, RLX_OP_MATMUL, 2, V2(x, wt), 0, NULL);
  }
  size_t i;
  rlx_status *absent = bias_name && !b->st ? rlx_gguf_find_tensor(b->f, bias_name, &i) : NULL;
  if (bias_name && !b->st && !absent) {
    rlx_value bias = weight(b, bias_name, 0, N, &scheme);
    y = op(b, RLX_OP_ADD, 2, V2(y, bias), 0, NULL);
  }
  rlx_status_free(absent); /* no bias: NOT_FOUND is the answer */
  return y;
}

/* Columns [start, start + len) of x (its last axis). */
static rlx_value narrow(builder *b, rlx_value x, int64_t start, int64_t len) {
  if (b->st) return 0;
  int last = rlx_graph_value_type(b->g, x)->rank - 1;
  return op(b, RLX_OP_NARROW, 1, &x, 3, (rlx_attr[]){RLX_ATTR_I("axis", last), RLX_ATTR_I("start", start), RLX_ATTR_I("length", len)});
}

/* The products of x with several [N_i, K] matrices of the file (names[i], biases[i] or NULL,
 * widths N[i]) into out[i]. When they have one ggml type their rows are stacked into one param,
 * named by the parts joined with '+' (upload stacks the bytes): one product, whose columns are
 * then narrowed to each part (a decode step reads the same bytes in fewer, larger products).
 * Returns that product when no part has a bias (its columns are the parts side by side), else 0. */
static rlx_value linear_parts(builder *b, rlx_value x, int n, const char *const *names, const char *const *biases, int64_t K,
                              const int64_t *N, rlx_value *out) {
  char joined[3 * 96];
  size_t len = 0;
  uint32_t type = 0;
  bool same = true;
  int64_t total = 0;
  for (int p = 0; p < n && !b->st; p++) {
    size_t i;
    rlx_gguf_tensor t;
    rlx_status *absent = rlx_gguf_find_tensor(b->f, names[p], &i);
    if (absent || (b->st = rlx_gguf_tensor_info(b->f, i, &t))) { /* linear() below names what is missing */
      rlx_status_free(absent);
      same = false;
      break;
    }
    same = same && (p == 0 || t.type == type) && t.n_dims == 2 && t.dims[0] == K && t.dims[1] == N[p]; /* else linear() says why */
    type = t.type;
    total += N[p];
    if (len < sizeof joined) len += (size_t)snprintf(joined + len, sizeof joined - len, "%s%s", p ? "+" : "", names[p]);
  }
  if (!same || len >= sizeof joined || b->st) {
    for (int p = 0; p < n; p++) out[p] = linear(b, x, names[p], biases[p], K, N[p]);
    return 0;
  }
  rlx_value y = linear(b, x, joined, NULL, K, total);
  bool biased = false;
  for (int64_t p = 0, off = 0; p < n && !b->st; off += N[p], p++) {
    out[p] = narrow(b, y, off, N[p]);
    size_t i;
    rlx_status *absent = biases[p] ? rlx_gguf_find_tensor(b->f, biases[p], &i) : NULL;
    if (biases[p] && !absent) {
      const char *scheme = NULL;
      biased = true;
      rlx_value bias = weight(b, biases[p], 0, N[p], &scheme);
      out[p] = op(b, RLX_OP_ADD, 2, V2(out[p], bias), 0, NULL);
    }
    rlx_status_free(absent); /* no bias: NOT_FOUND is the answer */
  }
  return biased ? 0 : y;
}

static rlx_value rms_norm(builder *b, const rlx_llm_config *c, rlx_value x, const char *gain) {
  const char *scheme = NULL;
  rlx_value g = weight(b, gain, 0, c->dim, &scheme);
  return op(b, RLX_OP_RMS_NORM, 2, V2(x, g), 1, (rlx_attr[]){RLX_ATTR_F("epsilon", c->rms_eps)});
}

/* h = token_embd[tokens]: [1, S, E]; a quantized table's rows are gathered packed, then
 * dequantized. */
static rlx_value embed(builder *b, const rlx_llm_config *c, rlx_value tokens) {
  const char *scheme = NULL;
  rlx_value w = weight(b, "token_embd.weight", c->dim, c->vocab, &scheme);
  rlx_value rows = op(b, RLX_OP_GATHER, 2, V2(w, tokens), 0, NULL); /* [1, S, E] or packed [1, S, row bytes] */
  if (!scheme) return f32(b, rows);
  return op(b, RLX_OP_DEQUANTIZE, 1, &rows, 1, (rlx_attr[]){RLX_ATTR_S("scheme", scheme)});
}

/* Rotary tables cos/sin [C, n_rot/2]: angle(p, i) = p / scale * base^(-2i/n_rot) (llama.cpp's
 * theta_i = base^(-2i/n_dims)). */
static void rope_tables(builder *b, const rlx_llm_config *c, int64_t C, rlx_value *cs, rlx_value *sn) {
  int64_t half = c->n_rot / 2;
  float *cv = malloc(sizeof(float) * (size_t)(C * half)), *sv = malloc(sizeof(float) * (size_t)(C * half));
  if (!cv || !sv) {
    if (!b->st) b->st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } else {
    for (int64_t p = 0; p < C; p++)
      for (int64_t i = 0; i < half; i++) {
        double a = (double)p / c->rope_scale * pow(c->rope_base, -2.0 * (double)i / (double)c->n_rot);
        cv[p * half + i] = (float)cos(a);
        sv[p * half + i] = (float)sin(a);
      }
    *cs = constant(b, RLX_DTYPE_F32, 2, (const int64_t[]){C, half}, cv);
    *sn = constant(b, RLX_DTYPE_F32, 2, (const int64_t[]){C, half}, sv);
  }
  free(cv);
  free(sv);
}

/* The additive attention mask [S, C] (0 where key c <= query position, -inf elsewhere: on the CPU
 * attention then skips the cache's unfilled positions, kernel_attention.cpp keys_used) and the
 * cache rows the step writes: positions as int32 ScatterElements indices of the shape of a step's
 * K or V in the cache's layout (packed [1, S, Hkv*D], else [1, Hkv, S, D]). */
static void cache_indices(builder *b, int64_t C, int64_t S, int64_t Hkv, int64_t D, rlx_value positions, rlx_value *rows, rlx_value *bias) {
  int32_t *ks = malloc(sizeof(int32_t) * (size_t)C);
  if (!ks) {
    if (!b->st) b->st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  for (int64_t i = 0; i < C; i++) ks[i] = (int32_t)i;
  rlx_value krow = constant(b, RLX_DTYPE_I32, 2, (const int64_t[]){1, C}, ks);
  free(ks);
  rlx_value pcol = op(b, RLX_OP_RESHAPE, 1, &positions, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, ((const int64_t[]){S, 1}))});
  rlx_value visible = op(b, RLX_OP_LESS_EQUAL, 2, V2(krow, pcol), 0, NULL);
  rlx_value zero = constant(b, RLX_DTYPE_F32, 0, NULL, (const float[]){0});
  rlx_value neg = constant(b, RLX_DTYPE_F32, 0, NULL, (const float[]){-INFINITY});
  *bias = op(b, RLX_OP_WHERE, 3, ((const rlx_value[]){visible, zero, neg}), 0, NULL);
  if (b->packed) {
    rlx_value p3 = op(b, RLX_OP_RESHAPE, 1, &positions, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 3, ((const int64_t[]){1, S, 1}))});
    *rows = op(b, RLX_OP_EXPAND, 1, &p3, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 3, ((const int64_t[]){1, S, Hkv * D}))});
  } else {
    rlx_value p4 = op(b, RLX_OP_RESHAPE, 1, &positions, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 4, ((const int64_t[]){1, 1, S, 1}))});
    *rows = op(b, RLX_OP_EXPAND, 1, &p4, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 4, ((const int64_t[]){1, Hkv, S, D}))});
  }
}

/* [1, S, H*D] -> [1, H, S, D] (heads first: the layout of the caches and of attention on a GPU). */
static rlx_value heads_first(builder *b, rlx_value x, int64_t S, int64_t H, int64_t D) {
  if (b->packed) return x;
  x = op(b, RLX_OP_RESHAPE, 1, &x, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 4, ((const int64_t[]){1, S, H, D}))});
  return op(b, RLX_OP_TRANSPOSE, 1, &x, 1, (rlx_attr[]){RLX_ATTR_IS("perm", 4, ((const int64_t[]){0, 2, 1, 3}))});
}

/* The dims of a layer's K or V cache (see build): [1, C, Hkv*D] packed, else [1, Hkv, C, D]; the rank. */
static int cache_dims(const rlx_llm_config *c, int64_t C, bool packed, int64_t *dims) {
  if (packed) {
    dims[0] = 1, dims[1] = C, dims[2] = c->n_kv_heads * c->head_dim;
    return 3;
  }
  dims[0] = 1, dims[1] = c->n_kv_heads, dims[2] = C, dims[3] = c->head_dim;
  return 4;
}

/* The cached step: inputs tokens int32 [1, S], positions int32 [S], caches k<l>, v<l> float32
 * (cache_dims); outputs logits [1, S, V], next int64 [1, S], then k<l>', v<l>' per layer. On the
 * CPU the caches are positions first, [1, C, Hkv*D]: a step's K and V rows are written as the
 * projections give them and rlx's attention kernel reads q and the caches as packed heads in
 * place (no split or merge of the heads); on a GPU heads first, [1, Hkv, C, D] (MLX's attention
 * takes heads-first operands). */
static rlx_status *build(const rlx_gguf *f, const rlx_llm_config *c, int64_t C, const rlx_llm_options *o, rlx_graph **out) {
  builder b = {.f = f, .packed = o->device != RLX_DEVICE_GPU, .q8 = o->device != RLX_DEVICE_GPU && !o->float_activations};
  TRY(rlx_graph_create(&b.g));
  int64_t S = RLX_DIM_SYMBOL(0), E = c->dim, H = c->n_heads, Hkv = c->n_kv_heads, D = c->head_dim, F = c->ffn_dim, V = c->vocab;
  rlx_value tokens = leaf(&b, false, "tokens", RLX_DTYPE_I32, 2, (const int64_t[]){1, S});
  rlx_value positions = leaf(&b, false, "positions", RLX_DTYPE_I32, 1, (const int64_t[]){S});
  rlx_value h = embed(&b, c, tokens);
  rlx_value cos_t = 0, sin_t = 0, rows = 0, bias = 0;
  rope_tables(&b, c, C, &cos_t, &sin_t);
  rlx_value cs = op(&b, RLX_OP_GATHER, 2, V2(cos_t, positions), 0, NULL); /* [S, n_rot/2] */
  rlx_value sn = op(&b, RLX_OP_GATHER, 2, V2(sin_t, positions), 0, NULL);
  cache_indices(&b, C, S, Hkv, D, positions, &rows, &bias);
  size_t n_out = 4 + 2 * (size_t)c->n_layers;
  rlx_value *outs = calloc(n_out, sizeof *outs);
  if (!outs && !b.st) b.st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  rlx_attr rope_attr[3] = {RLX_ATTR_I("head_dim", D), RLX_ATTR_I("n_rot", c->n_rot), RLX_ATTR_I("interleaved", c->rope_neox ? 0 : 1)};
  rlx_attr heads[3] = {RLX_ATTR_I("num_heads", H), RLX_ATTR_I("num_kv_heads", Hkv), RLX_ATTR_S("mask", "bias")};
  for (int64_t l = 0; l < c->n_layers && !b.st; l++) {
    char nm[96];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%lld.%s.weight", (long long)l, s), nm)
    rlx_value x = rms_norm(&b, c, h, NAME("attn_norm"));
    char wn[3][96], bn3[3][96];
    const char *parts[3] = {"attn_q", "attn_k", "attn_v"};
    for (int p = 0; p < 3; p++) {
      snprintf(wn[p], sizeof wn[p], "blk.%lld.%s.weight", (long long)l, parts[p]);
      snprintf(bn3[p], sizeof bn3[p], "blk.%lld.%s.bias", (long long)l, parts[p]);
    }
    rlx_value qkv[3];
    rlx_value stacked = linear_parts(&b, x, 3, (const char *const[]){wn[0], wn[1], wn[2]}, (const char *const[]){bn3[0], bn3[1], bn3[2]}, E,
                                     (const int64_t[]){H * D, Hkv * D, Hkv * D}, qkv);
    rlx_value q = qkv[0], k = qkv[1], v = qkv[2];
    if (stacked) { /* q's and k's heads side by side: one RoPE for both (half the ops a step runs for it) */
      rlx_value qk = narrow(&b, stacked, 0, (H + Hkv) * D);
      qk = op(&b, RLX_OP_ROPE, 3, ((const rlx_value[]){qk, cs, sn}), 3, rope_attr);
      q = narrow(&b, qk, 0, H * D);
      k = narrow(&b, qk, H * D, Hkv * D);
    } else {
      q = op(&b, RLX_OP_ROPE, 3, ((const rlx_value[]){q, cs, sn}), 3, rope_attr);
      k = op(&b, RLX_OP_ROPE, 3, ((const rlx_value[]){k, cs, sn}), 3, rope_attr);
    }
    rlx_value kv[2] = {heads_first(&b, k, S, Hkv, D), heads_first(&b, v, S, Hkv, D)};
    for (int j = 0; j < 2; j++) {
      char cn[32];
      snprintf(cn, sizeof cn, "%c%lld", j ? 'v' : 'k', (long long)l);
      int64_t dims[4];
      int rank = cache_dims(c, C, b.packed, dims);
      rlx_value cache = leaf(&b, false, cn, RLX_DTYPE_F32, rank, dims);
      kv[j] = op(&b, RLX_OP_SCATTER_ELEMENTS, 3, ((const rlx_value[]){cache, rows, kv[j]}), 1,
                 (rlx_attr[]){RLX_ATTR_I("axis", b.packed ? 1 : 2)});
      outs[CACHE_OUT(l, j)] = kv[j];
    }
    rlx_value a = op(&b, RLX_OP_ATTENTION, 4, ((const rlx_value[]){heads_first(&b, q, S, H, D), kv[0], kv[1], bias}), 3, heads);
    if (!b.packed) {
      a = op(&b, RLX_OP_TRANSPOSE, 1, &a, 1, (rlx_attr[]){RLX_ATTR_IS("perm", 4, ((const int64_t[]){0, 2, 1, 3}))});
      a = op(&b, RLX_OP_RESHAPE, 1, &a, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 3, ((const int64_t[]){1, S, H * D}))});
    }
    h = op(&b, RLX_OP_ADD, 2, V2(h, linear(&b, a, NAME("attn_output"), NULL, H * D, E)), 0, NULL);
    x = rms_norm(&b, c, h, NAME("ffn_norm"));
    snprintf(wn[0], sizeof wn[0], "blk.%lld.ffn_gate.weight", (long long)l);
    snprintf(wn[1], sizeof wn[1], "blk.%lld.ffn_up.weight", (long long)l);
    rlx_value gu[2], act;
    rlx_value gate_up = linear_parts(&b, x, 2, (const char *const[]){wn[0], wn[1]}, (const char *const[]){NULL, NULL}, E,
                                     (const int64_t[]){F, F}, gu);
    if (gate_up) /* one product, gate's columns then up's: one node for silu(gate) * up */
      act = op(&b, RLX_OP_FUSED_SWIGLU, 1, &gate_up, 1, (rlx_attr[]){RLX_ATTR_I("gate_first", 1)});
    else
      act = op(&b, RLX_OP_MUL, 2, V2(op(&b, RLX_OP_SILU, 1, &gu[0], 0, NULL), gu[1]), 0, NULL);
    h = op(&b, RLX_OP_ADD, 2, V2(h, linear(&b, act, NAME("ffn_down"), NULL, F, E)), 0, NULL);
#undef NAME
  }
  h = rms_norm(&b, c, h, "output_norm.weight");
  size_t oi;
  rlx_status *missing = b.st ? NULL : rlx_gguf_find_tensor(f, "output.weight", &oi);
  bool tied = missing != NULL; /* no output.weight: the logits use the embedding table */
  rlx_status_free(missing);
  const char *head = tied ? "token_embd.weight" : "output.weight";
  rlx_value logits = linear(&b, h, head, NULL, E, V);
  bool greedy = o->temperature == 0 || o->top_k == 1; /* temperature 0: Sample's argmax, no sort of the vocabulary */
  rlx_attr sample[4] = {RLX_ATTR_F("temperature", greedy ? 0.0 : o->temperature), RLX_ATTR_I("top_k", greedy ? 1 : o->top_k),
                        RLX_ATTR_F("top_p", o->top_p > 0 ? o->top_p : 1.0), RLX_ATTR_I("seed", (int64_t)o->seed)};
  /* the next token from the last row's logits, a product of its own: a step that does not read
   * the logits back (rlx_llm_step with out_logits NULL) evaluates the head for that row alone,
   * not for every row of a prefill (a quarter of the 110M model's prefill work) */
  rlx_value last = op(&b, RLX_OP_SLICE, 1, &h, 3,
                      (rlx_attr[]){RLX_ATTR_IS("starts", 1, ((const int64_t[]){-1})), RLX_ATTR_IS("ends", 1, ((const int64_t[]){INT64_MAX})),
                                   RLX_ATTR_IS("axes", 1, ((const int64_t[]){1}))});
  rlx_value last_logits = linear(&b, last, head, NULL, E, V);
  rlx_value next = op(&b, RLX_OP_SAMPLE, 1, &last_logits, 4, sample); /* int64 [1, 1] */
  if (!b.st) {
    outs[0] = logits, outs[1] = next;
    outs[n_out - 2] = op(&b, RLX_OP_CAST, 1, &next, 1, (rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_I32)});
    /* the next step's position, kept on the device: a GPU reads no host-written array in a step */
    rlx_value lastp = op(&b, RLX_OP_SLICE, 1, &positions, 3,
                         (rlx_attr[]){RLX_ATTR_IS("starts", 1, ((const int64_t[]){-1})),
                                      RLX_ATTR_IS("ends", 1, ((const int64_t[]){INT64_MAX})), RLX_ATTR_IS("axes", 1, ((const int64_t[]){0}))});
    rlx_value one = constant(&b, RLX_DTYPE_I32, 0, NULL, (const int32_t[]){1});
    outs[n_out - 1] = op(&b, RLX_OP_ADD, 2, V2(lastp, one), 0, NULL);
    b.st = rlx_graph_set_outputs(b.g, n_out, outs);
  }
  for (size_t i = 0; i < n_out && !b.st; i++) {
    char nm[32];
    if (i >= 2) snprintf(nm, sizeof nm, "%c%zu'", (i - 2) % 2 ? 'v' : 'k', (i - 2) / 2);
    b.st = rlx_graph_set_output_name(b.g, i, i == 0 ? "logits" : i == 1 ? "next" : i == n_out - 2 ? "next_tokens" : i == n_out - 1 ? "next_positions" : nm);
  }
  free(outs);
  if (b.st) {
    rlx_graph_free(b.g);
    return b.st;
  }
  *out = b.g;
  return NULL;
}

/* ---- params ---- */

/* Copies the bytes of the parts of a stacked name (tensor_info checked them) one after another. */
static rlx_status *stack_parts(const rlx_gguf *f, const char *name, uint8_t *dst) {
  char part[96];
  for (const char *p = name;; p++) {
    size_t n = strcspn(p, "+"), i;
    rlx_gguf_tensor t;
    memcpy(part, p, n);
    part[n] = 0;
    TRY(rlx_gguf_find_tensor(f, part, &i));
    TRY(rlx_gguf_tensor_info(f, i, &t));
    memcpy(dst, t.data, t.nbytes);
    dst += t.nbytes;
    p += n;
    if (!*p) return NULL;
  }
}

/* Uploads param `name` from the file: packed bytes, F32 and F16 matrices as they are, F16 vectors
 * widened; stacked parts (tensor_info) copied into one tensor. */
static rlx_status *upload(rlx_executable *ex, const rlx_gguf *f, const char *name) {
  rlx_gguf_tensor t;
  TRY(tensor_info(f, name, &t));
  int64_t n = t.dims[0] * (t.n_dims > 1 ? t.dims[1] : 1);
  int64_t dims[2] = {t.n_dims > 1 ? t.dims[1] : t.dims[0], t.dims[0]};
  int rank = t.n_dims > 1 ? 2 : 1;
  uint8_t *stacked = NULL;
  if (strchr(name, '+')) {
    if (!(stacked = malloc(t.nbytes))) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    rlx_status *st = stack_parts(f, name, stacked);
    if (st) {
      free(stacked);
      return st;
    }
    t.data = stacked;
  }
  rlx_tensor *v = NULL;
  rlx_status *st;
  if (t.type == RLX_GGML_F32 || (t.type == RLX_GGML_F16 && rank == 2)) {
    /* borrowed from the read-only mapping (or the stacked copy): set_param only reads it */
    st = rlx_tensor_wrap(t.type == RLX_GGML_F32 ? RLX_DTYPE_F32 : RLX_DTYPE_F16, rank, dims, (void *)(uintptr_t)t.data, t.nbytes, &v);
  } else if (t.type == RLX_GGML_F16) {
    st = rlx_tensor_create(RLX_DTYPE_F32, rank, dims, NULL, 0, &v);
    if (!st) {
      float *d = rlx_tensor_data(v);
      const uint8_t *s = t.data;
      for (int64_t j = 0; j < n; j++) d[j] = rlx_f16_to_f32((uint16_t)(s[2 * j] | (s[2 * j + 1] << 8)));
    }
  } else {
    int64_t rows = dims[0];
    st = rlx_tensor_wrap(RLX_DTYPE_U8, 2, (const int64_t[]){rows, (int64_t)(t.nbytes / (size_t)rows)}, (void *)(uintptr_t)t.data, t.nbytes, &v);
  }
  if (!st) st = rlx_executable_set_param(ex, name, v);
  rlx_tensor_free(v);
  free(stacked);
  return st;
}

/* ---- the model ---- */

/* Binds every layer's K and V cache to zeros. */
static rlx_status *bind_caches(rlx_llm *m) {
  int64_t dims[4];
  int rank = cache_dims(&m->cfg, m->capacity, m->packed, dims);
  rlx_tensor *zeros = NULL;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, rank, dims, NULL, 0, &zeros);
  for (size_t i = CACHE_OUT(0, 0); i < NEXT_TOKENS_OUT(m) && !st; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "%c%zu", (i - 2) % 2 ? 'v' : 'k', (i - 2) / 2);
    st = rlx_executable_bind_device_handle(m->ex, nm, zeros);
  }
  rlx_tensor_free(zeros);
  return st;
}

rlx_status *rlx_llm_open(const char *path, const rlx_llm_options *options, rlx_llm **out) {
  if (!path || !out) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_llm_open: NULL %s", path ? "out" : "path");
  rlx_llm_options o = options ? *options : (rlx_llm_options){0};
  if (o.capacity < 0 || !(o.temperature >= 0) || !isfinite(o.temperature) || o.top_k < 0 || !(o.top_p >= 0 && o.top_p <= 1))
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT,
                           "rlx_llm_open: options capacity %lld, temperature %g, top_k %lld, top_p %g (expected capacity >= 0, finite "
                           "temperature >= 0, top_k >= 0, top_p in [0, 1])",
                           (long long)o.capacity, o.temperature, (long long)o.top_k, o.top_p);
  if (o.capacity > INT32_MAX) /* positions are int32: a larger one would wrap (the step checks no index) */
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_llm_open: capacity %lld exceeds the int32 positions' range", (long long)o.capacity);
  if (o.mode == RLX_MODE_DEFAULT) o.mode = RLX_MODE_COMPILED;
  rlx_gguf *f = NULL;
  TRY(rlx_gguf_open(path, &f));
  rlx_llm *m = calloc(1, sizeof *m);
  rlx_graph *g = NULL;
  rlx_status *st = m ? read_config(f, &m->cfg) : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!st) {
    m->capacity = o.capacity ? o.capacity : (m->cfg.context < 2048 ? m->cfg.context : 2048);
    m->n_outputs = 4 + 2 * (size_t)m->cfg.n_layers;
    st = build(f, &m->cfg, m->capacity, &o, &g);
  }
  if (!st) st = rlx_executable_create(g, o.device, o.mode, &m->ex);
  for (size_t i = 0; !st && i < rlx_executable_num_params(m->ex); i++) st = upload(m->ex, f, rlx_executable_param_name(m->ex, i));
  if (!st) {
    m->packed = o.device != RLX_DEVICE_GPU;
    st = bind_caches(m);
  }
  for (size_t i = CACHE_OUT(0, 0); i < NEXT_TOKENS_OUT(m) && !st; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "%c%zu", (i - 2) % 2 ? 'v' : 'k', (i - 2) / 2);
    st = rlx_executable_set_handle_feed(m->ex, nm, i);
    if (!st) st = rlx_executable_set_handle_donation(m->ex, nm, true); /* each step writes its rows in place */
  }
  /* rlx_llm_generate: a step's token comes from the step before on the device, and the next step
   * is committed before that one is read back */
  if (!st) st = rlx_executable_set_handle_feed(m->ex, "tokens", NEXT_TOKENS_OUT(m));
  if (!st) st = rlx_executable_set_handle_feed(m->ex, "positions", NEXT_POSITIONS_OUT(m));
  if (!st) st = rlx_executable_set_max_pending(m->ex, 2);
  /* Every index of the graph is a token or a position (the embedding's and rotary tables' rows,
   * the cache rows written), and rlx_llm_step and rlx_llm_generate check both on the host
   * (check_tokens: tokens in the vocabulary, positions below the capacity); the tokens fed back on
   * the device come from Sample, in [0, vocab). So a step builds no index check vector (on a GPU
   * 7 int64 copies and a read-back per step) */
  if (!st) st = rlx_executable_set_index_checks(m->ex, false);
  rlx_graph_free(g); /* the executable keeps its reference */
  rlx_gguf_close(f);
  if (st) {
    rlx_llm_close(m);
    return st;
  }
  *out = m;
  return NULL;
}

void rlx_llm_close(rlx_llm *m) {
  if (!m) return;
  rlx_executable_free(m->ex);
  free(m);
}

const rlx_llm_config *rlx_llm_get_config(const rlx_llm *m) { return &m->cfg; }
int64_t rlx_llm_capacity(const rlx_llm *m) { return m->capacity; }
int64_t rlx_llm_position(const rlx_llm *m) { return m->pos; }
void rlx_llm_reset(rlx_llm *m) { m->pos = 0; }

/* The checks of rlx_llm_step and rlx_llm_generate (`what`): n steps or tokens from the position,
 * tokens[0..n_tokens) in the vocabulary. */
static rlx_status *check_tokens(const rlx_llm *m, const char *what, const int32_t *tokens, int64_t n_tokens, int64_t n) {
  if (n > m->capacity - m->pos)
    return rlx_status_make(RLX_STATUS_OUT_OF_RANGE, "%s: %lld tokens at position %lld exceed the cache capacity %lld", what, (long long)n,
                           (long long)m->pos, (long long)m->capacity);
  for (int64_t i = 0; i < n_tokens; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab)
      return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "%s: token %lld is %d (vocabulary [0, %lld))", what, (long long)i, tokens[i],
                             (long long)m->cfg.vocab);
  return NULL;
}

/* After a failed run: its donated caches may be gone, so the model starts over. */
static void start_over(rlx_llm *m) {
  rlx_status_free(bind_caches(m));
  m->pos = 0;
}

rlx_status *rlx_llm_step(rlx_llm *m, const int32_t *tokens, int64_t n, float *out_logits, int32_t *out_next) {
  if (!m || !tokens || n < 1) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_llm_step: NULL model or tokens, or n %lld < 1", (long long)n);
  TRY(check_tokens(m, "rlx_llm_step", tokens, n, n));
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
  rlx_tensor **outs = calloc(m->n_outputs, sizeof *outs);
  rlx_tensor *tt = NULL, *tp = NULL;
  rlx_status *st = pos && outs ? NULL : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t i = 0; !st && i < n; i++) pos[i] = (int32_t)(m->pos + i);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 2, (const int64_t[]){1, n}, tokens, sizeof(int32_t) * (size_t)n, &tt);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 1, (const int64_t[]){n}, pos, sizeof(int32_t) * (size_t)n, &tp);
  if (!st) st = rlx_executable_set_output_wanted(m->ex, 0, out_logits != NULL); /* else the logits are not computed */
  if (!st)
    st = rlx_executable_run(m->ex, 2, (const char *const[]){"tokens", "positions"}, (rlx_tensor *const[]){tt, tp}, m->n_outputs, outs);
  if (!st) {
    if (out_logits) memcpy(out_logits, rlx_tensor_cdata(outs[0]), sizeof(float) * (size_t)(n * m->cfg.vocab));
    if (out_next) *out_next = (int32_t)((const int64_t *)rlx_tensor_cdata(outs[1]))[0];
    m->pos += n;
  } else if (tt && tp) {
    start_over(m);
  }
  for (size_t k = 0; outs && k < m->n_outputs; k++) rlx_tensor_free(outs[k]);
  free(outs);
  free(pos);
  rlx_tensor_free(tt);
  rlx_tensor_free(tp);
  return st;
}

/* Commits the step at position `pos` on `token`. */
static rlx_status *commit_step(rlx_llm *m, const int32_t *token, int64_t pos) {
  int32_t p = (int32_t)pos;
  rlx_tensor *tt = NULL, *tp = NULL;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_I32, 2, (const int64_t[]){1, 1}, token, sizeof *token, &tt);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 1, (const int64_t[]){1}, &p, sizeof p, &tp);
  if (!st) st = rlx_executable_commit(m->ex, 2, (const char *const[]){"tokens", "positions"}, (rlx_tensor *const[]){tt, tp});
  rlx_tensor_free(tt);
  rlx_tensor_free(tp);
  return st;
}

/* Waits for the oldest committed step and reads the token it chose. */
static rlx_status *sync_step(rlx_llm *m, int32_t *out) {
  rlx_tensor **outs = calloc(m->n_outputs, sizeof *outs);
  if (!outs) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  rlx_status *st = rlx_executable_sync(m->ex, m->n_outputs, outs);
  if (!st) *out = (int32_t)((const int64_t *)rlx_tensor_cdata(outs[1]))[0];
  for (size_t k = 0; k < m->n_outputs; k++) rlx_tensor_free(outs[k]);
  free(outs);
  return st;
}

rlx_status *rlx_llm_generate(rlx_llm *m, int32_t token, int64_t n, bool (*on_token)(int32_t id, void *user), void *user, int64_t *n_done) {
  if (!m || !on_token || n < 1)
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rlx_llm_generate: NULL model or on_token, or n %lld < 1", (long long)n);
  TRY(check_tokens(m, "rlx_llm_generate", &token, 1, n));
  int64_t pos0 = m->pos, done = 0;
  rlx_status *st = rlx_executable_set_output_wanted(m->ex, 0, false); /* no logits */
  if (!st) st = commit_step(m, &token, pos0);
  for (int64_t j = 0; !st && j < n; j++) {
    /* step j + 1 queued behind step j, on the tokens and positions inputs' device handles: the
     * token step j chose and its position + 1 (next_tokens' and next_positions' feeds) */
    if (j + 1 < n) st = rlx_executable_commit(m->ex, 0, NULL, NULL);
    int32_t id = 0;
    if (!st) st = sync_step(m, &id); /* step j's token */
    if (st) break;
    m->pos = pos0 + j + 1, done++;
    if (!on_token(id, user)) break;
  }
  /* a step committed past the stop (its cache row is written again by the next step) or an error */
  rlx_status *drop = rlx_executable_pending(m->ex) ? rlx_executable_sync(m->ex, 0, NULL) : NULL;
  if (!st) st = drop;
  else rlx_status_free(drop);
  if (st) {
    start_over(m);
    return st;
  }
  if (n_done) *n_done = done;
  return NULL;
}
