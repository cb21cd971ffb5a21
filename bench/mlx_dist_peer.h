/* mlx_dist_peer.h: bench_allsum's peer, mx::distributed::all_sum called directly from MLX's C++ API
 * (bench/mlx_dist_peer.cpp) on a device array, behind a C interface. */
#ifndef RLX_BENCH_MLX_DIST_PEER_H
#define RLX_BENCH_MLX_DIST_PEER_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dist_peer dist_peer;

/* Joins MLX's group of `backend` (cached by MLX: the group rlx_dist_init made) and makes a float32
 * array of n ones on the GPU (gpu) or CPU: computed there (mx::ones), or, with `uploaded`, copied
 * from host memory the way rlx uploads a device handle (on CUDA: unified memory, migrated to the
 * GPU on first use, where mx::ones's result is device memory). NULL on an MLX error. */
dist_peer *dist_peer_create(const char *backend, bool gpu, size_t n, bool uploaded);
/* k all_sums of the array: each evaluated before the next starts, or (pipelined) all scheduled
 * with async_eval and waited for once at the end. false on an MLX error. */
bool dist_peer_all_sum(dist_peer *p, int k, bool pipelined);
void dist_peer_free(dist_peer *p);

#ifdef __cplusplus
}
#endif
#endif
