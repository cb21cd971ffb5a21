/* dist_tp.c: tensor-parallel generation (examples/decoder.h with cfg.tp = group size) against
 * the single-process run of the same model.
 *
 *   dist_tp [--device cpu|gpu] [--steps N]     (under rlx launch / mpirun; every rank checks)
 *
 * Each rank first generates with the whole model alone (no communication: the single-process
 * run), then with its shard of the model in compiled mode, the KV caches in device handles fed
 * from the step outputs, the partial projections summed by AllReduce and the logits gathered by
 * AllGather over the group. Every decode step's logits must equal the single-process ones within
 * 1e-5 and the tokens must be identical. Exit status 0 when they are on this rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"

static int fail(rlx_status *st) {
  printf("error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 2;
}

/* Generates `steps` tokens with cfg (tp shards when cfg->tp > 1) on `group`. */
static rlx_status *generate(const decoder_config *cfg, const decoder_weights *w, rlx_dist_group *group, rlx_device dev,
                            const int32_t *prompt, int64_t np, int64_t steps, int32_t *tokens, float *logits, size_t *traces) {
  rlx_graph *g = NULL;
  rlx_executable *ex = NULL;
  rlx_status *st = decoder_build(cfg, true, &g);
  if (!st) st = rlx_executable_create(g, dev, RLX_MODE_COMPILED, &ex);
  if (!st) st = rlx_executable_set_group(ex, group);
  if (!st) st = decoder_set_params(ex, w);
  if (!st) st = decoder_generate(ex, cfg, prompt, np, steps, tokens, logits);
  if (!st) *traces = rlx_executable_num_traces(ex);
  rlx_executable_free(ex);
  rlx_graph_free(g);
  return st;
}

int main(int argc, char **argv) {
  rlx_device dev = RLX_DEVICE_CPU;
  int64_t steps = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device")) {
      rlx_status *st = rlx_device_from_name(argv[i + 1], &dev);
      if (st) return fail(st);
    } else if (!strcmp(argv[i], "--steps")) {
      steps = atoll(argv[i + 1]);
    }
  }
  rlx_dist_group *group = NULL;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, true, &group);
  if (st) return fail(st);
  int rank = rlx_dist_group_rank(group), size = rlx_dist_group_size(group);
  /* decoder_small with 8 query heads over 4 kv heads, so that 2 and 4 ranks split them */
  decoder_config cfg = decoder_small();
  cfg.n_heads = 8;
  cfg.n_kv_heads = 4;
  const int32_t prompt[] = {7, 4, 11, 11, 14, 62, 22, 14};
  int64_t np = 8;
  decoder_weights full = {0}, shard = {0};
  int32_t *tok_ref = calloc((size_t)(np + steps), sizeof(int32_t)), *tok_tp = calloc((size_t)(np + steps), sizeof(int32_t));
  float *lg_ref = calloc((size_t)(steps * cfg.vocab), sizeof(float)), *lg_tp = calloc((size_t)(steps * cfg.vocab), sizeof(float));
  size_t tr_ref = 0, tr_tp = 0;
  if (!tok_ref || !tok_tp || !lg_ref || !lg_tp) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!st) st = decoder_weights_make(&cfg, 42, &full);
  if (!st) st = generate(&cfg, &full, NULL, dev, prompt, np, steps, tok_ref, lg_ref, &tr_ref);
  decoder_config tp = cfg;
  tp.tp = size;
  if (!st) st = decoder_weights_shard(&tp, &full, rank, &shard);
  if (!st) st = generate(&tp, &shard, group, dev, prompt, np, steps, tok_tp, lg_tp, &tr_tp);
  int rc;
  if (st) {
    rc = fail(st);
  } else {
    double worst = 0;
    int mism = 0;
    for (int64_t i = 0; i < steps * cfg.vocab; i++) worst = fmax(worst, fabs((double)lg_tp[i] - lg_ref[i]));
    for (int64_t i = 0; i < np + steps; i++) mism += tok_tp[i] != tok_ref[i];
    rc = worst <= 1e-5 && mism == 0 ? 0 : 1;
    printf("rank %d of %d (%s, %s): %lld decode steps, tensor parallel vs single process: max |logit diff| %.3g, token mismatches %d, "
           "%zu traces: %s\n",
           rank, size, rlx_dist_backend_name(rlx_dist_group_backend(group)), rlx_device_name(dev), (long long)steps, worst, mism, tr_tp,
           rc ? "MISMATCH" : "match");
    printf("tokens:");
    for (int64_t i = np; i < np + steps; i++) printf(" %d", tok_tp[i]);
    printf("\n");
  }
  decoder_weights_free(&full);
  decoder_weights_free(&shard);
  free(tok_ref), free(tok_tp), free(lg_ref), free(lg_tp);
  rlx_dist_group_free(group);
  return rc;
}
