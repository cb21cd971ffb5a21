/* cost.c: the cost model of rlx/calibrate.h: FLOPs and bytes per node from the value types, priced
 * with the figures of a calibration, and the choice between devices. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "calib/calib.h"
#include "ir/ir.h"

static const char *const family_names[] = {
#define RLX_X(e, name) name,
    RLX_COST_FAMILY_TABLE(RLX_X)
#undef RLX_X
};

const char *rlx_cost_family_name(rlx_cost_family f) {
  return (unsigned)f < RLX_COST_FAMILY_COUNT ? family_names[f] : "invalid";
}

typedef struct cost_ctx {
  const rlx_calibration *cal;
  rlx_device device;
  rlx_cost_estimate *est;
  double bw_gbps; /* elementwise passes and plain data movement: memory_bw_gbps on the CPU; on a GPU
                     stream_gbps, as the reference's 1M-float add is short enough to be about a
                     kernel launch there (which dispatch_overhead_ns prices per node) */
} cost_ctx;

static double numel(const rlx_type *t) {
  double n = 1;
  for (int i = 0; i < t->rank; i++) n *= (double)t->dims[i];
  return n;
}

static double nbytes(const rlx_type *t) { return numel(t) * (double)rlx_dtype_size(t->dtype); }

/* Product of dims [from, rank) of t. */
static double dims_from(const rlx_type *t, int from) {
  double n = 1;
  for (int i = from; i < t->rank; i++) n *= (double)t->dims[i];
  return n;
}

/* Records work of `s` seconds run `mult` times; `node`: it is a node of family f (not a part of one
 * priced in another family). */
static void charge_s(cost_ctx *c, rlx_cost_family f, bool node, double flops, double bytes, double s, double mult) {
  rlx_cost_estimate *e = c->est;
  e->family_s[f] += s * mult;
  e->family_flops[f] += flops * mult;
  e->family_bytes[f] += bytes * mult;
  if (node) e->family_nodes[f] += (size_t)mult;
  e->flops += flops * mult;
  e->bytes += bytes * mult;
}

/* Records one node run `mult` times: its time is max(flops / rate, bytes / bandwidth). */
static void charge(cost_ctx *c, rlx_cost_family f, double flops, double rate, double bytes, double gbps, double mult) {
  charge_s(c, f, true, flops, bytes, fmax(rate > 0 ? flops / rate : 0, bytes / (gbps * 1e9)), mult);
}

static bool family_is(const rlx_node *n, const char *const *names) {
  const char *fam = rlx_op_info_get(n->op)->family;
  for (; *names; names++)
    if (!strcmp(fam, *names)) return true;
  return false;
}

static rlx_status *cost_graph(cost_ctx *c, const rlx_graph *g, const rlx_type *types, double mult);

/* How the lowering computes a unary op (src/mlx/lower_elementwise.c): `plain` passes of MLX's
 * simple elementwise ops (each reads and writes the tensor, at cost_ctx.bw_gbps) plus at most one
 * pass of a transcendental function at its figure (0: none). MLX evaluates each pass on its own in
 * lazy mode. */
typedef struct unary_cost {
  int plain;
  double gbps;
} unary_cost;

static unary_cost unary_of(const rlx_calibration *cal, rlx_op op) {
  switch (op) {
    case RLX_OP_GELU: return (unary_cost){4, cal->erf_gbps};         /* x/2 (1 + erf(x / sqrt 2)) */
    case RLX_OP_GELU_APPROX: return (unary_cost){7, cal->tanh_gbps}; /* x/2 (1 + tanh(c (x + a x^3))) */
    case RLX_OP_SILU: return (unary_cost){1, cal->transcendental_gbps};
    case RLX_OP_HARD_SWISH: return (unary_cost){5, 0};
    case RLX_OP_HARD_SIGMOID: return (unary_cost){4, 0};
    case RLX_OP_ERF: return (unary_cost){0, cal->erf_gbps};
    case RLX_OP_TANH: return (unary_cost){0, cal->tanh_gbps};
    /* the exp family's kernels and MLX's libm-style functions: about a sigmoid's rate */
    case RLX_OP_EXP: case RLX_OP_LOG: case RLX_OP_SIN: case RLX_OP_COS: case RLX_OP_TAN: case RLX_OP_ASIN:
    case RLX_OP_ACOS: case RLX_OP_ATAN: case RLX_OP_SINH: case RLX_OP_COSH: case RLX_OP_ASINH: case RLX_OP_ACOSH:
    case RLX_OP_ATANH: case RLX_OP_SIGMOID: case RLX_OP_SOFTPLUS: case RLX_OP_POW:
      return (unary_cost){0, cal->transcendental_gbps};
    default:
      return (unary_cost){1, 0};
  }
}

