/* bench_allsum: all_sum latency and bus bandwidth over message sizes, on every rank of a launch:
 *
 *   rlx launch -n 2 [--backend ring|mpi|nccl] -- build/bench/bench_allsum [--device cpu|gpu]
 *              [--min-kib K] [--max-mib M] [--rounds R] [--iters N] [--variants host,graph,mlx]
 *              [--pipelined] [--peer-input device|uploaded]
 *
 * Three ways to sum a float32 vector over the group (--variants picks some; default all three):
 *   host:  rlx_dist_all_sum on a host tensor (a copy in, the collective, a copy out);
 *   graph: a compiled executable y = AllReduce(x) with x a device handle and y not read back
 *          (what a tensor-parallel layer pays);
 *   mlx:   mx::distributed::all_sum on a device array, evaluated (the peer, mlx_dist_peer.cpp):
 *          computed on the device (mx::ones; the default), or with --peer-input uploaded copied
 *          from host memory as rlx uploads the graph's handle (on CUDA that is unified memory;
 *          mx::ones's result is device memory: the two tell whether the kind of memory matters).
 * Each round times, per variant, one block of N calls (the same N on every rank; default
 * max(2, min(50, 8 MiB / bytes)) on the CPU, torch's max(5, min(50, 256 MiB / bytes)) on the
 * GPU), preceded by one untimed call of that variant: buffers another variant left in MLX's cache
 * (host-resident unified memory on a GPU, after the host variant's readback) are not charged to
 * the next one. Variants interleave within a round; medians over the rounds, per call.
 * Without --pipelined each call waits for its result before the next starts (latency); with it,
 * the graph op is committed N times (rlx_executable_commit) and synced once, and MLX's all_sum is
 * scheduled N times (async_eval) and waited for once: how PyTorch's all_reduce is timed
 * (bench/allsum_torch.py: N calls, one cuda synchronize). The host variant always waits.
 * Rank 0 prints per size the median time per call of each variant ("-" when not run), the bus
 * bandwidth of the graph op and of MLX, busbw = bytes / time * 2 (n - 1) / n (the NCCL tests'
 * convention: the bytes each rank sends and receives in a ring all-reduce), and graph / MLX time.
 * Sizes from --min-kib (default 4) to --max-mib (default 64) by factors of 4. Exit status 0 on
 * success. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "mlx_dist_peer.h"
#include "rlx/rlx.h"

enum { HOST, GRAPH, MLX, VARIANTS, MAX_ROUNDS = 64 };
static const char *const variant_names[VARIANTS] = {"host", "graph", "mlx"};

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

typedef struct bench {
  rlx_dist_group *g;
  const rlx_tensor *x;
  rlx_executable *ex;
  dist_peer *peer;
  bool pipelined;
} bench;

/* k calls of variant v. */
static rlx_status *calls(const bench *b, int v, int k) {
  rlx_status *st = NULL;
  if (v == HOST) {
    for (int i = 0; i < k && !st; i++) {
      rlx_tensor *y = NULL;
      st = rlx_dist_all_sum(b->g, b->x, &y);
      rlx_tensor_free(y);
    }
  } else if (v == GRAPH && b->pipelined) {
    for (int i = 0; i < k && !st; i++) st = rlx_executable_commit(b->ex, 0, NULL, NULL);
    rlx_status *s2 = rlx_executable_sync(b->ex, 0, NULL); /* also after a failed commit: nothing left pending */
    if (!st) st = s2;
    else rlx_status_free(s2);
  } else if (v == GRAPH) {
    for (int i = 0; i < k && !st; i++) {
      rlx_tensor *out = NULL;
      st = rlx_executable_run(b->ex, 0, NULL, NULL, 1, &out);
      rlx_tensor_free(out);
    }
  } else if (!dist_peer_all_sum(b->peer, k, b->pipelined)) {
    st = rlx_status_make(RLX_STATUS_INTERNAL, "MLX all_sum failed");
  }
  return st;
}

static bool parse_variants(const char *s, bool *on) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  for (int v = 0; v < VARIANTS; v++) on[v] = false;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int v = 0;
    while (v < VARIANTS && strcmp(tok, variant_names[v])) v++;
    if (v == VARIANTS) return false;
    on[v] = true;
  }
  return on[HOST] || on[GRAPH] || on[MLX];
}

static void print_us(double us) {
  if (isnan(us)) printf(" %12s", "-");
  else printf(" %12.1f", us);
}

static void print_bw(double gbps) {
  if (isnan(gbps)) printf(" %14s", "-");
  else printf(" %9.2f GB/s", gbps);
}

