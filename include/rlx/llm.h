/* rlx/llm.h: Llama-family language models from GGUF files, built in the rlx IR.
 *
 * rlx_llm_open reads a GGUF file (rlx/gguf.h) whose general.architecture is llama, mistral or
 * qwen2, takes the configuration from its metadata ("<arch>." + block_count, embedding_length,
 * feed_forward_length, attention.head_count, attention.head_count_kv (default head_count),
 * attention.key_length (default embedding_length / head_count), attention.layer_norm_rms_epsilon,
 * rope.freq_base (default 10000), rope.dimension_count (default the head dim), rope.scaling.type
 * "linear" with rope.scaling.factor, context_length), builds the decoder graph and an executable,
 * and uploads the weights as params:
 *   h = token_embd[tokens]
 *   per layer N: x = RmsNorm(h) * attn_norm; q, k, v = x Wq (+bq), x Wk (+bk), x Wv (+bv);
 *     q, k = Rope(q), Rope(k); a = Attention(q, k, v) (grouped-query, scale 1/sqrt(head dim),
 *     causal over the KV cache); h += a Wo;
 *     x = RmsNorm(h) * ffn_norm; h += (silu(x Wgate) * (x Wup)) Wdown
 *   logits = (RmsNorm(h) * output_norm) Woutput (output.weight, or token_embd.weight when the
 *   file has none: tied embeddings); the next token is sampled from the last row's logits, a
 *   product of its own, so a step that does not ask for the logits computes the head for that
 *   row alone.
 * Tensors are GGUF's names (token_embd.weight, blk.N.attn_norm.weight, blk.N.attn_q.weight,
 * blk.N.attn_k/attn_v/attn_output/ffn_norm/ffn_gate/ffn_up/ffn_down.weight, blk.N.attn_q/k/v.bias
 * when present (qwen2), output_norm.weight, output.weight); a weight of ggml shape [K, N] maps K
 * inputs to N outputs (W x with W the row-major [N, K] matrix of the file).
 * RoPE (Su et al. 2021) with angle p / scale * base^(-2i/n_rot) on the first n_rot dims of each
 * head: llama and mistral files use llama.cpp's normal rope, which rotates adjacent pairs (x[2i],
 * x[2i+1]) (the converter permutes the Q/K rows of Hugging Face checkpoints into that layout);
 * qwen2 uses the NeoX form, pairs (x[i], x[i + n_rot/2]).
 * Weights: F32 tensors become float32 params, F16 matrices float16 params (read as stored by
 * rlx's matvec kernels and widened in registers, sums in float32; a GPU prefill of more than 8
 * tokens widens them in MLX; float matrices multiplied through a transposed view); quantized
 * tensors (Q4_0 .. Q8_K, MXFP4) stay packed: a uint8 param holding the file's rows, multiplied by
 * DequantMatMul with the matching gguf_* scheme (rlx/op_table.h). A quantized token_embd is
 * gathered packed (its rows' bytes) and decoded by Dequantize. A layer's q/k/v and gate/up
 * matrices of one type are stacked into one param (one product each; SwiGLU as FusedSwiGLU).
 * KV cache: per layer, float32 device handles fed from the step's outputs (no host round trip)
 * and donated to the step (written in place), the fixed-capacity placement of examples/decoder.h: [1, capacity, n_kv_heads * head_dim] on the
 * CPU (attention reads the packed heads in place), [1, n_kv_heads, capacity, head_dim] on a GPU.
 *
 * Thread-safety: an rlx_llm is used by one thread at a time. */
#ifndef RLX_LLM_H
#define RLX_LLM_H

#include "rlx/executable.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_llm_config {
  char arch[32];        /* general.architecture */
  int64_t vocab;        /* token_embd's rows */
  int64_t dim;          /* embedding_length */
  int64_t n_layers;     /* block_count */
  int64_t n_heads;      /* attention.head_count */
  int64_t n_kv_heads;   /* attention.head_count_kv */
  int64_t head_dim;     /* attention.key_length */
  int64_t ffn_dim;      /* feed_forward_length */
  int64_t n_rot;        /* rope.dimension_count */
  int64_t context;      /* context_length */
  double rms_eps;       /* attention.layer_norm_rms_epsilon */
  double rope_base;     /* rope.freq_base */
  double rope_scale;    /* positions are divided by it (rope.scaling.factor when linear; else 1) */
  bool rope_neox;       /* NeoX pairs (qwen2); false: adjacent pairs (llama, mistral) */
} rlx_llm_config;