/* Charges an elementwise op computed as `u` over a result of out_b bytes whose operands and result
 * move `bytes` in all (the transcendental pass; plain passes read and write the result). */
static void charge_unary(cost_ctx *c, unary_cost u, bool node, double bytes, double out_b, double mult) {
  double s = u.plain * 2 * out_b / (c->bw_gbps * 1e9) + (u.gbps > 0 ? bytes / (u.gbps * 1e9) : 0);
  charge_s(c, RLX_COST_ELEMENTWISE, node, 0, u.plain * 2 * out_b + (u.gbps > 0 ? bytes : 0), s, mult);
}

/* The activation of a fused op ("none" or a unary op name) over out_b bytes. */
static void charge_activation(cost_ctx *c, const char *act, double out_b, double mult) {
  rlx_op op;
  if (!strcmp(act, "none")) return;
  rlx_status *st = rlx_op_from_name(act, &op);
  if (st) { /* inference validated the name */
    rlx_status_free(st);
    return;
  }
  charge_unary(c, unary_of(c->cal, op), false, 2 * out_b, out_b, mult);
}

/* Costs sub-graph `sub` with its inputs bound to operand types in[0..n), `mult` times. */
static rlx_status *cost_sub(cost_ctx *c, const rlx_graph *sub, const rlx_type *in, size_t n, double mult) {
  rlx_type *types = calloc(sub->n_vals ? sub->n_vals : 1, sizeof *types);
  if (!types) return RLX_OOM();
  rlx_status *st = rlx_subgraph_bind(sub, in, n, types);
  if (!st) st = cost_graph(c, sub, types, mult);
  free(types);
  return st;
}

static rlx_status *cost_control(cost_ctx *c, const rlx_node *n, const rlx_type *in, double mult) {
  if (n->op == RLX_OP_IF) { /* both branches are computed, then selected */
    RLX_TRY(cost_sub(c, rlx_node_g(n, "then_branch"), in + 1, n->n_in - 1, mult));
    return cost_sub(c, rlx_node_g(n, "else_branch"), in + 1, n->n_in - 1, mult);
  }
  if (n->op == RLX_OP_ASSERT) return NULL; /* x passes through; cond's extremes join the run's check vector */
  if (n->op == RLX_OP_WHILE) { /* unrolled max_iterations times */
    double iters = (double)rlx_node_i(n, "max_iterations");
    if (iters == 0) return NULL;
    RLX_TRY(cost_sub(c, rlx_node_g(n, "cond"), in, n->n_in, mult * iters));
    return cost_sub(c, rlx_node_g(n, "body"), in, n->n_in, mult * iters);
  }
  /* Scan: the body sees the carries, the broadcast operands and one step of each xs */
  double length = (double)rlx_node_i(n, "length");
  size_t n_xs = (size_t)rlx_node_i(n, "num_xs");
  if (length == 0) return NULL;
  rlx_type step[256];
  memcpy(step, in, n->n_in * sizeof *in);
  for (size_t i = n->n_in - n_xs; i < n->n_in; i++) {
    step[i].rank--;
    memmove(step[i].dims, step[i].dims + 1, (size_t)step[i].rank * sizeof step[i].dims[0]);
  }
  return cost_sub(c, rlx_node_g(n, "body"), step, n->n_in, mult * length);
}

