/* llama_cpp_oracle: llama.cpp (libllama, built by scripts/llama_cpp.sh) as the oracle of the GGUF
 * tests and the peer of bench/llm_bench.py. Not part of rlx: it is compiled against llama.cpp's
 * installed headers only, into llama.cpp's cache folder.
 *
 *   llama_cpp_oracle tokenize MODEL FILE    ids of FILE's UTF-8 text (BOS as the file says; special
 *                                           tokens not parsed), space-separated on one line
 *   llama_cpp_oracle pieces MODEL ID...     each id's piece (special tokens as nothing) as hex
 *                                           bytes, one line per id
 *   llama_cpp_oracle logits MODEL THREADS PROMPT_LEN OUT ID...
 *       teacher forcing: the first PROMPT_LEN ids in one batch (every row's logits), then the
 *       rest one token per llama_decode; OUT gets len(ids) * n_vocab float32 (native order)
 *   llama_cpp_oracle greedy MODEL THREADS N ID...   the prompt ids, then N argmax tokens printed
 *   llama_cpp_oracle bench MODEL THREADS N_PROMPT N_GEN REPS
 *       REPS times: a N_PROMPT-token prefill then N_GEN one-token decodes (token ids 1.. of the
 *       vocabulary); prints the median prefill and decode tokens/s as JSON
 *   llama_cpp_oracle quantize MODEL OUT FTYPE PURE
 *       llama_model_quantize of MODEL (F32/F16) into OUT with llama_ftype FTYPE (e.g. 7 Q8_0, 14
 *       Q4_K_S, 15 Q4_K_M); PURE 1: every matrix in FTYPE's type (token_embd and output too)
 * The KV cache is float32 and flash attention is off (the plain softmax(QK^T)V path) in every
 * mode; weights are used as the file stores them. Exit status 0 on success, 1 with a message. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llama.h>

static void quiet(enum ggml_log_level level, const char *text, void *user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int fail(const char *what) {
  fprintf(stderr, "llama_cpp_oracle: %s\n", what);
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static struct llama_context *context_for(struct llama_model *model, int threads, int n_ctx, int n_batch) {
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = (uint32_t)n_ctx;
  cp.n_batch = cp.n_ubatch = (uint32_t)n_batch;
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.no_perf = true;
  return llama_init_from_model(model, cp);
}

/* Decodes ids[0..n) at positions pos.., logits for every row when all_logits, else the last. */
static int decode(struct llama_context *ctx, struct llama_batch *b, const llama_token *ids, int n, int pos, int all_logits) {
  b->n_tokens = n;
  for (int i = 0; i < n; i++) {
    b->token[i] = ids[i];
    b->pos[i] = pos + i;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = 0;
    b->logits[i] = (int8_t)(all_logits || i == n - 1);
  }
  return llama_decode(ctx, *b) == 0 ? 0 : fail("llama_decode failed");
}

static int argmax(const float *x, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

static llama_token *parse_ids(char **argv, int n) {
  llama_token *ids = malloc(sizeof *ids * (size_t)(n > 0 ? n : 1));
  for (int i = 0; ids && i < n; i++) ids[i] = (llama_token)strtol(argv[i], NULL, 10);
  return ids;
}

static int run_tokenize(const struct llama_vocab *vocab, const char *file) {
  FILE *f = fopen(file, "rb");
  if (!f) return fail("cannot open the text file");
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len + 1);
  size_t got = text ? fread(text, 1, (size_t)len, f) : 0;
  fclose(f);
  if (!text || got != (size_t)len) return free(text), fail("cannot read the text file");
  int cap = (int)len + 8;
  llama_token *ids = malloc(sizeof *ids * (size_t)cap);
  int n = ids ? llama_tokenize(vocab, text, (int32_t)len, ids, cap, true, false) : -1;
  free(text);
  if (n < 0) return free(ids), fail("llama_tokenize failed");
  for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
  printf("\n");
  free(ids);
  return 0;
}

static int run_pieces(const struct llama_vocab *vocab, char **argv, int n) {
  char buf[256];
  for (int i = 0; i < n; i++) {
    int len = llama_token_to_piece(vocab, (llama_token)strtol(argv[i], NULL, 10), buf, sizeof buf, 0, false);
    if (len < 0) return fail("llama_token_to_piece failed");
    for (int j = 0; j < len; j++) printf("%02x", (unsigned char)buf[j]);
    printf("\n");
  }
  return 0;
}

