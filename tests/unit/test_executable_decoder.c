/* Text generation with a KV cache (examples/decoder.h): prefill then token-by-token decode in
 * compiled mode, caches in device-resident handles fed from the step's outputs. Oracles: a plain
 * C forward pass of the same transformer written here (independent of rlx and MLX), and the
 * full-recompute graph without a cache on the same weights. */
#include "../../examples/decoder.h"
#include "exec_test_util.h"

/* ---- the reference transformer in plain C (double accumulation) ---- */

static const float *W_(const decoder_weights *w, const char *name) {
  const rlx_tensor *t = decoder_weight(w, name);
  assert_non_null(t);
  return rlx_tensor_cdata(t);
}

static const float *layer_w(const decoder_weights *w, int64_t l, const char *s) {
  char nm[64];
  snprintf(nm, sizeof nm, "l%lld.%s", (long long)l, s);
  return W_(w, nm);
}

static void rms(const double *x, const float *g, int64_t n, double eps, double *y) {
  double ss = 0;
  for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
  double r = 1.0 / sqrt(ss / (double)n + eps);
  for (int64_t i = 0; i < n; i++) y[i] = x[i] * r * g[i];
}

static void vecmat(const double *x, const float *m, int64_t k, int64_t n, double *y) {
  for (int64_t j = 0; j < n; j++) y[j] = 0;
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < n; j++) y[j] += x[i] * m[i * n + j];
}

/* NeoX rotation of each head_dim-wide head of x [n_heads * D] at position p. */
static void rope(double *x, int64_t n_heads, const decoder_config *c, int64_t p) {
  int64_t D = c->head_dim, half = D / 2;
  for (int64_t h = 0; h < n_heads; h++)
    for (int64_t i = 0; i < half; i++) {
      double a = (double)p * pow(c->rope_theta, -2.0 * (double)i / (double)D);
      double cs = (float)cos(a), sn = (float)sin(a); /* the graph's tables are float32 */
      double *x1 = &x[h * D + i], *x2 = &x[h * D + i + half], u = *x1, v = *x2;
      *x1 = u * cs - v * sn;
      *x2 = v * cs + u * sn;
    }
}

/* logits [T, vocab] of tokens[0..T) (causal, no cache). */
static void reference_forward(const decoder_config *c, const decoder_weights *w, const int32_t *tokens, int64_t T, double *logits) {
  int64_t E = c->dim, H = c->n_heads, Hkv = c->n_kv_heads, D = c->head_dim, F = c->ffn_dim;
  double *h = calloc((size_t)(T * E), sizeof(double)), *x = calloc((size_t)E, sizeof(double));
  double *q = calloc((size_t)(T * H * D), sizeof(double)), *k = calloc((size_t)(T * Hkv * D), sizeof(double));
  double *v = calloc((size_t)(T * Hkv * D), sizeof(double)), *att = calloc((size_t)(H * D), sizeof(double));
  double *o = calloc((size_t)E, sizeof(double)), *g = calloc((size_t)F, sizeof(double)), *u = calloc((size_t)F, sizeof(double));
  double *p = calloc((size_t)T, sizeof(double));
  const float *emb = W_(w, "embed");
  for (int64_t t = 0; t < T; t++)
    for (int64_t i = 0; i < E; i++) h[t * E + i] = emb[tokens[t] * E + i];
  for (int64_t l = 0; l < c->n_layers; l++) {
    for (int64_t t = 0; t < T; t++) {
      rms(&h[t * E], layer_w(w, l, "attn_norm"), E, c->rms_eps, x);
      vecmat(x, layer_w(w, l, "wq"), E, H * D, &q[t * H * D]);
      vecmat(x, layer_w(w, l, "wk"), E, Hkv * D, &k[t * Hkv * D]);
      vecmat(x, layer_w(w, l, "wv"), E, Hkv * D, &v[t * Hkv * D]);
      rope(&q[t * H * D], H, c, t);
      rope(&k[t * Hkv * D], Hkv, c, t);
    }
    for (int64_t t = 0; t < T; t++) {
      for (int64_t hh = 0; hh < H; hh++) {
        int64_t kv = hh / (H / Hkv);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= t; j++) {
          double s = 0;
          for (int64_t d = 0; d < D; d++) s += q[t * H * D + hh * D + d] * k[j * Hkv * D + kv * D + d];
          p[j] = s / sqrt((double)D);
          mx = p[j] > mx ? p[j] : mx;
        }
        for (int64_t j = 0; j <= t; j++) sum += (p[j] = exp(p[j] - mx));
        for (int64_t d = 0; d < D; d++) {
          double a = 0;
          for (int64_t j = 0; j <= t; j++) a += p[j] / sum * v[j * Hkv * D + kv * D + d];
          att[hh * D + d] = a;
        }
      }
      vecmat(att, layer_w(w, l, "wo"), H * D, E, o);
      for (int64_t i = 0; i < E; i++) h[t * E + i] += o[i];
    }
    for (int64_t t = 0; t < T; t++) {
      rms(&h[t * E], layer_w(w, l, "ffn_norm"), E, c->rms_eps, x);
      vecmat(x, layer_w(w, l, "w_gate"), E, F, g);
      vecmat(x, layer_w(w, l, "w_up"), E, F, u);
      for (int64_t i = 0; i < F; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
      vecmat(g, layer_w(w, l, "w_down"), F, E, o);
      for (int64_t i = 0; i < E; i++) h[t * E + i] += o[i];
    }
  }
  for (int64_t t = 0; t < T; t++) {
    rms(&h[t * E], W_(w, "final_norm"), E, c->rms_eps, x);
    vecmat(x, W_(w, "lm_head"), E, c->vocab, &logits[t * c->vocab]);
  }
  free(h), free(x), free(q), free(k), free(v), free(att), free(o), free(g), free(u), free(p);
}