/* Conv and ConvTranspose, priced by the path the lowering takes (src/mlx/conv_ops.c), each with
 * conv_overhead_ns. On the CPU, float convolutions over 1-2 spatial dims run rlx's kernels with
 * the bias and a Relu/Sigmoid/HardSwish activation fused: the direct kernel for at most 4 input
 * channels per group and 64 multiply-adds per output (conv_depthwise_flops), else the tiled GEMM
 * kernel (conv_pointwise_flops for 1x1 without stride or pads, whose patches are the input;
 * conv_flops with im2col tiles); others (float64, integers, 3D) go through MLX at conv_flops. A ConvTranspose whose stride is its kernel
 * is one matmul on the CPU (conv_pointwise_flops); otherwise it runs as the convolution of its
 * stride-dilated input with the flipped kernel. On a GPU MLX's convolutions: depthwise (one channel
 * per group) ones at conv_depthwise_flops, 1x1 ones at conv_pointwise_flops, the others at
 * conv_flops. An activation not fused costs its passes (elementwise). */
static void cost_conv(cost_ctx *c, const rlx_node *n, const rlx_type *in, const rlx_type *out, double bytes, double out_b,
                      double mult) {
  const rlx_calibration *cal = c->cal;
  const rlx_type *x = &in[0], *w = &in[1];
  int nsp = x->rank - 2;
  double kernel = dims_from(w, 2), group = (double)rlx_node_i(n, "group"), positions = dims_from(&out[0], 2);
  double cg = (double)x->dims[1] / group, co = (double)out[0].dims[1], batch = (double)x->dims[0];
  bool cpu = c->device == RLX_DEVICE_CPU, kernels = cpu && rlx_dtype_is_float(x->dtype) && x->dtype != RLX_DTYPE_F64 && nsp <= 2;
  size_t ns = 0, np = 0;
  const int64_t *strides = rlx_node_attr(n, "strides") ? rlx_node_is(n, "strides", &ns) : NULL;
  const int64_t *pads = rlx_node_attr(n, "pads") ? rlx_node_is(n, "pads", &np) : NULL;
  bool unit = kernel == 1 && group == 1, stride_is_kernel = group == 1;
  for (size_t i = 0; i < ns; i++) unit &= strides[i] == 1, stride_is_kernel &= strides[i] == w->dims[2 + i];
  for (size_t i = 0; i < np; i++) unit &= pads[i] == 0;
  if (!ns) stride_is_kernel &= kernel == 1;
  double fixed = cal->conv_overhead_ns * 1e-9, bw = c->bw_gbps * 1e9;
  if (n->op == RLX_OP_CONV_TRANSPOSE && cpu && stride_is_kernel && x->dtype != RLX_DTYPE_F64) {
    double flops = 2.0 * numel(x) * co / group * kernel;
    charge_s(c, RLX_COST_CONV, true, flops, bytes, fmax(flops / cal->conv_pointwise_flops, bytes / bw) + fixed, mult);
    return;
  }
  /* every output position meets Ci/group * prod(kernel) weights (for ConvTranspose, of its
   * stride-dilated input: the zeros it inserts are multiplied too) */
  double flops = 2.0 * batch * co * positions * cg * kernel, rate = cal->conv_flops;
  if (kernels && cg <= 4 && cg * kernel <= 64) rate = cal->conv_depthwise_flops;
  else if (unit) rate = cal->conv_pointwise_flops;
  else if (!cpu && group > 1 && cg == 1) rate = cal->conv_depthwise_flops;
  charge_s(c, RLX_COST_CONV, true, flops, bytes, fmax(flops / rate, bytes / bw) + fixed, mult);
  const char *act = n->op == RLX_OP_CONV ? rlx_node_s(n, "activation") : "none";
  bool fused = kernels && (!strcmp(act, "Relu") || !strcmp(act, "Sigmoid") || !strcmp(act, "HardSwish"));
  if (!fused) charge_activation(c, act, out_b, mult);
}

/* Resize: per resized axis (in order, as the lowering goes) one gather of its taps into the next
 * intermediate, plus a multiply and an add per tap for the interpolating modes; priced as the
 * bytes of those intermediates (times 3 x taps when interpolating) at resize_gbps. Its FLOPs (a
 * multiply and an add per tap of every intermediate element; antialiased downscaling stretches
 * the taps by 1 / scale) are counted, not priced. */
