/* generate: text generation with a KV cache on rlx (see decoder.h).
 *
 * usage: generate [--steps N] [--mode lazy|eager|compiled] [--seed S] [--device cpu|gpu]
 *
 * Builds a small decoder-only transformer with seeded random weights (no small pretrained causal
 * LM ships in a package registry in a format rlx reads), runs the prompt and then N greedy decode
 * steps with the KV cache held in device-resident handles (compiled mode by default), and checks
 * every step against a full recompute of the whole sequence without a cache: the chosen token
 * must be the same and the logits must agree to 1e-4. Prints the tokens (as characters of a
 * 64-letter alphabet), the largest logit difference and the time per decode step. Exit status 0
 * when every step matches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decoder.h"

static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(rlx_status *st) {
  fprintf(stderr, "error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 2;
}

int main(int argc, char **argv) {
  int64_t steps = 24;
  uint64_t seed = 42;
  rlx_mode mode = RLX_MODE_COMPILED;
  rlx_device device = RLX_DEVICE_CPU;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps")) steps = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--mode")) {
      rlx_status *st = rlx_mode_from_name(argv[i + 1], &mode);
      if (st) return fail(st);
    } else if (!strcmp(argv[i], "--device")) {
      rlx_status *st = rlx_device_from_name(argv[i + 1], &device);
      if (st) return fail(st);
    } else {
      fprintf(stderr, "usage: %s [--steps N] [--mode lazy|eager|compiled] [--seed S] [--device cpu|gpu]\n", argv[0]);
      return 2;
    }
  }
  decoder_config cfg = decoder_small();
  const int32_t prompt[] = {7, 4, 11, 11, 14, 62, 22, 14};
  int64_t np = (int64_t)(sizeof prompt / sizeof prompt[0]);
  if (steps < 1 || np + steps - 1 > cfg.capacity) {
    fprintf(stderr, "--steps must be in [1, %lld]\n", (long long)(cfg.capacity - np + 1));
    return 2;
  }
  decoder_weights w = {0};
  rlx_graph *gc = NULL, *gf = NULL;
  rlx_executable *cached = NULL, *full = NULL;
  int32_t *tokens = malloc(sizeof(int32_t) * (size_t)(np + steps));
  float *logits = malloc(sizeof(float) * (size_t)(steps * cfg.vocab)), *ref = malloc(sizeof(float) * (size_t)cfg.vocab);
  rlx_status *st = tokens && logits && ref ? NULL : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!st) st = decoder_weights_make(&cfg, seed, &w);
  if (!st) st = decoder_build(&cfg, true, &gc);
  if (!st) st = decoder_build(&cfg, false, &gf);
  if (!st) st = rlx_executable_create(gc, device, mode, &cached);
  if (!st) st = rlx_executable_create(gf, device, RLX_MODE_LAZY, &full);
  if (!st) st = decoder_set_params(cached, &w);
  if (!st) st = decoder_set_params(full, &w);
  double t0 = now_s();
  if (!st) st = decoder_generate(cached, &cfg, prompt, np, steps, tokens, logits);
  double t1 = now_s();
  int mismatches = 0;
  double worst = 0;
  for (int64_t i = 0; i < steps && !st; i++) {
    int32_t want;
    st = decoder_recompute_last(full, &cfg, tokens, np + i, ref, &want);
    for (int64_t v = 0; v < cfg.vocab && !st; v++) worst = fmax(worst, fabs((double)logits[i * cfg.vocab + v] - ref[v]));
    if (!st && want != tokens[np + i]) mismatches++;
  }
  int rc = 0;
  if (st) {
    rc = fail(st);
  } else {
    printf("rlx %s on MLX %s (%s, %s mode), seeded random weights (seed %llu)\n", RLX_VERSION, rlx_mlx_version(), rlx_device_name(device),
           rlx_mode_name(rlx_executable_mode(cached)), (unsigned long long)seed);
    printf("prompt:    ");
    for (int64_t i = 0; i < np; i++) putchar(alphabet[tokens[i] % 64]);
    printf("\ngenerated: ");
    for (int64_t i = np; i < np + steps; i++) putchar(alphabet[tokens[i] % 64]);
    printf("\ntoken ids:");
    for (int64_t i = np; i < np + steps; i++) printf(" %d", tokens[i]);
    printf("\n%lld steps with the KV cache vs full recompute: %s (token mismatches %d, max |logit diff| %.3g)\n", (long long)steps,
           mismatches == 0 && worst <= 1e-4 ? "match" : "MISMATCH", mismatches, worst);
    printf("%.3f ms per step (prefill of %lld tokens included, %zu traces)\n", 1e3 * (t1 - t0) / (double)steps, (long long)np,
           rlx_executable_num_traces(cached));
    rc = mismatches == 0 && worst <= 1e-4 ? 0 : 1;
  }
  rlx_executable_free(cached);
  rlx_executable_free(full);
  rlx_graph_free(gc);
  rlx_graph_free(gf);
  decoder_weights_free(&w);
  free(tokens);
  free(logits);
  free(ref);
  return rc;
}