typedef struct rlx_llm_options {
  rlx_device device;    /* RLX_DEVICE_CPU (0) by default */
  rlx_mode mode;        /* RLX_MODE_DEFAULT (0): compiled */
  int64_t capacity;     /* KV-cache length in tokens (at most INT32_MAX); 0: min(context_length, 2048) */
  /* the Sample op choosing the next token (rlx/op_table.h): temperature 0 or top_k 1 is greedy */
  double temperature;   /* default (all fields 0): greedy */
  int64_t top_k;
  double top_p;         /* 0 taken as 1 */
  uint64_t seed;        /* 0: fresh draws */
  /* false (default): on the CPU, the Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and K-quant (Q2_K..Q6_K) projections take x rounded to Q8_0
   * blocks (DequantMatMul activations "q8_0", rlx/op_table.h), as llama.cpp's CPU matmuls
   * quantize theirs, and run integer dot products (faster decoding; logits move by about 1% of
   * their range). true: x as it is, in float32. A GPU always takes x as it is. */
  bool float_activations;
} rlx_llm_options;

typedef struct rlx_llm rlx_llm;

/* Opens the model at `path` (options NULL: the defaults above). Errors: INVALID_ARGUMENT (NULL
 * path or out, bad options), NOT_FOUND / DATA_LOSS from rlx_gguf_open, a missing metadata key or
 * tensor (NOT_FOUND naming it), UNIMPLEMENTED (another architecture, a ggml type without a
 * DequantMatMul scheme), DATA_LOSS (a tensor whose shape disagrees with the metadata: expected vs
 * got), UNAVAILABLE (GPU asked, none), RESOURCE_EXHAUSTED. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_llm_open(const char *path, const rlx_llm_options *options, rlx_llm **out);
void rlx_llm_close(rlx_llm *m); /* NULL accepted */

/* The configuration read from the file (borrowed; lives as long as m). */
const rlx_llm_config *rlx_llm_get_config(const rlx_llm *m);
/* The KV-cache capacity in tokens and the number of tokens already in the cache. */
int64_t rlx_llm_capacity(const rlx_llm *m);
int64_t rlx_llm_position(const rlx_llm *m);

/* Runs tokens[0..n) (ids in [0, vocab)) at the next n positions: a prefill when n > 1, a decode
 * step when n == 1 (one executable; compiled mode traces once per distinct n). out_logits, when
 * not NULL, receives n * vocab float32 logits (row i for the token after tokens[0..i]); out_next,
 * when not NULL, the token the Sample op chose after the last one. Errors: INVALID_ARGUMENT (NULL
 * tokens, n < 1, an id outside the vocabulary), OUT_OF_RANGE (position + n > capacity), errors
 * of rlx_executable_run. On failure of the checks above nothing changes; when the run itself
 * fails the cache is lost (the caches are device handles each step updates in place,
 * rlx_executable_set_handle_donation) and the model starts over: zero caches, position 0. */
RLX_MUST_USE rlx_status *rlx_llm_step(rlx_llm *m, const int32_t *tokens, int64_t n, float *out_logits, int32_t *out_next);

/* Generates: runs `token` (an id in [0, vocab)) at the next position, then up to n - 1 more decode
 * steps, each on the token the Sample op chose at the step before, and calls on_token(id, user)
 * with each chosen id in order; on_token returning false stops the generation after that token.
 * The ids are those rlx_llm_step would choose step by step (the same graph and random stream).
 * Pipelined: each step takes its token and its position from the step before on the device (no
 * host round trip, no array written by the host)
 * and is committed (rlx_executable_commit) before the step before is read back, so the host
 * prepares step i + 1 while the device computes step i; the tokens reach on_token one step behind
 * the device. The position advances by one per id passed to on_token (a step already committed
 * when on_token stops is dropped: its cache row is written again by the next step). *n_done (may be
 * NULL) receives the number of ids passed to on_token. on_token runs on the calling thread and must
 * not call into m. Errors: INVALID_ARGUMENT (NULL m or on_token, n < 1, token outside the
 * vocabulary), OUT_OF_RANGE (position + n > capacity): nothing changes; errors of
 * rlx_executable_commit / rlx_executable_sync: the model starts over as after a failed
 * rlx_llm_step (zero caches, position 0), *n_done untouched. */