static void cost_resize(cost_ctx *c, const rlx_node *n, const rlx_type *in, const rlx_type *out, double mult) {
  const char *mode = rlx_node_s(n, "mode");
  double taps = !strcmp(mode, "nearest") ? 1 : !strcmp(mode, "linear") ? 2 : 4, per = taps == 1 ? 1 : 3 * taps, work = 0, flops = 0;
  bool antialias = rlx_node_i(n, "antialias") != 0;
  rlx_type t = in[0];
  for (int i = 0; i < t.rank; i++) {
    if (t.dims[i] == out[0].dims[i]) continue;
    double scale = (double)out[0].dims[i] / (double)t.dims[i];
    t.dims[i] = out[0].dims[i];
    work += nbytes(&t) * per;
    flops += 2 * numel(&t) * (antialias && taps > 1 && scale < 1 ? taps / scale : taps);
  }
  charge(c, RLX_COST_CONV, flops, 0, work, c->cal->resize_gbps, mult);
}

/* FLOPs of the convolution and max-pool gradients and of the dense solves (counted, not priced:
 * these run at memory_bw as "other" ops): a multiply and an add per weight tap of every dy element
 * (Conv2dBackwardInput: w [Co, Ci/g, k..] at input 1; Conv2dBackwardWeight: the result [Co, Ci/g,
 * k..]), a comparison per window tap of every dy element (MaxPool2dBackward), an LU factorization
 * and its solves (2/3 n^3 + 2 n^2 k per system). */
static double grad_solve_flops(const rlx_node *n, const rlx_type *in, const rlx_type *out) {
  if (n->op == RLX_OP_CONV2D_BACKWARD_INPUT && in[1].rank > 0 && in[1].dims[0] > 0)
    return 2 * numel(&in[0]) * numel(&in[1]) / (double)in[1].dims[0];
  if (n->op == RLX_OP_CONV2D_BACKWARD_WEIGHT && out[0].rank > 0 && out[0].dims[0] > 0)
    return 2 * numel(&in[1]) * numel(&out[0]) / (double)out[0].dims[0];
  if (n->op == RLX_OP_MAXPOOL2D_BACKWARD) {
    size_t nk = 0;
    const int64_t *k = rlx_node_is(n, "kernel_shape", &nk);
    double taps = 1;
    for (size_t i = 0; i < nk; i++) taps *= (double)k[i];
    return numel(&in[1]) * taps;
  }
  if ((n->op == RLX_OP_DENSE_SOLVE || n->op == RLX_OP_BATCHED_DENSE_SOLVE) && in[0].rank >= 2) {
    double sz = (double)in[0].dims[in[0].rank - 1], systems = numel(&in[0]) / (sz * sz);
    double k = systems * sz > 0 ? numel(&in[1]) / (systems * sz) : 0;
    return sz > 0 ? systems * (2.0 / 3 * sz * sz * sz + 2 * sz * sz * k) : 0;
  }
  return 0;
}