static int32_t argmax_d(const double *x, int64_t n) {
  int64_t b = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return (int32_t)b;
}

/* ---- fixture ---- */
typedef struct fixture {
  decoder_config cfg;
  decoder_weights w;
  rlx_graph *cached, *full;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  f->cfg = decoder_small();
  OK(decoder_weights_make(&f->cfg, 7, &f->w));
  OK(decoder_build(&f->cfg, true, &f->cached));
  OK(decoder_build(&f->cfg, false, &f->full));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  rlx_graph_free(f->cached);
  rlx_graph_free(f->full);
  decoder_weights_free(&f->w);
  free(f);
  return 0;
}

static const int32_t prompt[] = {3, 14, 15, 9, 26, 5, 35, 8};
#define NP ((int64_t)LEN(prompt))
#define NEW 20

/* The full-recompute graph agrees with the plain C transformer at every position. */
static void test_full_graph_matches_reference(void **state) {
  fixture *f = *state;
  const decoder_config *c = &f->cfg;
  const int32_t tokens[12] = {1, 2, 3, 5, 8, 13, 21, 34, 55, 0, 63, 7};
  int64_t T = 12;
  double *want = malloc(sizeof(double) * (size_t)(T * c->vocab));
  reference_forward(c, &f->w, tokens, T, want);
  int32_t pos[12];
  for (int i = 0; i < 12; i++) pos[i] = i;
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(f->full, all_modes[m]);
    OK(decoder_set_params(ex, &f->w));
    rlx_tensor *tt = tensor(RLX_DTYPE_I32, 2, DIMS(1, T), tokens), *tp = tensor(RLX_DTYPE_I32, 1, DIMS(T), pos), *outs[2] = {0};
    OK(rlx_executable_run(ex, 2, (const char *const[]){"tokens", "positions"}, (rlx_tensor *const[]){tt, tp}, 2, outs));
    assert_int_equal(rlx_tensor_dims(outs[0])[1], T);
    const float *got = rlx_tensor_cdata(outs[0]);
    for (int64_t i = 0; i < T * c->vocab; i++)
      if (fabs(got[i] - want[i]) > 1e-4) fail_msg("mode %s: logit %lld: got %.7g, reference %.7g", rlx_mode_name(all_modes[m]), (long long)i, got[i], want[i]);
    for (int64_t t = 0; t < T; t++) assert_int_equal(((const int64_t *)rlx_tensor_cdata(outs[1]))[t], argmax_d(&want[t * c->vocab], c->vocab));
    rlx_tensor_free(outs[0]);
    rlx_tensor_free(outs[1]);
    rlx_tensor_free(tt);
    rlx_tensor_free(tp);
    rlx_executable_free(ex);
  }
  free(want);
}

