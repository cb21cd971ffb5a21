/* decoder.h: a small decoder-only transformer (Llama-style) built in the rlx IR, for the
 * text-generation example (examples/generate.c) and its test (tests/unit/test_executable_decoder.c).
 *
 * Architecture: token embedding (Gather) -> n_layers x [RmsNorm -> q/k/v projections -> rotary
 * embedding (Rope, NeoX half split) -> grouped-query attention -> output projection, residual;
 * RmsNorm -> SwiGLU MLP (silu(x Wg) * (x Wu)) Wd, residual] -> RmsNorm -> logits (x Wlm) -> token
 * ids (Sample with top_k 1: greedy). All float32. The model is built from primitive ops (MatMul,
 * Gather, RmsNorm, Rope, Attention, Silu, elementwise); the fused ops of the vocabulary
 * (FusedSwiGLU, FusedAttentionBlock) can replace the marked blocks later.
 *
 * Tensor parallelism (cfg->tp = N > 1; Shoeybi et al. 2019, Megatron-LM): the graph is one rank's
 * shard of the model. The q/k/v projections and the MLP's gate/up are split by columns (each rank
 * owns n_heads/N query heads, n_kv_heads/N kv heads, ffn_dim/N hidden units), the attention
 * output and MLP down projections by rows, each followed by AllReduce (sum) over the executable's
 * process group (rlx/dist.h); lm_head is split by columns and the logits are gathered
 * (AllGather along the vocabulary axis), so every rank samples the same token. The KV caches hold
 * the rank's kv heads: [1, C, (n_kv_heads/N) * head_dim]. decoder_weights_shard cuts a rank's
 * weights out of the full ones. N must divide n_heads, n_kv_heads, ffn_dim and vocab.
 *
 * Two graphs over the same param names:
 * - the cached step (decoder_build(cfg, true)): inputs `tokens` int32 [1, s0] and `positions`
 *   int32 [s0] (the absolute positions of these tokens), and per layer l the caches `k<l>` and
 *   `v<l>` float32 [1, C, n_kv_heads * head_dim] of capacity C = cfg->capacity; outputs `logits`
 *   [1, s0, vocab], `next` int64 [1, s0] (the token chosen at each position), then `k<l>'`, `v<l>'` per layer:
 *   the caches with this step's keys and values written at their positions. Fed back into the
 *   cache inputs (device handles), prefill (s0 = prompt length) and decode (s0 = 1) share one
 *   executable.
 *   KV-cache design: fixed capacity with an additive bias mask, not a cache that grows with a
 *   symbolic length. The new rows are placed by a one-hot placement matrix P[C, s0]
 *   (P[c, j] = (c == positions[j])): k' = k * (1 - rowsum(P)) + P @ k_new; the mask is 0 where
 *   key position c <= query position and -1e9 elsewhere (future and empty slots). Every shape is
 *   static except s0, so compiled mode traces once for the prefill and once for decoding and then
 *   replays every step; a growing cache would change shape (and trace again) at every token.
 * - the full recompute (decoder_build(cfg, false)): inputs `tokens` [1, s0] and `positions`
 *   [s0] = 0..s0-1, causal attention over the whole sequence, outputs `logits` and `next`. The
 *   no-cache reference of the generation loop.
 */
#ifndef RLX_EXAMPLES_DECODER_H
#define RLX_EXAMPLES_DECODER_H

#include "rlx/rlx.h"

typedef struct decoder_config {
  int64_t vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, capacity;
  double rms_eps, rope_theta;
  int64_t tp; /* tensor-parallel ranks (0 or 1: none) */
} decoder_config;

/* A small configuration (vocab 64, dim 48, 2 layers, 6 heads over 2 kv heads, capacity 48). */
decoder_config decoder_small(void);

/* Builds the cached step (cached = true) or the full recompute graph. */
rlx_status *decoder_build(const decoder_config *cfg, bool cached, rlx_graph **out);

/* Deterministic weights from `seed` for every param of the graphs (uniform, scaled by
 * 1/sqrt(fan in); norm gains near 1). Names and shapes: see decoder.c. */
typedef struct decoder_weights {
  size_t n;
  char **names;
  rlx_tensor **values;
} decoder_weights;
rlx_status *decoder_weights_make(const decoder_config *cfg, uint64_t seed, decoder_weights *out);
void decoder_weights_free(decoder_weights *w);
/* Rank `rank`'s shard of the full weights `full` for tensor parallelism over cfg->tp ranks (see
 * above): column-split wq, wk, wv, w_gate, w_up, lm_head; row-split wo, w_down; the rest copied.
 * INVALID_ARGUMENT when cfg->tp does not divide the split dims. */
rlx_status *decoder_weights_shard(const decoder_config *cfg, const decoder_weights *full, int64_t rank, decoder_weights *out);
/* The weight named `name`, or NULL. */
const rlx_tensor *decoder_weight(const decoder_weights *w, const char *name);
/* Sets every param of ex from w. */
rlx_status *decoder_set_params(rlx_executable *ex, const decoder_weights *w);

/* Generation with the cached step in `ex` (compiled mode recommended): binds zeroed caches as
 * device handles fed from the step's outputs (no host copy of the caches), runs the prompt, then
 * n_new greedy decode steps. tokens_out receives prompt_len + n_new ids (the prompt first); if
 * logits_out is non-NULL it receives the logits [vocab] that chose each new token (n_new rows). */
rlx_status *decoder_generate(rlx_executable *ex, const decoder_config *cfg, const int32_t *prompt, int64_t prompt_len,
                             int64_t n_new, int32_t *tokens_out, float *logits_out);

/* Runs the full recompute graph on tokens[0..n) and copies the last position's logits [vocab]
 * to logits_out and its chosen token to *next_out. */
rlx_status *decoder_recompute_last(rlx_executable *ex, const decoder_config *cfg, const int32_t *tokens, int64_t n,
                                   float *logits_out, int32_t *next_out);

#endif
