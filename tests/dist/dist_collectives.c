/* dist_collectives.c: the transport (rlx/dist.h) and the collective graph ops, checked on every
 * rank against closed-form results: rank r contributes values that are simple functions of r
 * and the element index, so the sum, max, min and gathered tensors over `size` ranks are known.
 *
 *   dist_collectives [--strict] [--gpu]  (under rlx launch / mpirun, or alone: the singleton group;
 *                                         --gpu: the graph ops run in GPU executables)
 *
 * Exit status 0 when every check passed on this rank, 1 otherwise (each failure is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h" /* to look at the optimized graph's nodes */
#include "rlx/rlx.h"

static int failures;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      failures++;                                         \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
      printf(__VA_ARGS__);                                \
      printf("\n");                                       \
    }                                                     \
  } while (0)

/* Expects st to be NULL (code 0) or to have `code`; frees it. */
static void expect(rlx_status *st, rlx_status_code code, const char *what) {
  CHECK(rlx_status_code_of(st) == code, "%s: expected %s, got %s: %s", what, rlx_status_code_name(code),
        rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  if (st && code) printf("ok (expected error) %s: %s\n", what, rlx_status_message(st));
  rlx_status_free(st);
}

static rlx_tensor *make(rlx_dtype dt, int rank, const int64_t *dims, double (*f)(int r, int64_t i), int r) {
  rlx_tensor *t;
  if (rlx_tensor_create(dt, rank, dims, NULL, 0, &t)) return NULL;
  int64_t n = rlx_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = f(r, i);
    void *p = (char *)rlx_tensor_data(t) + i * (int64_t)rlx_dtype_size(dt);
    switch (dt) {
      case RLX_DTYPE_F32: *(float *)p = (float)v; break;
      case RLX_DTYPE_F64: *(double *)p = v; break;
      case RLX_DTYPE_I32: *(int32_t *)p = (int32_t)v; break;
      case RLX_DTYPE_I64: *(int64_t *)p = (int64_t)v; break;
      case RLX_DTYPE_I16: *(int16_t *)p = (int16_t)v; break;
      case RLX_DTYPE_U8: *(uint8_t *)p = (uint8_t)v; break;
      default: break;
    }
  }
  return t;
}

static double f_sum(int r, int64_t i) { return r + 0.5 * (double)i; }
static double f_mix(int r, int64_t i) { return (double)((r * 7 + i * 3) % 11) - 5; }
static double f_gather(int r, int64_t i) { return 1000.0 * r + (double)i; }