/* logits (out != NULL: teacher forcing, every row written) or greedy (n_gen tokens printed). */
static int run_forward(struct llama_model *model, int threads, int prompt_len, const llama_token *ids, int n_ids, int n_gen,
                       const char *out) {
  int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  int total = (out ? n_ids : prompt_len + n_gen);
  if (prompt_len < 1 || prompt_len > n_ids) return fail("the prompt length must be in [1, number of ids]");
  struct llama_context *ctx = context_for(model, threads, total + 1, prompt_len);
  if (!ctx) return fail("llama_init_from_model failed");
  struct llama_batch b = llama_batch_init(prompt_len, 0, 1);
  float *logits = out ? malloc(sizeof(float) * (size_t)n_ids * (size_t)n_vocab) : NULL;
  int rc = out && !logits ? fail("out of memory") : decode(ctx, &b, ids, prompt_len, 0, out != NULL);
  for (int i = 0; rc == 0 && out && i < prompt_len; i++)
    memcpy(logits + (size_t)i * (size_t)n_vocab, llama_get_logits_ith(ctx, i), sizeof(float) * (size_t)n_vocab);
  for (int i = prompt_len; rc == 0 && out && i < n_ids; i++) {
    rc = decode(ctx, &b, ids + i, 1, i, 1);
    if (rc == 0) memcpy(logits + (size_t)i * (size_t)n_vocab, llama_get_logits_ith(ctx, 0), sizeof(float) * (size_t)n_vocab);
  }
  for (int i = 0; rc == 0 && !out && i < n_gen; i++) {
    llama_token next = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    printf(i ? " %d" : "%d", next);
    if (i + 1 < n_gen) rc = decode(ctx, &b, &next, 1, prompt_len + i, 0);
  }
  if (!out && rc == 0) printf("\n");
  if (out && rc == 0) {
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(logits, sizeof(float) * (size_t)n_vocab, (size_t)n_ids, f) != (size_t)n_ids) rc = fail("cannot write the logits");
    if (f && fclose(f) != 0) rc = fail("cannot write the logits");
  }
  free(logits);
  llama_batch_free(b);
  llama_free(ctx);
  return rc;
}

static int run_bench(struct llama_model *model, int threads, int n_prompt, int n_gen, int reps) {
  int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  if (n_prompt < 1 || n_gen < 1 || reps < 1) return fail("N_PROMPT, N_GEN and REPS must be positive");
  struct llama_context *ctx = context_for(model, threads, n_prompt + n_gen + 1, n_prompt);
  if (!ctx) return fail("llama_init_from_model failed");
  struct llama_batch b = llama_batch_init(n_prompt, 0, 1);
  llama_token *ids = malloc(sizeof *ids * (size_t)n_prompt);
  double *pp = malloc(sizeof(double) * (size_t)(reps + 1)), *tg = malloc(sizeof(double) * (size_t)(reps + 1));
  int rc = ids && pp && tg ? 0 : fail("out of memory");
  for (int i = 0; rc == 0 && i < n_prompt; i++) ids[i] = 1 + i % (n_vocab - 1);
  for (int r = 0; rc == 0 && r <= reps; r++) { /* run 0 warms up */
    llama_memory_clear(llama_get_memory(ctx), true);
    double t0 = now_s();
    rc = decode(ctx, &b, ids, n_prompt, 0, 0);
    double t1 = now_s();
    for (int i = 0; rc == 0 && i < n_gen; i++) {
      llama_token next = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
      rc = decode(ctx, &b, &next, 1, n_prompt + i, 0);
    }
    double t2 = now_s();
    pp[r] = n_prompt / (t1 - t0);
    tg[r] = n_gen / (t2 - t1);
  }
  if (rc == 0) {
    qsort(pp + 1, (size_t)reps, sizeof(double), cmp_double);
    qsort(tg + 1, (size_t)reps, sizeof(double), cmp_double);
    printf("{\"threads\": %d, \"n_prompt\": %d, \"n_gen\": %d, \"reps\": %d, \"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f}\n", threads,
           n_prompt, n_gen, reps, pp[1 + reps / 2], tg[1 + reps / 2]);
  }
  free(ids);
  free(pp);
  free(tg);
  llama_batch_free(b);
  llama_free(ctx);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) return fail("usage: llama_cpp_oracle tokenize|pieces|logits|greedy|bench|quantize MODEL ...");
  const char *mode = argv[1];
  if (!getenv("RLX_ORACLE_VERBOSE")) llama_log_set(quiet, NULL);
  llama_backend_init();
  if (!strcmp(mode, "quantize")) {
    if (argc != 6) return fail("usage: llama_cpp_oracle quantize MODEL OUT FTYPE PURE");
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = (enum llama_ftype)atoi(argv[4]);
    qp.pure = atoi(argv[5]) != 0;
    qp.nthread = 2;
    uint32_t qrc = llama_model_quantize(argv[2], argv[3], &qp);
    llama_backend_free();
    return qrc == 0 ? 0 : fail("llama_model_quantize failed");
  }
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.vocab_only = !strcmp(mode, "tokenize") || !strcmp(mode, "pieces");
  struct llama_model *model = llama_model_load_from_file(argv[2], mp);
  if (!model) return fail("llama_model_load_from_file failed");
  const struct llama_vocab *vocab = llama_model_get_vocab(model);
  int rc;
  if (!strcmp(mode, "tokenize") && argc == 4) {
    rc = run_tokenize(vocab, argv[3]);
  } else if (!strcmp(mode, "pieces")) {
    rc = run_pieces(vocab, argv + 3, argc - 3);
  } else if ((!strcmp(mode, "logits") && argc > 6) || (!strcmp(mode, "greedy") && argc > 5)) {
    int logits_mode = !strcmp(mode, "logits");
    int first = logits_mode ? 6 : 5, n_ids = argc - first;
    llama_token *ids = parse_ids(argv + first, n_ids);
    int n = atoi(argv[4]);
    rc = !ids ? fail("out of memory")
              : run_forward(model, atoi(argv[3]), logits_mode ? n : n_ids, ids, n_ids, logits_mode ? 0 : n, logits_mode ? argv[5] : NULL);
    free(ids);
  } else if (!strcmp(mode, "bench") && argc == 7) {
    rc = run_bench(model, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
  } else {
    rc = fail("bad arguments (see the comment at the top of tests/gguf/llama_cpp_oracle.c)");
  }
  llama_model_free(model);
  llama_backend_free();
  return rc;
}