static rlx_status *cost_node(cost_ctx *c, const rlx_node *n, const rlx_type *in, const rlx_type *out, double mult) {
  static const char *const elementwise[] = {"binary", "where", "cast", "region", "act_grad", "quant", NULL};
  static const char *const norm_reduce[] = {"norm", "norm_grad", "reduce", NULL};
  static const char *const movement[] = {"shape", "gather", "index_grad", NULL};
  const rlx_calibration *cal = c->cal;
  double in_b = 0, out_b = 0;
  for (uint32_t i = 0; i < n->n_in; i++) in_b += nbytes(&in[i]);
  for (uint32_t i = 0; i < n->n_out; i++) out_b += nbytes(&out[i]);
  double bytes = in_b + out_b, bw = c->bw_gbps;
  if (family_is(n, (const char *const[]){"control", NULL})) return cost_control(c, n, in, mult);
  /* per node: what one more queued node adds to a run (on a GPU its launch, measured over a chain,
   * not a synchronized round trip: run_overhead_ns is charged once per run) */
  c->est->family_s[RLX_COST_OVERHEAD] += cal->dispatch_overhead_ns * 1e-9 * mult;
  c->est->family_nodes[RLX_COST_OVERHEAD] += (size_t)mult;
  c->est->nodes += (size_t)mult;
  if (family_is(n, (const char *const[]){"matmul", NULL})) {
    double k = 1;
    if (n->op == RLX_OP_DOT_GENERAL) {
      size_t nc = 0;
      const int64_t *axes = rlx_node_is(n, "lhs_contracting", &nc);
      for (size_t i = 0; i < nc; i++) k *= (double)in[0].dims[axes[i] < 0 ? axes[i] + in[0].rank : axes[i]];
    } else if (in[0].rank > 0) {
      k = (double)in[0].dims[in[0].rank - 1];
    }
    double flops = 2.0 * numel(&out[0]) * k;
    /* the reference's rule: the small-shape rate below m k n = 32768 */
    charge(c, RLX_COST_MATMUL, flops, flops / 2 < 32768 ? cal->sgemm_small_flops : cal->sgemm_large_flops, bytes, bw, mult);
    if (n->op == RLX_OP_FUSED_MATMUL_BIAS_ACT) { /* the bias add and the activation: passes of their own */
      if (n->n_in == 3) charge_s(c, RLX_COST_ELEMENTWISE, false, 0, 2 * out_b, 2 * out_b / (bw * 1e9), mult);
      charge_activation(c, rlx_node_s(n, "activation"), out_b, mult);
    }
  } else if (n->op == RLX_OP_CONV || n->op == RLX_OP_CONV_TRANSPOSE) {
    cost_conv(c, n, in, out, bytes, out_b, mult);
  } else if (n->op == RLX_OP_POOL) { /* every tap of every output: bytes, and a FLOP each (not priced) */
    size_t nk = 0;
    const int64_t *k = rlx_node_is(n, "kernel_shape", &nk);
    double taps = 1;
    for (size_t i = 0; i < nk; i++) taps *= (double)k[i];
    charge(c, RLX_COST_CONV, numel(&out[0]) * taps, 0, out_b * taps, cal->pool_gbps, mult);
  } else if (n->op == RLX_OP_RESIZE) {
    cost_resize(c, n, in, out, mult);
  } else if (n->op == RLX_OP_ATTENTION) { /* q k^T and p v: 2 Sk D FLOPs per query element each */
    double sk = (double)in[1].dims[in[1].rank == 4 ? 2 : 1];
    charge(c, RLX_COST_ATTENTION, 2.0 * sk * (numel(&in[0]) + numel(&out[0])), cal->attention_flops, bytes, bw, mult);
  } else if (n->op == RLX_OP_SOFTMAX || n->op == RLX_OP_LOG_SOFTMAX) {
    charge(c, RLX_COST_NORM_REDUCE, 0, 0, bytes, cal->softmax_gbps, mult);
  } else if (family_is(n, norm_reduce)) {
    charge(c, RLX_COST_NORM_REDUCE, 0, 0, bytes, cal->reduce_gbps, mult);
  } else if (family_is(n, (const char *const[]){"unary", NULL})) {
    charge_unary(c, unary_of(cal, n->op), true, bytes, out_b, mult);
  } else if (family_is(n, elementwise) || n->op == RLX_OP_ROPE) {
    charge(c, RLX_COST_ELEMENTWISE, 0, 0, bytes, bw, mult);
  } else if (n->op == RLX_OP_TRANSPOSE) { /* a view; its consumer reads it strided (or copies it) */
    charge(c, RLX_COST_MOVEMENT, 0, 0, 2 * out_b, cal->strided_copy_gbps, mult);
  } else if (family_is(n, movement)) {
    bool view = n->op == RLX_OP_RESHAPE || n->op == RLX_OP_SLICE || n->op == RLX_OP_NARROW || n->op == RLX_OP_EXPAND;
    /* a gather reads the rows it writes (and its indices), not the whole table */
    double moved = view ? 0 : family_is(n, (const char *const[]){"gather", NULL}) ? 2 * out_b + in_b - nbytes(&in[0]) : 2 * out_b;
    charge(c, RLX_COST_MOVEMENT, 0, 0, moved, bw, mult);
  } else {
    charge(c, RLX_COST_OTHER, grad_solve_flops(n, in, out), 0, bytes, bw, mult);
  }
  return NULL;
}

