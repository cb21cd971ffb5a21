/* measure.c: measuring the calibration figures (rlx/calibrate.h) on one device.
 *
 * The reference's figures are timed on MLX arrays through the shim; rlx's own figures through
 * rlx executables in lazy mode (inputs kept on the device as handles, outputs not read back,
 * unless the figure is about transfers), so that they follow rlx's lowering. Each figure: warm-ups,
 * then the median of the timed samples, each the mean time of the work repeated for at least 10 ms
 * (median: robust to the other processes of a shared machine). RLX_CALIBRATE_CLOCK=cpu times with
 * the process's CPU time instead of the wall clock: with one thread of work (RLX_NUM_THREADS=1,
 * OPENBLAS_NUM_THREADS=1) that is the time the work takes on an idle machine, however loaded this
 * one is (bench/cost_model.py --cpu-time validates the model that way).
 *
 * On a GPU the work is queued and runs asynchronously: one small op per synchronized run times the
 * launch and the synchronization, not the op. There the throughput figures queue many ops per
 * synchronized evaluation (a chain of GPU_CHAIN ops, or GPU_CHAIN independent ones, evaluated
 * once; the reference's shapes and units kept) and rlx's own figures take the time a run of the op
 * adds to an empty run (`base_s`, a tiny one-node run), over a chain of GPU_CHAIN ops or, for ops
 * whose output cannot feed the next, a batch of GPU_BATCH. On the CPU every op runs synchronously
 * and each figure is one op per run, as before. */
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "calib/calib.h"
#include "mlx/exec.h"
#include "mlx/shim/shim.h"
#include "rlx/rlx.h"

#define CAL_WARMUPS 2
#define GPU_CHAIN 32 /* ops queued per synchronized run on a GPU */
#define GPU_BATCH 8  /* batch of the non-chainable ops (pool, resize, conv) on a GPU */

typedef struct measurer {
  rlx_device device;
  rlx_precision precision; /* resolved (fp32 or tf32) */
  int reps;           /* timed samples */
  uint64_t window_ns; /* a sample repeats the work until it has lasted this long: on a shared
                         machine a sample then sees its share of the CPU as a long model run does,
                         not a lucky uninterrupted time slice */
  double *samples; /* reps entries */
  bool cpu_clock;  /* RLX_CALIBRATE_CLOCK=cpu: process CPU time, not the wall clock */
  int chain;       /* ops queued per synchronized run: 1 on the CPU, GPU_CHAIN on a GPU */
  int64_t batch;   /* batch of the non-chainable rlx figures: 1 on the CPU, GPU_BATCH on a GPU */
  double base_s;   /* GPU: seconds of an empty run (a tiny one-node lazy run), < 0 until timed; CPU: 0 */
} measurer;

/* The measurer's clock in ns. */
static uint64_t clock_ns(const measurer *m) {
  struct timespec ts;
  if (!m->cpu_clock || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)) return rlx_now_ns();
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static rlx_precision resolved_precision(rlx_device device, const rlx_calibrate_options *opts) {
  rlx_precision p = opts ? opts->precision : RLX_PRECISION_DEFAULT;
  if (device == RLX_DEVICE_CPU) return RLX_PRECISION_FP32;
  return p == RLX_PRECISION_TF32 || (p == RLX_PRECISION_DEFAULT && rlx_exec_default_precision() == RLX_PRECISION_TF32)
             ? RLX_PRECISION_TF32
             : RLX_PRECISION_FP32;
}

const char *rlx_calib_precision_name(rlx_device device, const rlx_calibrate_options *opts) {
  return rlx_precision_name(resolved_precision(device, opts));
}

void rlx_calib_device_name(rlx_device device, char *buf, size_t cap) {
  if (device == RLX_DEVICE_GPU) {
    rlx_device_describe(device, buf, cap);
    return;
  }
  /* MLX names the CPU "cpu"; the CPU model distinguishes machines that share a home directory */
  char model[96] = "";
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) || !colon) continue;
    colon += 1 + (colon[1] == ' ');
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(model, sizeof model, "%s", colon);
    break;
  }
  if (f) fclose(f);
  /* rlx's CPU kernels run on a pool of this many threads: figures measured with another count
   * belong to another device name (and cache file) */
  snprintf(buf, cap, "cpu: %s, %d threads", model[0] ? model : "unknown model", rlx_mx_num_threads());
}