/* Prefill + decode with the cache in compiled mode: every step's logits and token match the full
 * recompute (rlx, no cache) and the plain C reference; two traces serve all steps. */
static void test_generation_with_cache(void **state) {
  fixture *f = *state;
  const decoder_config *c = &f->cfg;
  rlx_executable *ex = make_exec(f->cached, RLX_MODE_COMPILED), *full = make_exec(f->full, RLX_MODE_LAZY);
  OK(decoder_set_params(ex, &f->w));
  OK(decoder_set_params(full, &f->w));
  int32_t tokens[NP + NEW];
  float *logits = malloc(sizeof(float) * NEW * (size_t)c->vocab), *ref = malloc(sizeof(float) * (size_t)c->vocab);
  double *want = malloc(sizeof(double) * (size_t)((NP + NEW) * c->vocab));
  OK(decoder_generate(ex, c, prompt, NP, NEW, tokens, logits));
  assert_memory_equal(tokens, prompt, sizeof prompt);
  reference_forward(c, &f->w, tokens, NP + NEW - 1, want);
  for (int64_t i = 0; i < NEW; i++) {
    int32_t next;
    OK(decoder_recompute_last(full, c, tokens, NP + i, ref, &next));
    assert_int_equal(next, tokens[NP + i]);
    const double *wrow = &want[(NP + i - 1) * c->vocab];
    assert_int_equal(argmax_d(wrow, c->vocab), tokens[NP + i]);
    for (int64_t v = 0; v < c->vocab; v++) {
      float got = logits[i * c->vocab + v];
      if (fabs(got - ref[v]) > 1e-4 || fabs(got - wrow[v]) > 1e-4)
        fail_msg("step %lld logit %lld: cached %.7g, recompute %.7g, reference %.7g", (long long)i, (long long)v, got, ref[v], wrow[v]);
    }
  }
  assert_int_equal(rlx_executable_num_traces(ex), 2); /* prefill (8 tokens) and decode (1 token) */
  /* The caches hold rows for positions 0 .. NP+NEW-2 (the last token was never fed) and zeros after. */
  rlx_tensor *k0 = NULL;
  OK(rlx_executable_read_handle(ex, "k0", &k0));
  int64_t width = c->n_kv_heads * c->head_dim, filled = NP + NEW - 1;
  const float *kd = rlx_tensor_cdata(k0);
  for (int64_t r = 0; r < c->capacity; r++) {
    double norm = 0;
    for (int64_t j = 0; j < width; j++) norm += fabs(kd[r * width + j]);
    if ((r < filled) != (norm > 0)) fail_msg("cache row %lld: |k| = %g", (long long)r, norm);
  }
  rlx_tensor_free(k0);
  free(logits);
  free(ref);
  free(want);
  rlx_executable_free(ex);
  rlx_executable_free(full);
}

/* The lazy and eager modes generate the same tokens as compiled mode. */
static void test_generation_modes_agree(void **state) {
  fixture *f = *state;
  int32_t first[NP + NEW], other[NP + NEW];
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(f->cached, all_modes[m]);
    OK(decoder_set_params(ex, &f->w));
    OK(decoder_generate(ex, &f->cfg, prompt, NP, NEW, m ? other : first, NULL));
    if (m) assert_memory_equal(first, other, sizeof first);
    rlx_executable_free(ex);
  }
  rlx_executable *ex = make_exec(f->cached, RLX_MODE_COMPILED);
  OK(decoder_set_params(ex, &f->w));
  FAILS(decoder_generate(ex, &f->cfg, prompt, NP, f->cfg.capacity, other, NULL), INVALID_ARGUMENT, "cache capacity 48");
  rlx_executable_free(ex);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_graph_matches_reference),
      cmocka_unit_test(test_generation_with_cache),
      cmocka_unit_test(test_generation_modes_agree),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