static rlx_status *cost_graph(cost_ctx *c, const rlx_graph *g, const rlx_type *types, double mult) {
  rlx_type in[256];
  for (size_t i = 0; i < g->n_nodes; i++) {
    const rlx_node *n = &g->nodes[i];
    if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM || n->op == RLX_OP_CONSTANT) continue;
    for (uint32_t j = 0; j < n->n_out; j++) {
      if (!rlx_type_is_static(&types[n->out0 + j])) {
        char label[160];
        return RLX_ERR(INVALID_ARGUMENT, "cost model: %s has the output type %s with symbolic dims (fix the input shapes first)",
                       rlx_node_label(g, n, label, sizeof label), RLX_TYPE_STR(&types[n->out0 + j]));
      }
    }
    if (n->n_in > RLX_ARRAY_LEN(in)) return RLX_ERR(UNIMPLEMENTED, "cost model: a node with %u inputs", n->n_in);
    for (uint32_t j = 0; j < n->n_in; j++) in[j] = types[n->in[j]];
    RLX_TRY(cost_node(c, n, in, &types[n->out0], mult));
  }
  return NULL;
}

rlx_status *rlx_cost_predict(const rlx_graph *g, const rlx_calibration *cal, rlx_device device, rlx_cost_estimate *out) {
  if (!g || !cal || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_cost_predict: NULL argument");
#define RLX_X(field, unit, what) \
  if (!(cal->field > 0) || !isfinite(cal->field)) return RLX_ERR(INVALID_ARGUMENT, "cost model: calibration figure %s = %g is not a finite positive number", #field, cal->field);
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
  rlx_cost_estimate est = {.device = device};
  cost_ctx c = {.cal = cal, .device = device, .est = &est, .bw_gbps = device == RLX_DEVICE_GPU ? cal->stream_gbps : cal->memory_bw_gbps};
  for (size_t i = 0; i < g->n_inputs; i++) {
    const rlx_type *t = &g->types[g->nodes[g->inputs[i]].out0];
    if (!rlx_type_is_static(t))
      return RLX_ERR(INVALID_ARGUMENT, "cost model: input '%s' has the type %s with symbolic dims (fix the input shapes first)",
                     g->nodes[g->inputs[i]].name, RLX_TYPE_STR(t));
    est.family_bytes[RLX_COST_TRANSFER] += nbytes(t);
  }
  for (size_t i = 0; i < g->n_outputs; i++) est.family_bytes[RLX_COST_TRANSFER] += nbytes(&g->types[g->outputs[i]]);
  RLX_TRY(cost_graph(&c, g, g->types, 1));
  est.family_s[RLX_COST_TRANSFER] = est.family_bytes[RLX_COST_TRANSFER] / (cal->transfer_gbps * 1e9);
  est.bytes += est.family_bytes[RLX_COST_TRANSFER];
  est.family_s[RLX_COST_OVERHEAD] += cal->run_overhead_ns * 1e-9;
  for (int f = 0; f < RLX_COST_FAMILY_COUNT; f++) est.total_s += est.family_s[f];
  *out = est;
  return NULL;
}

rlx_status *rlx_cost_pick_device(const rlx_graph *g, const rlx_calibrate_options *opts, rlx_device *out_device,
                                 rlx_cost_estimate *out_cpu, rlx_cost_estimate *out_gpu) {
  if (!g || !out_device) return RLX_ERR(INVALID_ARGUMENT, "rlx_cost_pick_device: NULL argument");
  rlx_calibration cal;
  rlx_cost_estimate cpu, gpu = {.device = RLX_DEVICE_GPU, .total_s = INFINITY};
  RLX_TRY(rlx_calibration_get(RLX_DEVICE_CPU, opts, &cal, NULL));
  RLX_TRY(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &cpu));
  if (rlx_gpu_available()) {
    RLX_TRY(rlx_calibration_get(RLX_DEVICE_GPU, opts, &cal, NULL));
    RLX_TRY(rlx_cost_predict(g, &cal, RLX_DEVICE_GPU, &gpu));
  }
  *out_device = gpu.total_s < cpu.total_s ? RLX_DEVICE_GPU : RLX_DEVICE_CPU;
  if (out_cpu) *out_cpu = cpu;
  if (out_gpu) *out_gpu = gpu;
  return NULL;
}
