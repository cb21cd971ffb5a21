/* decoder.c: the decoder-only transformer of decoder.h: graph builder, weights, generation loop. */
#include "decoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(expr)                 \
  do {                            \
    rlx_status *try_st_ = (expr); \
    if (try_st_) return try_st_;  \
  } while (0)

decoder_config decoder_small(void) {
  return (decoder_config){.vocab = 64, .dim = 48, .n_layers = 2, .n_heads = 6, .n_kv_heads = 2, .head_dim = 8,
                          .ffn_dim = 96, .capacity = 48, .rms_eps = 1e-5, .rope_theta = 10000.0};
}

/* ---- graph building with a sticky status ---- */
typedef struct builder {
  rlx_graph *g;
  rlx_status *st;
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

static rlx_value matmul(builder *b, rlx_value x, rlx_value w) { return op(b, RLX_OP_MATMUL, 2, V2(x, w), 0, NULL); }

static rlx_value rms_norm(builder *b, const decoder_config *cfg, rlx_value x, const char *gain) {
  rlx_value g = leaf(b, true, gain, RLX_DTYPE_F32, 1, (const int64_t[]){cfg->dim});
  return op(b, RLX_OP_RMS_NORM, 2, V2(x, g), 1, (rlx_attr[]){RLX_ATTR_F("epsilon", cfg->rms_eps)});
}

static rlx_value proj(builder *b, rlx_value x, const char *name, int64_t k, int64_t n) {
  return matmul(b, x, leaf(b, true, name, RLX_DTYPE_F32, 2, (const int64_t[]){k, n}));
}

/* Rotary tables cos/sin [capacity, head_dim/2]: angle(p, i) = p * theta^(-2i/head_dim). */
static void rope_tables(builder *b, const decoder_config *cfg, rlx_value *cs, rlx_value *sn) {
  int64_t C = cfg->capacity, half = cfg->head_dim / 2;
  float *c = malloc(sizeof(float) * (size_t)(C * half)), *s = malloc(sizeof(float) * (size_t)(C * half));
  if (!c || !s) {
    if (!b->st) b->st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } else {
    for (int64_t p = 0; p < C; p++)
      for (int64_t i = 0; i < half; i++) {
        double a = (double)p * pow(cfg->rope_theta, -2.0 * (double)i / (double)cfg->head_dim);
        c[p * half + i] = (float)cos(a);
        s[p * half + i] = (float)sin(a);
      }
    *cs = constant(b, RLX_DTYPE_F32, 2, (const int64_t[]){C, half}, c);
    *sn = constant(b, RLX_DTYPE_F32, 2, (const int64_t[]){C, half}, s);
  }
  free(c);
  free(s);
}

/* The cache placement P [C, S] (float) and the additive mask [S, C] of the cached step. */
static void cache_placement(builder *b, const decoder_config *cfg, rlx_value positions, rlx_value *place, rlx_value *keep,
                            rlx_value *bias) {
  int64_t C = cfg->capacity, S = RLX_DIM_SYMBOL(0);
  int32_t *ks = malloc(sizeof(int32_t) * (size_t)C);
  if (!ks) {
    if (!b->st) b->st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  for (int64_t i = 0; i < C; i++) ks[i] = (int32_t)i;
  rlx_value kcol = constant(b, RLX_DTYPE_I32, 2, (const int64_t[]){C, 1}, ks);
  rlx_value krow = constant(b, RLX_DTYPE_I32, 2, (const int64_t[]){1, C}, ks);
  free(ks);
  rlx_value prow = op(b, RLX_OP_RESHAPE, 1, &positions, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, ((const int64_t[]){1, S}))});
  rlx_value pcol = op(b, RLX_OP_RESHAPE, 1, &positions, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, ((const int64_t[]){S, 1}))});
  rlx_value hit = op(b, RLX_OP_EQUAL, 2, V2(kcol, prow), 0, NULL);
  *place = op(b, RLX_OP_CAST, 1, &hit, 1, (rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_F32)});
  rlx_value taken = op(b, RLX_OP_REDUCE, 1, place, 3,
                       (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_IS("axes", 1, ((const int64_t[]){1})), RLX_ATTR_I("keepdims", 1)});
  rlx_value one = constant(b, RLX_DTYPE_F32, 0, NULL, (const float[]){1});
  *keep = op(b, RLX_OP_SUB, 2, V2(one, taken), 0, NULL);
  rlx_value visible = op(b, RLX_OP_LESS_EQUAL, 2, V2(krow, pcol), 0, NULL);
  rlx_value zero = constant(b, RLX_DTYPE_F32, 0, NULL, (const float[]){0});
  rlx_value neg = constant(b, RLX_DTYPE_F32, 0, NULL, (const float[]){-1e9f});
  *bias = op(b, RLX_OP_WHERE, 3, ((const rlx_value[]){visible, zero, neg}), 0, NULL);
}