/* ---- figures on MLX arrays (the reference's) ---- */

/* One timed body: builds the work from the kept operands in c's arena and evaluates it. */
typedef void (*mx_body)(rlx_mx *c, rlx_mx_arr *const *ops, int iters);

static void body_matmul(rlx_mx *c, rlx_mx_arr *const *ops, int iters) {
  rlx_mx_arr *x = ops[0];
  for (int i = 0; i < iters; i++) x = rlx_mx_matmul(c, x, ops[1]);
  rlx_mx_eval(c, &x, 1);
}

/* iters adds chained: y = x + b, y = y + b, ... (b = 0 keeps y at x) */
static void body_add(rlx_mx *c, rlx_mx_arr *const *ops, int iters) {
  rlx_mx_arr *y = ops[0];
  for (int i = 0; i < iters; i++) y = rlx_mx_binary(c, RLX_MXB_ADD, y, ops[1]);
  rlx_mx_eval(c, &y, 1);
}

/* iters attentions chained: y = sdpa(y, y, y) (a weighted mean of rows of 0.5 stays 0.5) */
static void body_sdpa(rlx_mx *c, rlx_mx_arr *const *ops, int iters) {
  rlx_mx_arr *y = ops[0];
  for (int i = 0; i < iters; i++) y = rlx_mx_sdpa(c, y, y, y, 0.125f, "", NULL);
  rlx_mx_eval(c, &y, 1);
}

/* iters independent sums of x, evaluated together */
static void body_sum(rlx_mx *c, rlx_mx_arr *const *ops, int iters) {
  int axis = -1;
  rlx_mx_arr *y[GPU_CHAIN];
  for (int i = 0; i < iters; i++) y[i] = rlx_mx_reduce(c, ops[0], 0, 1, &axis, false);
  rlx_mx_eval(c, y, iters);
}

/* Median seconds of `body` over operands full(dims_i, value_i) (float32), kept on the device. */
typedef struct mx_operand {
  int rank;
  int64_t dims[4];
  double value;
} mx_operand;

static rlx_status *time_mx(measurer *m, mx_body body, int iters, size_t n_ops, const mx_operand *spec, double *out_s) {
  rlx_mx *c = NULL;
  RLX_TRY(rlx_mx_create(m->device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU, &c));
  rlx_mx_arr *kept[4] = {0};
  for (size_t i = 0; i < n_ops; i++) {
    /* contiguous: MLX's full is a broadcast (stride 0) that ops would read through their slow
     * general-stride paths or copy inside the timed loop */
    rlx_mx_arr *a = rlx_mx_contiguous(c, rlx_mx_full(c, spec[i].rank, spec[i].dims, spec[i].value, RLX_DTYPE_F32));
    rlx_mx_eval(c, &a, 1);
    kept[i] = rlx_mx_keep(c, a);
  }
  for (int r = 0; r < CAL_WARMUPS + m->reps && !rlx_mx_failed(c); r++) {
    uint64_t t0 = clock_ns(m), dt;
    int n = 0;
    do {
      body(c, kept, iters);
      rlx_mx_clear(c);
      n++;
    } while ((dt = clock_ns(m) - t0) < m->window_ns && !rlx_mx_failed(c));
    if (r >= CAL_WARMUPS) m->samples[r - CAL_WARMUPS] = (double)dt * 1e-9 / n;
  }
  rlx_status *st = rlx_mx_take_error(c);
  for (size_t i = 0; i < n_ops; i++) rlx_mx_release(kept[i]);
  rlx_mx_free(c);
  if (st) return st;
  *out_s = median(m->samples, m->reps);
  return NULL;
}

/* ---- figures through rlx executables (rlx's own) ---- */

/* A graph y = op(x, params...) or a chain; built by a builder, run with x as a device handle and
 * the outputs left on the device. */
typedef rlx_status *(*graph_builder)(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y);

typedef struct conv_spec {
  int64_t c_out, c_in_per_group, k, group;
} conv_spec;