int main(int argc, char **argv) {
  rlx_device dev = RLX_DEVICE_CPU;
  double min_kib = 4, max_mib = 64;
  int rounds = 7, fixed_iters = 0;
  bool on[VARIANTS] = {true, true, true}, pipelined = false, uploaded = false, usage = false;
  for (int i = 1; i < argc && !usage; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--pipelined")) {
      pipelined = true;
      continue;
    }
    if (!val) {
      usage = true;
      break;
    }
    i++;
    if (!strcmp(a, "--device")) {
      rlx_status *st = rlx_device_from_name(val, &dev);
      if (st) return bench_fail("bench_allsum", st);
    } else if (!strcmp(a, "--min-kib")) min_kib = atof(val);
    else if (!strcmp(a, "--max-mib")) max_mib = atof(val);
    else if (!strcmp(a, "--rounds")) rounds = atoi(val);
    else if (!strcmp(a, "--iters")) fixed_iters = atoi(val);
    else if (!strcmp(a, "--variants")) usage = !parse_variants(val, on);
    else if (!strcmp(a, "--peer-input")) uploaded = !strcmp(val, "uploaded"), usage = !uploaded && strcmp(val, "device");
    else usage = true;
  }
  if (usage || rounds < 1 || rounds > MAX_ROUNDS || fixed_iters < 0 || !(min_kib > 0) || !(max_mib > 0)) {
    fprintf(stderr,
            "usage: bench_allsum [--device cpu|gpu] [--min-kib K] [--max-mib M] [--rounds 1..%d] [--iters N] "
            "[--variants host,graph,mlx] [--pipelined] [--peer-input device|uploaded]\n",
            MAX_ROUNDS);
    return 2;
  }
  rlx_dist_group *g;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, true, &g);
  if (st) return bench_fail("bench_allsum", st);
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  const char *be = rlx_dist_backend_name(rlx_dist_group_backend(g));
  bool gpu = dev == RLX_DEVICE_GPU;
  char devname[128];
  rlx_device_describe(dev, devname, sizeof devname);
  if (rank == 0) {
    printf("all_sum of float32 over %d ranks, MLX %s %s backend, %s; %s calls; MLX's input %s; median of %d rounds\n", size,
           rlx_mlx_version(), be, devname, pipelined ? "pipelined" : "synchronous", uploaded ? "uploaded" : "computed on the device",
           rounds);
    printf("%10s %12s %12s %12s %14s %14s %12s\n", "bytes", "host us", "graph us", "mlx us", "graph busbw", "mlx busbw", "graph/mlx");
  }
  int rc = 0;
  for (double bytes = min_kib * 1024; bytes <= max_mib * 1048576 * 1.0001 && !rc; bytes *= 4) {
    int64_t n = (int64_t)(bytes / 4);
    int iters = fixed_iters ? fixed_iters : gpu ? (int)fmax(5, fmin(50, 268435456.0 / bytes)) : (int)fmax(2, fmin(50, 8388608.0 / bytes));
    rlx_tensor *x = NULL;
    rlx_graph *gr = NULL;
    bench b = {.g = g, .pipelined = pipelined};
    st = rlx_tensor_create(RLX_DTYPE_F32, 1, (const int64_t[]){n}, NULL, 0, &x);
    for (int64_t i = 0; !st && i < n; i++) ((float *)rlx_tensor_data(x))[i] = 1.0f;
    b.x = x;
    if (!st && on[GRAPH]) st = graph_make(g, dev, n, x, &gr, &b.ex);
    if (!st && on[MLX] && !(b.peer = dist_peer_create(be, gpu, (size_t)n, uploaded)))
      st = rlx_status_make(RLX_STATUS_INTERNAL, "the MLX peer failed to start");
    double t[VARIANTS][MAX_ROUNDS];
    /* a warm-up round (traces the compiled function), then rounds of interleaved variants, each
     * timed block after one untimed call */
    for (int r = -1; r < rounds && !st; r++) {
      for (int v = 0; v < VARIANTS && !st; v++) {
        if (!on[v]) continue;
        st = calls(&b, v, 1);
        double t0 = bench_now_ms();
        if (!st) st = calls(&b, v, iters);
        if (r >= 0) t[v][r] = (bench_now_ms() - t0) * 1e-3 / iters;
      }
    }
    if (!st) {
      double m[VARIANTS];
      for (int v = 0; v < VARIANTS; v++) m[v] = on[v] ? bench_median(t[v], rounds) : NAN;
      double f = 2.0 * (size - 1) / size * bytes / 1e9;
      if (rank == 0) {
        printf("%10.0f", bytes);
        for (int v = 0; v < VARIANTS; v++) print_us(m[v] * 1e6);
        print_bw(f / m[GRAPH]);
        print_bw(f / m[MLX]);
        if (isnan(m[GRAPH] / m[MLX])) printf(" %12s\n", "-");
        else printf(" %12.2f\n", m[GRAPH] / m[MLX]);
      }
      fflush(stdout);
    } else {
      rc = bench_fail("bench_allsum", st);
    }
    dist_peer_free(b.peer);
    rlx_executable_free(b.ex);
    rlx_graph_free(gr);
    rlx_tensor_free(x);
  }
  rlx_dist_group_free(g);
  return rc;
}