/* Tensor parallelism: the sum of the ranks' partial results (row-parallel projections). */
static rlx_value all_reduce(builder *b, const decoder_config *cfg, rlx_value x) {
  if (cfg->tp <= 1) return x;
  return op(b, RLX_OP_ALL_REDUCE, 1, &x, 2, (rlx_attr[]){RLX_ATTR_S("kind", "sum"), RLX_ATTR_I("group_size", cfg->tp)});
}

static int64_t ranks(const decoder_config *cfg) { return cfg->tp > 1 ? cfg->tp : 1; }

rlx_status *decoder_build(const decoder_config *cfg, bool cached, rlx_graph **out) {
  int64_t N = ranks(cfg);
  if (cfg->n_heads % N || cfg->n_kv_heads % N || cfg->ffn_dim % N || cfg->vocab % N)
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "tp %lld must divide n_heads, n_kv_heads, ffn_dim and vocab", (long long)N);
  builder b = {0};
  b.st = rlx_graph_create(&b.g);
  if (b.st) return b.st;
  /* this rank's share of the heads, hidden units and vocabulary (all of them without tp) */
  int64_t S = RLX_DIM_SYMBOL(0), E = cfg->dim, H = cfg->n_heads / N, Hkv = cfg->n_kv_heads / N, D = cfg->head_dim;
  int64_t F = cfg->ffn_dim / N, V = cfg->vocab / N;
  rlx_value tokens = leaf(&b, false, "tokens", RLX_DTYPE_I32, 2, (const int64_t[]){1, S});
  rlx_value positions = leaf(&b, false, "positions", RLX_DTYPE_I32, 1, (const int64_t[]){S});
  rlx_value embed = leaf(&b, true, "embed", RLX_DTYPE_F32, 2, (const int64_t[]){cfg->vocab, E});
  rlx_value h = op(&b, RLX_OP_GATHER, 2, V2(embed, tokens), 0, NULL); /* [1, S, E] */
  rlx_value cos_t = 0, sin_t = 0, place = 0, keep = 0, bias = 0;
  rope_tables(&b, cfg, &cos_t, &sin_t);
  rlx_value cs = op(&b, RLX_OP_GATHER, 2, V2(cos_t, positions), 0, NULL); /* [S, D/2] */
  rlx_value sn = op(&b, RLX_OP_GATHER, 2, V2(sin_t, positions), 0, NULL);
  if (cached) cache_placement(&b, cfg, positions, &place, &keep, &bias);
  rlx_value outs[2 + 2 * 64];
  size_t n_out = 2;
  rlx_attr rope_attr = RLX_ATTR_I("head_dim", D);
  for (int64_t l = 0; l < cfg->n_layers && l < 64; l++) {
    char nm[64];
#define NAME(s) (snprintf(nm, sizeof nm, "l%lld.%s", (long long)l, s), nm)
    rlx_value x = rms_norm(&b, cfg, h, NAME("attn_norm"));
    rlx_value q = proj(&b, x, NAME("wq"), E, H * D), k = proj(&b, x, NAME("wk"), E, Hkv * D), v = proj(&b, x, NAME("wv"), E, Hkv * D);
    q = op(&b, RLX_OP_ROPE, 3, ((const rlx_value[]){q, cs, sn}), 1, &rope_attr);
    k = op(&b, RLX_OP_ROPE, 3, ((const rlx_value[]){k, cs, sn}), 1, &rope_attr);
    rlx_attr heads[3] = {RLX_ATTR_I("num_heads", H), RLX_ATTR_I("num_kv_heads", Hkv), RLX_ATTR_S("mask", cached ? "bias" : "causal")};
    rlx_value a;
    if (cached) {
      rlx_value kv[2] = {k, v};
      for (int j = 0; j < 2; j++) {
        char cn[32];
        snprintf(cn, sizeof cn, "%c%lld", j ? 'v' : 'k', (long long)l);
        rlx_value cache = leaf(&b, false, cn, RLX_DTYPE_F32, 3, (const int64_t[]){1, cfg->capacity, Hkv * D});
        rlx_value kept = op(&b, RLX_OP_MUL, 2, V2(cache, keep), 0, NULL);
        kv[j] = op(&b, RLX_OP_ADD, 2, V2(kept, matmul(&b, place, kv[j])), 0, NULL); /* [1, C, Hkv*D] */
        outs[n_out++] = kv[j];
      }
      a = op(&b, RLX_OP_ATTENTION, 4, ((const rlx_value[]){q, kv[0], kv[1], bias}), 3, heads);
    } else {
      a = op(&b, RLX_OP_ATTENTION, 3, ((const rlx_value[]){q, k, v}), 3, heads);
    }
    h = op(&b, RLX_OP_ADD, 2, V2(h, all_reduce(&b, cfg, proj(&b, a, NAME("wo"), H * D, E))), 0, NULL);
    /* SwiGLU MLP (FusedSwiGLU can replace the next three ops) */
    x = rms_norm(&b, cfg, h, NAME("ffn_norm"));
    rlx_value gate = proj(&b, x, NAME("w_gate"), E, F), up = proj(&b, x, NAME("w_up"), E, F);
    rlx_value act = op(&b, RLX_OP_MUL, 2, V2(op(&b, RLX_OP_SILU, 1, &gate, 0, NULL), up), 0, NULL);
    h = op(&b, RLX_OP_ADD, 2, V2(h, all_reduce(&b, cfg, proj(&b, act, NAME("w_down"), F, E))), 0, NULL);
#undef NAME
  }
  rlx_value logits = proj(&b, rms_norm(&b, cfg, h, "final_norm"), "lm_head", E, V);
  if (N > 1) /* every rank gets the whole vocabulary's logits */
    logits = op(&b, RLX_OP_ALL_GATHER, 1, &logits, 2, (rlx_attr[]){RLX_ATTR_I("axis", 2), RLX_ATTR_I("group_size", N)});
  /* the next token: Sample keeping the top 1 logit, i.e. greedy (raise top_k or temperature for
   * sampling; the seed makes draws reproducible) */
  rlx_value next = op(&b, RLX_OP_SAMPLE, 1, &logits, 2, (rlx_attr[]){RLX_ATTR_I("top_k", 1), RLX_ATTR_I("seed", 1)});
  outs[0] = logits;
  outs[1] = next;
  if (!b.st) b.st = rlx_graph_set_outputs(b.g, n_out, outs);
  const char *fixed[2] = {"logits", "next"};
  for (size_t i = 0; i < n_out && !b.st; i++) {
    char nm[32];
    if (i >= 2) snprintf(nm, sizeof nm, "%c%zu'", (i - 2) % 2 ? 'v' : 'k', (i - 2) / 2);
    b.st = rlx_graph_set_output_name(b.g, i, i < 2 ? fixed[i] : nm);
  }
  if (b.st) {
    rlx_graph_free(b.g);
    return b.st;
  }
  *out = b.g;
  return NULL;
}