static rlx_status *build_conv(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  const conv_spec *s = ud;
  rlx_type tw = {.dtype = RLX_DTYPE_F32, .rank = 4, .dims = {s->c_out, s->c_in_per_group, s->k, s->k}};
  rlx_value w;
  char name[16];
  snprintf(name, sizeof name, "w%d", i);
  RLX_TRY(rlx_graph_add_param(g, name, &tw, &w));
  int64_t pads[4] = {s->k / 2, s->k / 2, s->k / 2, s->k / 2};
  rlx_attr attrs[] = {RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_I("group", s->group)};
  return rlx_graph_add1(g, RLX_OP_CONV, "conv", 2, (rlx_value[]){x, w}, 2, attrs, y);
}

/* y = op(x) for a unary op (ud: the rlx_op). */
static rlx_status *build_unary(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  return rlx_graph_add1(g, *(const rlx_op *)ud, NULL, 1, &x, 0, NULL, y);
}

/* y = -(x^T): a consumer reading a transposed (strided) view. */
static rlx_status *build_transpose(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  int64_t perm[] = {1, 0};
  rlx_attr a = RLX_ATTR_IS("perm", 2, perm);
  rlx_value t;
  RLX_TRY(rlx_graph_add1(g, RLX_OP_TRANSPOSE, NULL, 1, &x, 1, &a, &t));
  return rlx_graph_add1(g, RLX_OP_NEG, NULL, 1, &t, 0, NULL, y);
}

/* MaxPool 3x3, stride 2, pads 1. */
static rlx_status *build_pool(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  int64_t k[] = {3, 3}, s[] = {2, 2}, p[] = {1, 1, 1, 1};
  rlx_attr a[] = {RLX_ATTR_S("kind", "max"), RLX_ATTR_IS("kernel_shape", 2, k), RLX_ATTR_IS("strides", 2, s),
                  RLX_ATTR_IS("pads", 4, p)};
  return rlx_graph_add1(g, RLX_OP_POOL, NULL, 1, &x, 4, a, y);
}

/* Resize nearest 2x on the spatial dims (the zoo's upsampling). */
static rlx_status *build_resize(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  const rlx_type *t = ud;
  int64_t sizes[] = {t->dims[0], t->dims[1], 2 * t->dims[2], 2 * t->dims[3]};
  rlx_attr a[] = {RLX_ATTR_IS("sizes", 4, sizes), RLX_ATTR_S("mode", "nearest"), RLX_ATTR_S("coordinate_transformation_mode", "asymmetric"),
                  RLX_ATTR_S("nearest_mode", "floor")};
  return rlx_graph_add1(g, RLX_OP_RESIZE, NULL, 1, &x, 4, a, y);
}

static rlx_status *build_add_chain(rlx_graph *g, rlx_value x, const void *ud, int i, rlx_value *y) {
  int n = *(const int *)ud;
  for (int j = 0; j < n; j++) RLX_TRY(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){x, x}, 0, NULL, &x));
  *y = x;
  return NULL;
}

/* Sets every param of the executable to zeros of its declared type. */
static rlx_status *zero_params(rlx_executable *ex, const rlx_graph *g) {
  for (size_t i = 0; i < rlx_graph_num_params(g); i++) {
    const rlx_type *t = rlx_graph_value_type(g, rlx_graph_param_value(g, i));
    rlx_tensor *v = NULL;
    RLX_TRY(rlx_tensor_create(t->dtype, t->rank, t->dims, NULL, 0, &v));
    rlx_status *st = rlx_executable_set_param(ex, rlx_graph_param_name(g, i), v);
    rlx_tensor_free(v);
    RLX_TRY(st);
  }
  return NULL;
}

/* Median seconds of a run of `chain` ops (each fed the previous one's output). host_io: x passed
 * from the host and y read back each run (as rlx run does); else x is a device handle and y stays
 * on the device. */
