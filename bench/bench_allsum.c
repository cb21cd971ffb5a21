/* bench_allsum: all_sum latency and bus bandwidth over message sizes, on every rank of a launch:
 *
 *   rlx launch -n 2 [--backend ring|mpi|nccl] -- build/bench/bench_allsum [--device cpu|gpu]
 *              [--min-kib K] [--max-mib M] [--rounds R]
 *
 * Three ways to sum a float32 vector over the group, timed interleaved (each round runs every
 * variant in turn, the same number of calls on every rank; medians over the rounds):
 *   rlx host:  rlx_dist_all_sum on a host tensor (a copy in, the collective, a copy out);
 *   rlx graph: a compiled executable y = AllReduce(x) with x a device handle and y not read back
 *              (what a tensor-parallel layer pays);
 *   MLX:       mx::distributed::all_sum on a device array, evaluated (the peer, mlx_dist_peer.cpp).
 * Rank 0 prints per size the median time per call and the bus bandwidth of the graph op and of
 * MLX, busbw = bytes / time * 2 (n - 1) / n (the NCCL tests' convention: the bytes each rank sends
 * and receives in a ring all-reduce), and graph / MLX. Sizes from --min-kib (default 4) to
 * --max-mib (default 64) by factors of 4. Exit status 0 on success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlx_dist_peer.h"
#include "bench_util.h"
#include "rlx/rlx.h"

enum { VARIANTS = 3, MAX_ROUNDS = 64 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The AllReduce executable on a device handle of n floats. */
static rlx_status *graph_make(rlx_dist_group *g, rlx_device dev, int64_t n, const rlx_tensor *x, rlx_graph **og, rlx_executable **oex) {
  rlx_type t = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {n}};
  rlx_value xi, y;
  RLX_RETURN_IF_ERROR(rlx_graph_create(og));
  RLX_RETURN_IF_ERROR(rlx_graph_add_input(*og, "x", &t, &xi));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(*og, RLX_OP_ALL_REDUCE, "sum", 1, &xi, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")}, &y));
  RLX_RETURN_IF_ERROR(rlx_graph_set_outputs(*og, 1, &y));
  RLX_RETURN_IF_ERROR(rlx_executable_create(*og, dev, RLX_MODE_COMPILED, oex));
  RLX_RETURN_IF_ERROR(rlx_executable_set_group(*oex, g));
  RLX_RETURN_IF_ERROR(rlx_executable_bind_device_handle(*oex, "x", x));
  return rlx_executable_set_output_readback(*oex, 0, false);
}

int main(int argc, char **argv) {
  rlx_device dev = RLX_DEVICE_CPU;
  double min_kib = 4, max_mib = 64;
  int rounds = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--device")) {
      rlx_status *st = rlx_device_from_name(argv[i + 1], &dev);
      if (st) return bench_fail("bench_allsum", st);
    } else if (!strcmp(argv[i], "--min-kib")) min_kib = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-mib")) max_mib = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
  }
  if (rounds < 1 || rounds > MAX_ROUNDS || !(min_kib > 0) || !(max_mib > 0)) {
    fprintf(stderr, "usage: bench_allsum [--device cpu|gpu] [--min-kib K] [--max-mib M] [--rounds 1..%d]\n", MAX_ROUNDS);
    return 2;
  }
  rlx_dist_group *g;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, true, &g);
  if (st) return bench_fail("bench_allsum", st);
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  const char *be = rlx_dist_backend_name(rlx_dist_group_backend(g));
  char devname[128];
  rlx_device_describe(dev, devname, sizeof devname);
  if (rank == 0) {
    printf("all_sum of float32 over %d ranks, MLX %s %s backend, %s; median of %d rounds\n", size, rlx_mlx_version(), be, devname, rounds);
    printf("%10s %12s %12s %12s %14s %14s %12s\n", "bytes", "rlx host us", "rlx graph us", "MLX us", "graph busbw", "MLX busbw",
           "graph/MLX");
  }
  int rc = 0;
  for (double bytes = min_kib * 1024; bytes <= max_mib * 1048576 * 1.0001 && !rc; bytes *= 4) {
    int64_t n = (int64_t)(bytes / 4);
    int iters = (int)fmax(2, fmin(50, 8.0 * 1048576 / bytes)); /* the same on every rank */
    rlx_tensor *x = NULL, *y = NULL;
    rlx_graph *gr = NULL;
    rlx_executable *ex = NULL;
    st = rlx_tensor_create(RLX_DTYPE_F32, 1, (const int64_t[]){n}, NULL, 0, &x);
    for (int64_t i = 0; !st && i < n; i++) ((float *)rlx_tensor_data(x))[i] = 1.0f;
    if (!st) st = graph_make(g, dev, n, x, &gr, &ex);
    dist_peer *peer = st ? NULL : dist_peer_create(be, dev == RLX_DEVICE_GPU, (size_t)n);
    if (!st && !peer) st = rlx_status_make(RLX_STATUS_INTERNAL, "the MLX peer failed to start");
    double t[VARIANTS][MAX_ROUNDS];
    /* warm up (traces the compiled function), then rounds of interleaved variants */
    for (int r = -1; r < rounds && !st; r++) {
      for (int v = 0; v < VARIANTS && !st; v++) {
        double t0 = now_s();
        for (int k = 0; k < iters && !st; k++) {
          if (v == 0) {
            st = rlx_dist_all_sum(g, x, &y);
            rlx_tensor_free(y), y = NULL;
          } else if (v == 1) {
            rlx_tensor *out = NULL;
            st = rlx_executable_run(ex, 0, NULL, NULL, 1, &out);
            rlx_tensor_free(out);
          } else if (!dist_peer_all_sum(peer)) {
            st = rlx_status_make(RLX_STATUS_INTERNAL, "MLX all_sum failed");
          }
        }
        if (r >= 0) t[v][r] = (now_s() - t0) / iters;
      }
    }
    if (!st) {
      double m[VARIANTS];
      for (int v = 0; v < VARIANTS; v++) m[v] = bench_median(t[v], rounds);
      double f = 2.0 * (size - 1) / size * bytes / 1e9;
      if (rank == 0)
        printf("%10.0f %12.1f %12.1f %12.1f %11.2f GB/s %11.2f GB/s %12.2f\n", bytes, m[0] * 1e6, m[1] * 1e6, m[2] * 1e6, f / m[1],
               f / m[2], m[1] / m[2]);
      fflush(stdout);
    } else {
      rc = bench_fail("bench_allsum", st);
    }
    dist_peer_free(peer);
    rlx_executable_free(ex);
    rlx_graph_free(gr);
    rlx_tensor_free(x);
  }
  rlx_dist_group_free(g);
  return rc;
}