/* ---- weights ---- */

static float uniform(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static rlx_status *add_weight(decoder_weights *w, const char *name, int rank, const int64_t *dims, float scale, float offset, uint64_t *rng) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  rlx_tensor *t;
  TRY(rlx_tensor_create(RLX_DTYPE_F32, rank, dims, NULL, 0, &t));
  float *d = rlx_tensor_data(t);
  for (int64_t i = 0; i < n; i++) d[i] = offset + scale * uniform(rng);
  char **nn = realloc(w->names, (w->n + 1) * sizeof *nn);
  if (nn) w->names = nn;
  rlx_tensor **vv = realloc(w->values, (w->n + 1) * sizeof *vv);
  if (vv) w->values = vv;
  char *copy = malloc(strlen(name) + 1);
  if (!nn || !vv || !copy) {
    free(copy);
    rlx_tensor_free(t);
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  strcpy(copy, name);
  w->names[w->n] = copy;
  w->values[w->n++] = t;
  return NULL;
}

rlx_status *decoder_weights_make(const decoder_config *cfg, uint64_t seed, decoder_weights *out) {
  decoder_weights w = {0};
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
  int64_t E = cfg->dim, HD = cfg->n_heads * cfg->head_dim, KD = cfg->n_kv_heads * cfg->head_dim, F = cfg->ffn_dim;
  float se = 1.0f / sqrtf((float)E), sh = 1.0f / sqrtf((float)HD), sf = 1.0f / sqrtf((float)F);
  rlx_status *st = add_weight(&w, "embed", 2, (const int64_t[]){cfg->vocab, E}, 1.0f, 0, &rng);
  for (int64_t l = 0; l < cfg->n_layers && !st; l++) {
    char nm[64];
#define W(s, r, d, sc, off) \
  if (!st) (snprintf(nm, sizeof nm, "l%lld.%s", (long long)l, s), st = add_weight(&w, nm, r, d, sc, off, &rng))
    W("attn_norm", 1, ((const int64_t[]){E}), 0.1f, 1.0f);
    W("wq", 2, ((const int64_t[]){E, HD}), se, 0);
    W("wk", 2, ((const int64_t[]){E, KD}), se, 0);
    W("wv", 2, ((const int64_t[]){E, KD}), se, 0);
    W("wo", 2, ((const int64_t[]){HD, E}), sh, 0);
    W("ffn_norm", 1, ((const int64_t[]){E}), 0.1f, 1.0f);
    W("w_gate", 2, ((const int64_t[]){E, F}), se, 0);
    W("w_up", 2, ((const int64_t[]){E, F}), se, 0);
    W("w_down", 2, ((const int64_t[]){F, E}), sf, 0);
#undef W
  }
  if (!st) st = add_weight(&w, "final_norm", 1, (const int64_t[]){E}, 0.1f, 1.0f, &rng);
  if (!st) st = add_weight(&w, "lm_head", 2, (const int64_t[]){E, cfg->vocab}, se * 4, 0, &rng);
  if (st) {
    decoder_weights_free(&w);
    return st;
  }
  *out = w;
  return NULL;
}

void decoder_weights_free(decoder_weights *w) {
  for (size_t i = 0; i < w->n; i++) {
    free(w->names[i]);
    rlx_tensor_free(w->values[i]);
  }
  free(w->names);
  free(w->values);
  *w = (decoder_weights){0};
}

/* Copies rows [r0, r0 + nr) and columns [c0, c0 + nc) of the 1-D or 2-D float32 tensor t. */
static rlx_status *cut(const rlx_tensor *t, int64_t r0, int64_t nr, int64_t c0, int64_t nc, rlx_tensor **out) {
  int64_t cols = rlx_tensor_rank(t) == 2 ? rlx_tensor_dims(t)[1] : rlx_tensor_dims(t)[0];
  TRY(rlx_tensor_create(RLX_DTYPE_F32, rlx_tensor_rank(t), rlx_tensor_rank(t) == 2 ? (const int64_t[]){nr, nc} : (const int64_t[]){nc}, NULL,
                        0, out));
  const float *src = rlx_tensor_cdata(t);
  float *dst = rlx_tensor_data(*out);
  for (int64_t r = 0; r < nr; r++) memcpy(dst + r * nc, src + (r0 + r) * cols + c0, sizeof(float) * (size_t)nc);
  return NULL;
}

rlx_status *decoder_weights_shard(const decoder_config *cfg, const decoder_weights *full, int64_t rank, decoder_weights *out) {
  int64_t N = ranks(cfg);
  if (rank < 0 || rank >= N) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "rank %lld outside [0, %lld)", (long long)rank, (long long)N);
  decoder_weights w = {.names = calloc(full->n, sizeof(char *)), .values = calloc(full->n, sizeof(rlx_tensor *))};
  rlx_status *st = w.names && w.values ? NULL : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < full->n && !st; i++) {
    const char *nm = full->names[i], *dot = strrchr(nm, '.');
    const char *base = dot ? dot + 1 : nm;
    const rlx_tensor *t = full->values[i];
    int64_t rows = rlx_tensor_rank(t) == 2 ? rlx_tensor_dims(t)[0] : 1, cols = rlx_tensor_dims(t)[rlx_tensor_rank(t) - 1];
    bool by_col = !strcmp(base, "wq") || !strcmp(base, "wk") || !strcmp(base, "wv") || !strcmp(base, "w_gate") || !strcmp(base, "w_up") ||
                  !strcmp(base, "lm_head");
    bool by_row = !strcmp(base, "wo") || !strcmp(base, "w_down");
    if (by_col) st = cut(t, 0, rows, rank * (cols / N), cols / N, &w.values[i]);
    else if (by_row) st = cut(t, rank * (rows / N), rows / N, 0, cols, &w.values[i]);
    else st = rlx_tensor_copy(t, &w.values[i]);
    w.names[i] = st ? NULL : malloc(strlen(nm) + 1);
    if (!st && !w.names[i]) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    if (!st) strcpy(w.names[i], nm);
    w.n = i + 1;
  }
  if (st) {
    decoder_weights_free(&w);
    return st;
  }
  *out = w;
  return NULL;
}