RLX_MUST_USE rlx_status *rlx_llm_generate(rlx_llm *m, int32_t token, int64_t n, bool (*on_token)(int32_t id, void *user), void *user,
                                          int64_t *n_done);

/* Forgets the cached tokens (position 0). */
void rlx_llm_reset(rlx_llm *m);

/* ---- the tokenizer of the file's vocabulary ----
 * tokenizer.ggml.model "llama": SentencePiece-style BPE over scored pieces (Kudo & Richardson
 * 2018), as llama.cpp applies it: every space becomes U+2581 and one is prepended
 * (tokenizer.ggml.add_space_prefix, default true); the text is split into UTF-8 characters; the
 * adjacent pair whose concatenation is a vocabulary token of the highest score
 * (tokenizer.ggml.scores) is merged, the leftmost pair on ties, until no pair is a token; a piece
 * left that is not a token is spelled with the byte tokens "<0xXX>" (token_type 6), else the
 * unknown token.
 * tokenizer.ggml.model "gpt2": byte-level BPE (Radford et al. 2019). The text is cut into
 * pre-tokens by the regex that tokenizer.ggml.pre names ("gpt-2"; "llama3", "llama-v3",
 * "llama-bpe"; "qwen2"; others are UNIMPLEMENTED), matched with PCRE2 in Unicode mode (text
 * between matches is a pre-token too); each pre-token's bytes become GPT-2's printable characters
 * (bytes_to_unicode); then the adjacent pair of the lowest rank in tokenizer.ggml.merges ("left
 * right" strings) is merged, leftmost on ties, until no pair is a merge (llama3 first takes a
 * pre-token that is a whole token as is); no space is prepended. Special tokens in the text are
 * not parsed: they encode as text.
 * An rlx_tokenizer is read-only after open: any number of threads may use it. */
typedef struct rlx_tokenizer rlx_tokenizer;

/* Reads the vocabulary of the GGUF file at `path` (tokenizer.ggml.tokens, .scores, .token_type,
 * .bos_token_id, .eos_token_id, .unknown_token_id (defaults 1, 2, 0 for "llama", none for
 * "gpt2"), .add_bos_token (default true for "llama" and llama3's pre-tokenizer, else false),
 * and for "gpt2" .merges and .pre).
 * Errors: INVALID_ARGUMENT (NULL), rlx_gguf_open's, NOT_FOUND (no tokenizer.ggml.model or
 * .tokens), DATA_LOSS (arrays of the wrong type or length), UNIMPLEMENTED (another model),
 * RESOURCE_EXHAUSTED. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_tokenizer_open(const char *path, rlx_tokenizer **out);
void rlx_tokenizer_close(rlx_tokenizer *t); /* NULL accepted */
int32_t rlx_tokenizer_vocab_size(const rlx_tokenizer *t);
/* The BOS / EOS token ids (-1 when the file names none in range). */
int32_t rlx_tokenizer_bos(const rlx_tokenizer *t);
int32_t rlx_tokenizer_eos(const rlx_tokenizer *t);
/* Whether encoding prepends a space (the "llama" vocabulary's add_space_prefix): the decoded
 * first piece then starts with a space that is not in the text. */
bool rlx_tokenizer_space_prefix(const rlx_tokenizer *t);
/* Encodes text[0..len) (UTF-8) into out_ids[0..cap), the BOS first when add_bos and the file's
 * add_bos_token allow it; *out_n = the token count. OUT_OF_RANGE (with *out_n set to the count
 * needed, nothing written) when cap is too small; INVALID_ARGUMENT for NULL arguments. */
RLX_MUST_USE rlx_status *rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, bool add_bos, int32_t *out_ids,
                                              size_t cap, size_t *out_n);
/* Writes token id's text into buf[0..cap) (not NUL-terminated; "llama": U+2581 as a space, a byte
 * token as its byte; "gpt2": GPT-2's characters back to their bytes, user-defined tokens as
 * written; unknown/control/unused tokens and ids out of range as nothing, as llama.cpp's
 * llama_token_to_piece without special tokens) and returns its full length
 * (more than cap: truncated). Decoding a sequence concatenates its pieces (less the prepended
 * space when rlx_tokenizer_space_prefix). */
size_t rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