static void host_collectives(rlx_dist_group *g) {
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  rlx_dist_backend be = rlx_dist_group_backend(g);
  int64_t d5[] = {5}, d23[] = {2, 3}, d8[] = {8};
  rlx_tensor *x, *y;

  /* all_sum float32: sum_r (r + i/2) = size (size-1) / 2 + size i / 2 */
  x = make(RLX_DTYPE_F32, 1, d5, f_sum, rank);
  expect(rlx_dist_all_sum(g, x, &y), 0, "all_sum f32");
  for (int i = 0; y && i < 5; i++) {
    double want = size * (size - 1) / 2.0 + size * 0.5 * i;
    CHECK(rlx_tensor_get_f64(y, i) == want, "all_sum[%d] = %g, want %g", i, rlx_tensor_get_f64(y, i), want);
  }
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* all_max / all_min int32 and float64 */
  for (int k = 0; k < 2; k++) {
    rlx_dtype dt = k ? RLX_DTYPE_F64 : RLX_DTYPE_I32;
    x = make(dt, 2, d23, f_mix, rank);
    rlx_tensor *mx = NULL, *mn = NULL;
    rlx_status_code want = k && be == RLX_DIST_NCCL ? RLX_STATUS_UNIMPLEMENTED : RLX_STATUS_OK; /* no float64 on GPUs */
    expect(rlx_dist_all_max(g, x, &mx), want, "all_max");
    expect(rlx_dist_all_min(g, x, &mn), want, "all_min");
    for (int i = 0; mx && mn && i < 6; i++) {
      double hi = -1e9, lo = 1e9;
      for (int r = 0; r < size; r++) hi = fmax(hi, f_mix(r, i)), lo = fmin(lo, f_mix(r, i));
      CHECK(rlx_tensor_get_f64(mx, i) == hi && rlx_tensor_get_f64(mn, i) == lo, "%s max/min[%d] = %g/%g, want %g/%g",
            rlx_dtype_name(dt), i, rlx_tensor_get_f64(mx, i), rlx_tensor_get_f64(mn, i), hi, lo);
    }
    rlx_tensor_free(x), rlx_tensor_free(mx), rlx_tensor_free(mn);
  }

  /* all_gather int64 [2,3] -> [2 size, 3] in rank order */
  x = make(RLX_DTYPE_I64, 2, d23, f_gather, rank);
  expect(rlx_dist_all_gather(g, x, &y), 0, "all_gather");
  if (y) {
    CHECK(rlx_tensor_rank(y) == 2 && rlx_tensor_dims(y)[0] == 2 * size && rlx_tensor_dims(y)[1] == 3, "all_gather shape");
    for (int64_t i = 0; i < 6 * size; i++)
      CHECK(rlx_tensor_get_f64(y, i) == f_gather((int)(i / 6), i % 6), "all_gather[%lld] = %g", (long long)i, rlx_tensor_get_f64(y, i));
  }
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* a scalar gathers to [size] */
  x = make(RLX_DTYPE_F32, 0, NULL, f_sum, rank);
  expect(rlx_dist_all_gather(g, x, &y), 0, "all_gather scalar");
  if (y) CHECK(rlx_tensor_rank(y) == 1 && rlx_tensor_dims(y)[0] == size && rlx_tensor_get_f64(y, size - 1) == size - 1, "gathered scalar");
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* an empty tensor reduces to an empty tensor */
  int64_t d0[] = {0, 4};
  x = make(RLX_DTYPE_F32, 2, d0, f_sum, rank);
  expect(rlx_dist_all_sum(g, x, &y), 0, "all_sum empty");
  if (y) CHECK(rlx_tensor_numel(y) == 0 && rlx_tensor_dims(y)[1] == 4, "empty all_sum shape");
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* sum_scatter: MLX has it on nccl only; the singleton group returns x */
  x = make(RLX_DTYPE_F32, 1, d8, f_sum, rank);
  rlx_status_code want = be == RLX_DIST_RING || be == RLX_DIST_MPI ? RLX_STATUS_UNIMPLEMENTED : RLX_STATUS_OK;
  expect(rlx_dist_sum_scatter(g, x, &y), want, "sum_scatter");
  if (y) CHECK(rlx_tensor_numel(y) == 8 / size, "sum_scatter size");
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;
  int64_t d7[] = {7};
  x = make(RLX_DTYPE_F32, 1, d7, f_sum, rank);
  if (size > 1) expect(rlx_dist_sum_scatter(g, x, &y), RLX_STATUS_INVALID_ARGUMENT, "sum_scatter of 7 rows");
  rlx_tensor_free(x);

  /* bool reductions: fine on ring, UNIMPLEMENTED on mpi (checked before MLX) */
  bool bits[3] = {rank == 0, true, false};
  int64_t d3[] = {3};
  expect(rlx_tensor_wrap(RLX_DTYPE_BOOL, 1, d3, bits, 3, &x), 0, "wrap bools");
  y = NULL;
  expect(rlx_dist_all_max(g, x, &y), be == RLX_DIST_MPI || be == RLX_DIST_NCCL ? RLX_STATUS_UNIMPLEMENTED : RLX_STATUS_OK, "all_max bool");
  if (y) CHECK(rlx_tensor_get_f64(y, 0) == 1 && rlx_tensor_get_f64(y, 1) == 1 && rlx_tensor_get_f64(y, 2) == 0, "bool max");
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* float8 is storage only: no sum (any group of more than one rank) */
  if (size > 1) {
    uint8_t f8[2] = {0x38, 0x40};
    int64_t d2[] = {2};
    expect(rlx_tensor_wrap(RLX_DTYPE_F8E4M3FN, 1, d2, f8, 2, &x), 0, "wrap float8");
    expect(rlx_dist_all_sum(g, x, &y), RLX_STATUS_UNIMPLEMENTED, "all_sum float8");
    rlx_tensor_free(x);
  }

  expect(rlx_dist_barrier(g), 0, "barrier");
}