static rlx_status *time_graph(measurer *m, const rlx_type *tx, graph_builder build, const void *ud, int chain, bool host_io,
                              double *out_s) {
  rlx_graph *g = NULL;
  rlx_executable *ex = NULL;
  rlx_tensor *x = NULL;
  rlx_value vx, y;
  rlx_status *st = rlx_graph_create(&g);
  if (!st) st = rlx_graph_add_input(g, "x", tx, &vx);
  y = vx;
  for (int i = 0; !st && i < chain; i++) st = build(g, y, ud, i, &y);
  if (!st) st = rlx_graph_set_outputs(g, 1, &y);
  if (!st) st = rlx_executable_create(g, m->device, RLX_MODE_LAZY, &ex);
  if (!st) st = rlx_executable_set_precision(ex, m->precision);
  if (!st) st = zero_params(ex, g);
  if (!st) st = rlx_tensor_create(tx->dtype, tx->rank, tx->dims, NULL, 0, &x);
  if (!st && !host_io) st = rlx_executable_bind_device_handle(ex, "x", x);
  if (!st && !host_io) st = rlx_executable_set_output_readback(ex, 0, false);
  const char *name = "x";
  for (int r = 0; !st && r < CAL_WARMUPS + m->reps; r++) {
    uint64_t t0 = clock_ns(m), dt;
    int n = 0;
    do {
      rlx_tensor *out = NULL;
      st = rlx_executable_run(ex, host_io, &name, (rlx_tensor *const *)&x, 1, &out);
      rlx_tensor_free(out);
      n++;
    } while ((dt = clock_ns(m) - t0) < m->window_ns && !st);
    if (r >= CAL_WARMUPS) m->samples[r - CAL_WARMUPS] = (double)dt * 1e-9 / n;
  }
  rlx_tensor_free(x);
  rlx_executable_free(ex);
  rlx_graph_free(g);
  if (!st) *out_s = median(m->samples, m->reps);
  return st;
}

/* Median seconds one op (chainable: its output can be its next copy's input) takes within a run
 * in lazy mode, x a device handle, y left on the device. On the CPU: a run of it. On a GPU: what a
 * chain of m->chain of them (else one) adds to an empty run, per op; a floor of a tenth of that
 * run's time per op, as on a loaded machine the difference of two medians may come out <= 0. */
static rlx_status *time_op(measurer *m, const rlx_type *tx, graph_builder build, const void *ud, bool chainable, double *out_s) {
  const rlx_type tiny = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {2}};
  const rlx_op neg = RLX_OP_NEG;
  if (m->base_s < 0) RLX_TRY(time_graph(m, &tiny, build_unary, &neg, 1, false, &m->base_s));
  int chain = chainable ? m->chain : 1;
  double t;
  RLX_TRY(time_graph(m, tx, build, ud, chain, false, &t));
  *out_s = fmax(t - m->base_s, 0.1 * t) / chain;
  return NULL;
}

static bool conv_chainable(int64_t c_in, conv_spec s) { return s.c_out == c_in && s.c_in_per_group * s.group == c_in; }

/* Median seconds of one Conv x[batch,c_in,hw,hw] with s (time_op; m->batch if not chainable). */
static rlx_status *time_conv(measurer *m, int64_t c_in, int64_t hw, conv_spec s, double *out) {
  rlx_type tx = {.dtype = RLX_DTYPE_F32, .rank = 4, .dims = {conv_chainable(c_in, s) ? 1 : m->batch, c_in, hw, hw}};
  return time_op(m, &tx, build_conv, &s, conv_chainable(c_in, s), out);
}

static rlx_status *measure_conv(measurer *m, int64_t c_in, int64_t hw, conv_spec s, double *out) {
  double t, batch = conv_chainable(c_in, s) ? 1 : (double)m->batch;
  RLX_TRY(time_conv(m, c_in, hw, s, &t));
  *out = 2.0 * batch * (double)(s.c_out * hw * hw) * (double)(s.c_in_per_group * s.k * s.k) / t;
  return NULL;
}

/* rlx's figures, in table order from run_overhead_ns. On a GPU the 1M-element ones (but
 * memory_bw's and transfer's) are over m->batch M elements (time_op). */