const rlx_tensor *decoder_weight(const decoder_weights *w, const char *name) {
  for (size_t i = 0; i < w->n; i++)
    if (strcmp(w->names[i], name) == 0) return w->values[i];
  return NULL;
}

rlx_status *decoder_set_params(rlx_executable *ex, const decoder_weights *w) {
  for (size_t i = 0; i < rlx_executable_num_params(ex); i++) {
    const char *name = rlx_executable_param_name(ex, i);
    const rlx_tensor *t = decoder_weight(w, name);
    if (!t) return rlx_status_make(RLX_STATUS_NOT_FOUND, "no weight for param '%s'", name);
    TRY(rlx_executable_set_param(ex, name, t));
  }
  return NULL;
}

/* ---- running ---- */

/* Runs tokens[0..n) at positions pos0.. through ex; outputs[0] logits, outputs[1] next ids. */
static rlx_status *step(rlx_executable *ex, const int32_t *tokens, int64_t n, int32_t pos0, rlx_tensor **outputs, size_t n_outputs) {
  int32_t *pos = malloc(sizeof(int32_t) * (size_t)n);
  if (!pos) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t i = 0; i < n; i++) pos[i] = pos0 + (int32_t)i;
  rlx_tensor *tt = NULL, *tp = NULL;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_I32, 2, (const int64_t[]){1, n}, tokens, sizeof(int32_t) * (size_t)n, &tt);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_I32, 1, (const int64_t[]){n}, pos, sizeof(int32_t) * (size_t)n, &tp);
  if (!st)
    st = rlx_executable_run(ex, 2, (const char *const[]){"tokens", "positions"}, (rlx_tensor *const[]){tt, tp}, n_outputs, outputs);
  rlx_tensor_free(tt);
  rlx_tensor_free(tp);
  free(pos);
  return st;
}