static void point_to_point(rlx_dist_group *g) {
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  rlx_dist_backend be = rlx_dist_group_backend(g);
  rlx_tensor *x = NULL, *y = NULL;
  int64_t d[] = {2, 0};
  if (size == 1) {
    x = make(RLX_DTYPE_I16, 1, d, f_gather, rank);
    expect(rlx_dist_send(g, x, 0), RLX_STATUS_INVALID_ARGUMENT, "send to self");
    rlx_tensor_free(x);
    return;
  }
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  if (be == RLX_DIST_NCCL) { /* MLX's NCCL backend has no point to point */
    expect(rlx_dist_send_bytes(g, right, "x", 1), RLX_STATUS_UNIMPLEMENTED, "nccl send");
    rlx_dist_group *sub = NULL;
    expect(rlx_dist_split(g, rank % 2, -1, &sub), 0, "nccl split");
    rlx_dist_group_free(sub);
    return;
  }
  /* a tensor whose shape the receiver does not know: int16 [2, sender + 1] */
  d[1] = rank + 1;
  x = make(RLX_DTYPE_I16, 2, d, f_gather, rank);
  expect(rlx_dist_send(g, x, right), 0, "send tensor");
  expect(rlx_dist_recv(g, left, &y), 0, "recv tensor");
  if (y) {
    CHECK(rlx_tensor_dtype(y) == RLX_DTYPE_I16 && rlx_tensor_rank(y) == 2 && rlx_tensor_dims(y)[1] == left + 1, "recv type");
    for (int64_t i = 0; i < rlx_tensor_numel(y); i++)
      CHECK(rlx_tensor_get_f64(y, i) == (double)(int16_t)f_gather(left, i), "recv[%lld]", (long long)i);
  }
  rlx_tensor_free(x), rlx_tensor_free(y), y = NULL;

  /* raw bytes, two frames in a row (FIFO per pair), one empty */
  char msg[64];
  int n = snprintf(msg, sizeof msg, "hello from rank %d", rank);
  expect(rlx_dist_send_bytes(g, right, msg, (size_t)n), 0, "send_bytes");
  expect(rlx_dist_send_bytes(g, right, NULL, 0), 0, "send_bytes empty");
  void *got = NULL;
  size_t len = 0;
  expect(rlx_dist_recv_bytes(g, left, &got, &len), 0, "recv_bytes");
  char want[64];
  int wn = snprintf(want, sizeof want, "hello from rank %d", left);
  CHECK(got && len == (size_t)wn && !memcmp(got, want, len), "recv_bytes got '%.*s'", (int)len, got ? (char *)got : "");
  free(got), got = NULL;
  expect(rlx_dist_recv_bytes(g, left, &got, &len), 0, "recv_bytes empty");
  CHECK(!got && len == 0, "empty frame");

  expect(rlx_dist_send_bytes(g, rank, msg, 1), RLX_STATUS_INVALID_ARGUMENT, "send to self");
  expect(rlx_dist_send_bytes(g, size, msg, 1), RLX_STATUS_INVALID_ARGUMENT, "send past the group");
  if (be == RLX_DIST_RING && size >= 4) expect(rlx_dist_send_bytes(g, (rank + 2) % size, msg, 1), RLX_STATUS_UNIMPLEMENTED, "ring non-neighbour");
  rlx_dist_group *sub = NULL;
  expect(rlx_dist_split(g, rank % 2, -1, &sub), be == RLX_DIST_RING ? RLX_STATUS_UNIMPLEMENTED : RLX_STATUS_OK, "split");
  if (sub) CHECK(rlx_dist_group_size(sub) == (size + 1 - rank % 2) / 2 && rlx_dist_group_rank(sub) == rank / 2, "split rank/size");
  rlx_dist_group_free(sub);
}