static rlx_status *measure_rlx_figure(measurer *m, int i, rlx_calibration *cal) {
  const rlx_type tiny = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {2}}, mega = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {1 << 20}},
                 big = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {m->batch << 20}},
                 wide = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {1024, m->batch * 1024}},
                 rows = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {m->batch * 1024, 1024}};
  const double bytes = 8.0 * (1 << 20), big_bytes = bytes * (double)m->batch; /* 1M float32 read and written */
  static const rlx_op unary[] = {RLX_OP_SIGMOID, RLX_OP_ERF, RLX_OP_TANH};
  const rlx_op neg = RLX_OP_NEG, softmax = RLX_OP_SOFTMAX;
  double t, t0;
  switch (i) {
    case 0:
      RLX_TRY(time_graph(m, &tiny, build_unary, &neg, 1, true, &t));
      cal->run_overhead_ns = t * 1e9;
      return NULL;
    case 1: {
      const rlx_type small = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {256}};
      int one = 1, many = 64;
      RLX_TRY(time_graph(m, &small, build_add_chain, &one, 1, false, &t0));
      RLX_TRY(time_graph(m, &small, build_add_chain, &many, 1, false, &t));
      /* a floor of 1 ns: on a loaded machine the difference of two medians may come out <= 0 */
      cal->dispatch_overhead_ns = fmax((t - t0) / (many - one) * 1e9, 1.0);
      return NULL;
    }
    case 2: /* the whole run per byte transferred: the Neg itself is a small part of it */
      RLX_TRY(time_graph(m, &mega, build_unary, &neg, 1, true, &t));
      cal->transfer_gbps = bytes / t * 1e-9;
      return NULL;
    case 3: case 4: case 5: {
      RLX_TRY(time_op(m, &big, build_unary, &unary[i - 3], true, &t));
      double *fig[] = {&cal->transcendental_gbps, &cal->erf_gbps, &cal->tanh_gbps};
      *fig[i - 3] = big_bytes / t * 1e-9;
      return NULL;
    }
    case 6:
      /* not chained: the optimizer may cancel a transpose against the next one */
      RLX_TRY(time_op(m, &wide, build_transpose, NULL, false, &t));
      cal->strided_copy_gbps = big_bytes / t * 1e-9;
      return NULL;
    case 7:
      RLX_TRY(time_op(m, &rows, build_unary, &softmax, true, &t));
      cal->softmax_gbps = big_bytes / t * 1e-9;
      return NULL;
    case 8: {
      const rlx_type x = {.dtype = RLX_DTYPE_F32, .rank = 4, .dims = {m->batch, 64, 64, 64}};
      RLX_TRY(time_op(m, &x, build_pool, NULL, false, &t));
      cal->pool_gbps = 9.0 * 4 * (double)m->batch * 64 * 32 * 32 / t * 1e-9;
      return NULL;
    }
    case 9: { /* the rows pass writes [1,32,128,64], the columns pass [1,32,128,128] */
      const rlx_type x = {.dtype = RLX_DTYPE_F32, .rank = 4, .dims = {m->batch, 32, 64, 64}};
      RLX_TRY(time_op(m, &x, build_resize, &x, false, &t));
      cal->resize_gbps = 4.0 * (double)m->batch * 32 * (128 * 64 + 128 * 128) / t * 1e-9;
      return NULL;
    }
    case 10:
      return measure_conv(m, 32, 64, (conv_spec){64, 32, 3, 1}, &cal->conv_flops);
    case 11:
      return measure_conv(m, 128, 64, (conv_spec){128, 1, 3, 128}, &cal->conv_depthwise_flops);
    case 12:
      return measure_conv(m, 128, 40, (conv_spec){256, 128, 1, 1}, &cal->conv_pointwise_flops);
    case 13: { /* what a tiny convolution costs beyond a node (on a GPU: queued, its launch) */
      const rlx_type x = {.dtype = RLX_DTYPE_F32, .rank = 4, .dims = {1, 16, 8, 8}};
      RLX_TRY(time_conv(m, 16, 8, (conv_spec){16, 16, 3, 1}, &t));
      RLX_TRY(time_op(m, &x, build_unary, &neg, true, &t0));
      cal->conv_overhead_ns = fmax((t - t0) * 1e9, 1.0);
      return NULL;
    }
    default:
      RLX_TRY(time_op(m, &big, build_unary, &neg, true, &t));
      cal->stream_gbps = big_bytes / t * 1e-9;
      return NULL;
  }
}

/* ---- all figures ---- */

