/* mlx_peer.h: the benchmark's peer: the same computations written directly against MLX's C++ API
 * (bench/mlx_peer.cpp), behind a C interface so that bench_executable.c stays C. */
#ifndef RLX_BENCH_MLX_PEER_H
#define RLX_BENCH_MLX_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The transformer block's sizes and weights (float32, row-major; see bench_executable.c). */
typedef struct peer_block_dims {
  int64_t seq, dim, heads, head_dim, ffn;
  float eps, theta;
} peer_block_dims;

typedef struct peer_block_weights {
  const float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w_gate, *w_up, *w_down;
} peer_block_weights;

typedef struct mlx_peer mlx_peer;

/* Tiny graph: y = x * 2 + 1 over x [n]. */
mlx_peer *peer_tiny_create(bool compiled, int64_t n);
/* One transformer block over x [1, seq, dim]. fast_rope: mx::fast::rope on [1, H, S, D] (what an
 * MLX user writes); otherwise the rotation composed from slices and elementwise ops on the packed
 * [1, S, H*D] layout, op for op as rlx lowers Rope (the rest of the block is the same either way). */
mlx_peer *peer_block_create(bool compiled, bool fast_rope, const peer_block_dims *d, const peer_block_weights *w);
/* Embedding lookup: y[n, dim] = table[x as int32] over x [n] (integer-valued floats in [0, vocab),
 * cast inside as rlx's graph does); table [vocab, dim] is copied. */
mlx_peer *peer_embed_create(bool compiled, int64_t n, int64_t vocab, int64_t dim, const float *table);
/* One run: x is copied in, the output evaluated and copied to y. false on an MLX error. */
bool peer_run(mlx_peer *p, const float *x, float *y);
void peer_free(mlx_peer *p);

#ifdef __cplusplus
}
#endif
#endif