/* Graph ops in every mode: y0 = AllReduce(sum, x), y1 = AllReduce(max, x), y2 = AllGather(x,
 * axis 1), y3 = collective.all_reduce(x), with x[2,3] = f_mix(rank, i). */
static rlx_device device = RLX_DEVICE_CPU;

static void graph_ops(rlx_dist_group *g) {
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  rlx_graph *gr;
  rlx_value x, y[4];
  int64_t d23[] = {2, 3};
  rlx_type t;
  expect(rlx_type_make(RLX_DTYPE_F32, 2, d23, &t), 0, "type");
  expect(rlx_dist_register_ops(), 0, "register ops");
  expect(rlx_graph_create(&gr), 0, "graph");
  expect(rlx_graph_add_input(gr, "x", &t, &x), 0, "input");
  rlx_attr sum[] = {RLX_ATTR_S("kind", "sum"), RLX_ATTR_I("group_size", size)};
  rlx_attr max[] = {RLX_ATTR_S("kind", "max")};
  rlx_attr gat[] = {RLX_ATTR_I("axis", 1), RLX_ATTR_I("group_size", size)};
  rlx_attr cus[] = {RLX_ATTR_S("name", RLX_DIST_ALL_REDUCE_OP)};
  expect(rlx_graph_add1(gr, RLX_OP_ALL_REDUCE, "sum", 1, &x, 2, sum, &y[0]), 0, "AllReduce");
  expect(rlx_graph_add1(gr, RLX_OP_ALL_REDUCE, "max", 1, &x, 1, max, &y[1]), 0, "AllReduce max");
  expect(rlx_graph_add1(gr, RLX_OP_ALL_GATHER, "gather", 1, &x, 2, gat, &y[2]), 0, "AllGather");
  expect(rlx_graph_add1(gr, RLX_OP_CUSTOM, "seed", 1, &x, 1, cus, &y[3]), 0, "collective.all_reduce");
  const rlx_type *gt = rlx_graph_value_type(gr, y[2]);
  CHECK(gt && gt->dims[1] == 3 * size, "AllGather infers [2, 3 size]");
  expect(rlx_graph_set_outputs(gr, 4, y), 0, "outputs");
  rlx_tensor *in = make(RLX_DTYPE_F32, 2, d23, f_mix, rank);
  rlx_mode modes[] = {RLX_MODE_LAZY, RLX_MODE_EAGER, RLX_MODE_COMPILED};
  for (int m = 0; m < 3; m++) {
    rlx_executable *ex = NULL;
    expect(rlx_executable_create(gr, device, modes[m], &ex), 0, "executable");
    if (!ex) continue;
    expect(rlx_executable_set_group(ex, g), 0, "set_group");
    for (int rep = 0; rep < 2; rep++) { /* compiled: trace, then replay */
      rlx_tensor *out[4] = {0};
      const char *names[] = {"x"};
      expect(rlx_executable_run(ex, 1, names, (rlx_tensor *const *)&in, 4, out), 0, rlx_mode_name(modes[m]));
      for (int i = 0; out[0] && i < 6; i++) {
        double s = 0, hi = -1e9;
        for (int r = 0; r < size; r++) s += f_mix(r, i), hi = fmax(hi, f_mix(r, i));
        CHECK(rlx_tensor_get_f64(out[0], i) == s && rlx_tensor_get_f64(out[3], i) == s, "%s sum[%d]", rlx_mode_name(modes[m]), i);
        CHECK(rlx_tensor_get_f64(out[1], i) == hi, "%s max[%d]", rlx_mode_name(modes[m]), i);
      }
      for (int64_t i = 0; out[2] && i < 6 * size; i++) { /* [2, 3 size]: row a, column r*3 + b */
        int64_t a = i / (3 * size), c = i % (3 * size), r = c / 3, b = c % 3;
        CHECK(rlx_tensor_get_f64(out[2], i) == f_mix((int)r, a * 3 + b), "%s gather[%lld]", rlx_mode_name(modes[m]), (long long)i);
      }
      for (int i = 0; i < 4; i++) rlx_tensor_free(out[i]);
    }
    rlx_executable_free(ex);
  }
  /* ReduceScatter along axis 1: x[2, 4 size] -> [2, 4], rank r's chunk of the sum; 3 columns do
   * not split over 2 ranks (graph build error); ring and mpi lack it (UNIMPLEMENTED at the run) */
  {
    rlx_graph *gs = NULL;
    rlx_value xs, ys;
    int64_t dsc[] = {2, 4 * (int64_t)size};
    rlx_type tsc;
    expect(rlx_type_make(RLX_DTYPE_F32, 2, dsc, &tsc), 0, "type");
    expect(rlx_graph_create(&gs), 0, "graph");
    expect(rlx_graph_add_input(gs, "x", &tsc, &xs), 0, "input");
    rlx_attr rs[] = {RLX_ATTR_I("axis", 1), RLX_ATTR_I("group_size", size)};
    expect(rlx_graph_add1(gs, RLX_OP_REDUCE_SCATTER, "rs", 1, &xs, 2, rs, &ys), 0, "ReduceScatter");
    const rlx_type *ts = rlx_graph_value_type(gs, ys);
    CHECK(ts && ts->dims[0] == 2 && ts->dims[1] == 4, "ReduceScatter infers [2, 4]");
    rlx_attr bad[] = {RLX_ATTR_I("axis", 0), RLX_ATTR_I("group_size", 3)};
    rlx_value yb;
    expect(rlx_graph_add1(gs, RLX_OP_REDUCE_SCATTER, "bad", 1, &xs, 2, bad, &yb), RLX_STATUS_INVALID_ARGUMENT, "ReduceScatter of 2 rows over 3");
    expect(rlx_graph_set_outputs(gs, 1, &ys), 0, "outputs");
    rlx_tensor *xin = make(RLX_DTYPE_F32, 2, dsc, f_mix, rank);
    rlx_executable *exs = NULL;
    expect(rlx_executable_create(gs, device, RLX_MODE_COMPILED, &exs), 0, "executable");
    if (exs && xin) {
      rlx_tensor *o = NULL;
      rlx_dist_backend be = rlx_dist_group_backend(g);
      expect(rlx_executable_set_group(exs, g), 0, "set_group");
      rlx_status_code want = be == RLX_DIST_RING || be == RLX_DIST_MPI ? RLX_STATUS_UNIMPLEMENTED : RLX_STATUS_OK;
      expect(rlx_executable_run(exs, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){xin}, 1, &o), want, "ReduceScatter run");
      for (int64_t i = 0; o && i < 8; i++) { /* out[a, b] = sum_r x_r[a, 4 rank + b] */
        int64_t a = i / 4, b = i % 4, col = 4 * rank + b;
        double s = 0;
        for (int r = 0; r < size; r++) s += f_mix(r, a * 4 * size + col);
        CHECK(rlx_tensor_get_f64(o, i) == s, "ReduceScatter[%lld] = %g, want %g", (long long)i, rlx_tensor_get_f64(o, i), s);
      }
      rlx_tensor_free(o);
    }
    rlx_executable_free(exs);
    rlx_tensor_free(xin);
    rlx_graph_free(gs);
  }

  /* a graph written for another group size fails before any communication */
  rlx_graph *g2;
  rlx_value x2, y2;
  expect(rlx_graph_create(&g2), 0, "graph 2");
  expect(rlx_graph_add_input(g2, "x", &t, &x2), 0, "input 2");
  rlx_attr wrong[] = {RLX_ATTR_S("kind", "sum"), RLX_ATTR_I("group_size", size + 1)};
  expect(rlx_graph_add1(g2, RLX_OP_ALL_REDUCE, "wrong", 1, &x2, 2, wrong, &y2), 0, "AllReduce for another size");
  expect(rlx_graph_set_outputs(g2, 1, &y2), 0, "outputs 2");
  rlx_executable *ex2;
  if (!rlx_executable_create(g2, device, RLX_MODE_LAZY, &ex2)) {
    rlx_tensor *o = NULL;
    const char *names[] = {"x"};
    rlx_status *st = rlx_executable_run(ex2, 1, names, (rlx_tensor *const *)&in, 1, &o);
    expect(st, RLX_STATUS_FAILED_PRECONDITION, "group_size mismatch");
    rlx_executable_free(ex2);
  }
  rlx_graph_free(g2);

  /* the optimizer must not fold an AllReduce of a constant into the local value */
  rlx_graph *g3 = NULL, *g3o = NULL;
  rlx_value c3, y3;
  float one = 1;
  rlx_type ts = {.dtype = RLX_DTYPE_F32};
  expect(rlx_graph_create(&g3), 0, "graph");
  expect(rlx_graph_add_constant(g3, &ts, &one, sizeof one, &c3), 0, "constant");
  expect(rlx_graph_add1(g3, RLX_OP_ALL_REDUCE, "sum_const", 1, &c3, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")}, &y3), 0, "AllReduce of a constant");
  expect(rlx_graph_set_outputs(g3, 1, &y3), 0, "outputs");
  expect(rlx_graph_optimize(g3, "all", 0, NULL, NULL, &g3o), 0, "optimize");
  bool kept = false; /* the AllReduce node stays (folding it would communicate at optimization time) */
  for (size_t k = 0; g3o && k < g3o->n_nodes; k++) kept |= g3o->nodes[k].op == RLX_OP_ALL_REDUCE;
  CHECK(kept, "the optimizer removed the AllReduce of a constant");
  rlx_executable *ex3 = NULL;
  if (g3o) expect(rlx_executable_create(g3o, device, RLX_MODE_LAZY, &ex3), 0, "executable");
  if (ex3) {
    rlx_tensor *o = NULL;
    expect(rlx_executable_set_group(ex3, g), 0, "set_group");
    expect(rlx_executable_run(ex3, 0, NULL, NULL, 1, &o), 0, "run optimized");
    if (o) CHECK(rlx_tensor_get_f64(o, 0) == size, "optimized AllReduce of 1 = %g, want %d", rlx_tensor_get_f64(o, 0), size);
    rlx_tensor_free(o);
    rlx_executable_free(ex3);
  }
  rlx_graph_free(g3o);
  rlx_graph_free(g3);
  rlx_tensor_free(in);
  rlx_graph_free(gr);
  expect(rlx_custom_op_unregister(RLX_DIST_ALL_REDUCE_OP), 0, "unregister");
}

int main(int argc, char **argv) {
  bool strict = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--strict")) strict = true;
    if (!strcmp(argv[i], "--gpu")) device = RLX_DEVICE_GPU;
  }
  rlx_dist_group *g = NULL;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, strict, &g);
  if (st) {
    printf("init failed: %s\n", rlx_status_message(st));
    rlx_status_free(st);
    return 1;
  }
  printf("rank %d of %d (%s)\n", rlx_dist_group_rank(g), rlx_dist_group_size(g), rlx_dist_backend_name(rlx_dist_group_backend(g)));
  host_collectives(g);
  point_to_point(g);
  graph_ops(g);
  expect(rlx_dist_barrier(g), 0, "final barrier");
  rlx_dist_group_free(g);
  printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