static rlx_status *measure_figure(measurer *m, int i, rlx_calibration *cal) {
  double t = 0;
  switch (i) {
    case 0: { /* sgemm large */
      mx_operand ops[] = {{2, {256, 768}, 1.0}, {2, {768, 3072}, 1.0 / 768}};
      RLX_TRY(time_mx(m, body_matmul, 1, 2, ops, &t));
      cal->sgemm_large_flops = 2.0 * 256 * 768 * 3072 / t;
      break;
    }
    case 1: { /* sgemm small, 50 chained (x @ w with w = 1/64 keeps x at ones) */
      mx_operand ops[] = {{2, {8, 64}, 1.0}, {2, {64, 64}, 1.0 / 64}};
      RLX_TRY(time_mx(m, body_matmul, 50, 2, ops, &t));
      cal->sgemm_small_flops = 2.0 * 8 * 64 * 64 * 50 / t;
      break;
    }
    case 2: {
      mx_operand ops[] = {{2, {1, 2}, 1.0}, {2, {2, 1}, 1.0}};
      RLX_TRY(time_mx(m, body_matmul, 1, 2, ops, &t));
      cal->roundtrip_overhead_ns = t * 1e9;
      break;
    }
    case 3: {
      mx_operand ops[] = {{1, {1 << 20}, 1.0}, {0, {0}, 0.0}};
      RLX_TRY(time_mx(m, body_add, m->chain, 2, ops, &t));
      cal->memory_bw_gbps = 2.0 * 4 * (1 << 20) * m->chain / t * 1e-9;
      break;
    }
    case 4: {
      mx_operand ops[] = {{4, {1, 4, 128, 64}, 0.5}};
      RLX_TRY(time_mx(m, body_sdpa, m->chain, 1, ops, &t));
      cal->attention_flops = 4.0 * 1 * 4 * 128 * 128 * 64 * m->chain / t;
      break;
    }
    case 5: {
      mx_operand ops[] = {{2, {1024, 1024}, 1.0}};
      RLX_TRY(time_mx(m, body_sum, m->chain, 1, ops, &t));
      cal->reduce_gbps = 4.0 * 1024 * 1024 * m->chain / t * 1e-9;
      break;
    }
    default:
      return measure_rlx_figure(m, i - 6, cal);
  }
  return NULL;
}

static const char *const figure_keys[] = {
#define RLX_X(field, unit, what) #field,
    RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
};

rlx_status *rlx_calibration_measure(rlx_device device, const rlx_calibrate_options *opts, rlx_calibration *out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_calibration_measure: NULL out");
  if (device != RLX_DEVICE_CPU && device != RLX_DEVICE_GPU) return RLX_ERR(INVALID_ARGUMENT, "unknown device %d", (int)device);
  if (device == RLX_DEVICE_GPU && !rlx_gpu_available())
    return RLX_ERR(UNAVAILABLE, "no GPU: this MLX build (%s) has no usable GPU backend or no GPU is present", rlx_mlx_version());
  const char *env = getenv("RLX_CALIBRATE_QUICK");
  bool quick = (opts && opts->quick) || (env && *env && strcmp(env, "0"));
  rlx_precision precision = resolved_precision(device, opts);
  /* MLX reads the GPU precision at its first float32 matmul: fix it first, as a GPU run does */
  if (device == RLX_DEVICE_GPU) RLX_TRY(rlx_exec_claim_gpu_precision(precision));
  const char *clock = getenv("RLX_CALIBRATE_CLOCK");
  measurer m = {.device = device, .precision = precision, .reps = quick ? 3 : 15, .window_ns = quick ? 1000000 : 10000000,
                .cpu_clock = device == RLX_DEVICE_CPU && clock && !strcmp(clock, "cpu"),
                .chain = device == RLX_DEVICE_GPU ? GPU_CHAIN : 1, .batch = device == RLX_DEVICE_GPU ? GPU_BATCH : 1,
                .base_s = device == RLX_DEVICE_GPU ? -1 : 0};
  if (!(m.samples = calloc((size_t)m.reps, sizeof *m.samples))) return RLX_OOM();
  rlx_calibration cal = {0};
  rlx_calib_device_name(device, cal.device_name, sizeof cal.device_name);
  snprintf(cal.mlx_version, sizeof cal.mlx_version, "%s", rlx_mlx_version());
  rlx_calib_build(cal.rlx_version, sizeof cal.rlx_version);
  snprintf(cal.precision, sizeof cal.precision, "%s", rlx_precision_name(precision));
  const int count = (int)RLX_ARRAY_LEN(figure_keys);
  rlx_status *st = NULL;
  for (int i = 0; !st && i < count; i++) {
    if (opts && opts->progress) opts->progress(opts->ud, device, figure_keys[i], i, count);
    st = measure_figure(&m, i, &cal);
    if (st) st = rlx_status_annotate(st, "calibrating %s on %s", figure_keys[i], rlx_device_name(device));
  }
  free(m.samples);
  if (st) return st;
  if (opts && opts->progress) opts->progress(opts->ud, device, NULL, count, count);
  *out = cal;
  return NULL;
}