/* Copies the last position's logits and id from a step's outputs. */
static void last_position(const decoder_config *cfg, rlx_tensor *const *outputs, float *logits, int32_t *next) {
  int64_t n = rlx_tensor_dims(outputs[1])[1];
  if (logits) memcpy(logits, (const float *)rlx_tensor_cdata(outputs[0]) + (n - 1) * cfg->vocab, sizeof(float) * (size_t)cfg->vocab);
  *next = (int32_t)((const int64_t *)rlx_tensor_cdata(outputs[1]))[n - 1];
}

rlx_status *decoder_generate(rlx_executable *ex, const decoder_config *cfg, const int32_t *prompt, int64_t prompt_len,
                             int64_t n_new, int32_t *tokens_out, float *logits_out) {
  if (prompt_len < 1 || n_new < 1 || prompt_len + n_new - 1 > cfg->capacity)
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "prompt %lld + %lld new tokens do not fit the cache capacity %lld",
                           (long long)prompt_len, (long long)n_new, (long long)cfg->capacity);
  size_t n_out = 2 + 2 * (size_t)cfg->n_layers;
  rlx_tensor *zeros = NULL;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, 3, (const int64_t[]){1, cfg->capacity, cfg->n_kv_heads / ranks(cfg) * cfg->head_dim},
                                     NULL, 0, &zeros);
  for (size_t i = 2; i < n_out && !st; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "%c%zu", (i - 2) % 2 ? 'v' : 'k', (i - 2) / 2);
    st = rlx_executable_bind_device_handle(ex, nm, zeros);
    if (!st) st = rlx_executable_set_handle_feed(ex, nm, i);
    if (!st) st = rlx_executable_set_output_readback(ex, i, false);
  }
  rlx_tensor_free(zeros);
  rlx_tensor **outs = calloc(n_out, sizeof *outs);
  if (!st && !outs) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  memcpy(tokens_out, prompt, sizeof(int32_t) * (size_t)prompt_len);
  int64_t len = prompt_len;
  for (int64_t i = 0; i < n_new && !st; i++) {
    /* the prompt first, then one token at a time */
    const int32_t *in = i == 0 ? prompt : &tokens_out[len - 1];
    int64_t n = i == 0 ? prompt_len : 1;
    st = step(ex, in, n, (int32_t)(len - n), outs, n_out);
    if (!st) last_position(cfg, outs, logits_out ? logits_out + i * cfg->vocab : NULL, &tokens_out[len++]);
    for (size_t k = 0; k < n_out; k++) rlx_tensor_free(outs[k]), outs[k] = NULL;
  }
  free(outs);
  return st;
}

rlx_status *decoder_recompute_last(rlx_executable *ex, const decoder_config *cfg, const int32_t *tokens, int64_t n,
                                   float *logits_out, int32_t *next_out) {
  rlx_tensor *outs[2] = {0};
  TRY(step(ex, tokens, n, 0, outs, 2));
  last_position(cfg, outs, logits_out, next_out);
  rlx_tensor_free(outs[0]);
  rlx_tensor_free(outs[1]);
  return NULL;
}
