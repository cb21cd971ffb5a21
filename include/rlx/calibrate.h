/* rlx/calibrate.h: measuring a device once, and predicting what a graph costs on it.
 *
 * Calibration: a handful of throughput and overhead figures measured on one device (MLX's CPU
 * backend, or its GPU backend when present), each as the median of repeated timings after a
 * warm-up. The first six are the figures of the reference system (rlx-mlx `calibrate.rs`, see
 * spec/rlx-mlx-inventory.md section 2.9) with its shapes, units and JSON keys; they are measured
 * directly on MLX arrays. The others are rlx's own, measured through rlx executables (lazy mode)
 * so that they follow rlx's lowering of the op (for example its convolution paths).
 *
 * Cache: one JSON file per device, `<dir>/mlx-calib-<device name, non-alphanumerics as '_'>.json`
 * where <dir> is $XDG_CACHE_HOME/rlx, else $HOME/.cache/rlx (or the options' cache_dir). It holds
 * every field below under its field name, in the units below. A file is used only when its
 * device name, MLX version and rlx version are the current ones and every figure is a finite
 * positive number; files are written to a temporary file in the same directory and renamed over
 * the old one (rename(2) is atomic), so concurrent writers and readers never see a torn file.
 *
 * Cost model (rlx_cost_predict): for each node, FLOPs and bytes follow from the node's static
 * input and output types (shape inference), and the node's time is max(FLOPs / rate, bytes /
 * bandwidth) with the rate and bandwidth of the figure that measures the path rlx's lowering
 * takes for it on the device (rlx's direct convolution kernel, a 1x1 convolution as a matmul, an
 * activation as its passes, ...), plus the per-node dispatch overhead; a run adds rlx's per-run
 * overhead and the host transfers of its inputs and outputs. Predict the graph that runs: an
 * imported model's graph is already the optimizer's output (rlx_onnx_model_graph; the import
 * runs the pipeline), so fused ops and folded BatchNorms are priced as such.
 * Control flow is unrolled as the lowering does (both If branches; While max_iterations times;
 * Scan `length` times).
 *
 * Thread-safety: measuring runs MLX work on the calling thread's streams and may run concurrently
 * with other rlx work (the figures are then slower); every other function is reentrant.
 */
#ifndef RLX_CALIBRATE_H
#define RLX_CALIBRATE_H

#include "rlx/executable.h"
#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The figures of a calibration, written once: X(field, unit, what is timed). The first six are the
 * reference's (rlx-mlx calibrate.rs; same JSON keys and units), measured on MLX arrays; the others
 * are rlx's own, measured through rlx executables in lazy mode. Rates are float32; GB = 1e9 bytes;
 * every figure is the median of the timed repetitions. A GPU runs its work asynchronously, so there
 * the throughput figures queue many ops per synchronized run (src/calib/measure.c): rlx's own take
 * what a chain of 32 ops adds to an empty run, per op (Sigmoid, Erf, Tanh, Softmax and Neg over 8x
 * the elements below; Transpose, Pool, Resize and the Convs whose output cannot feed the next: 8x
 * the elements (the batch), one op); conv_overhead_ns is then a queued conv's launch beyond a
 * node's, not a round trip. */
#define RLX_CALIBRATION_FIGURES(X)                                                                        \
  X(sgemm_large_flops, "FLOP/s", "[256,768] @ [768,3072], 2 m k n FLOPs")                                 \
  X(sgemm_small_flops, "FLOP/s", "50 chained [8,64] @ [64,64], one eval")                                 \
  X(roundtrip_overhead_ns, "ns", "build and evaluate a tiny graph, [1,2] @ [2,1]")                       \
  X(memory_bw_gbps, "GB/s", "add(x, 0), x 1M float32, 8 bytes per element (GPU: 32 chained, one eval)")   \
  X(attention_flops, "FLOP/s", "SDPA q=k=v [1,4,128,64], no mask, 4 B H S^2 D FLOPs (GPU: 32 chained)")   \
  X(reduce_gbps, "GB/s", "sum over the last axis of [1024,1024], 4 M N bytes (GPU: 32 in one eval)")     \
  X(run_overhead_ns, "ns", "rlx_executable_run of Neg on float32[2] from the host, read back")             \
  X(dispatch_overhead_ns, "ns", "per node: (64 chained Adds on float32[256] - 1 Add) / 63")              \
  X(transfer_gbps, "GB/s", "Neg of 1M float32 from the host, read back: 8 MB per run")                  \
  X(transcendental_gbps, "GB/s", "Sigmoid of 1M float32, 8 bytes per element")                           \
  X(erf_gbps, "GB/s", "Erf of 1M float32, 8 bytes per element")                                          \
  X(tanh_gbps, "GB/s", "Tanh of 1M float32, 8 bytes per element")                                        \
  X(strided_copy_gbps, "GB/s", "Neg(Transpose(x)), x [1024,1024] float32, 8 MB")                         \
  X(softmax_gbps, "GB/s", "Softmax over the last axis of [1024,1024] float32, 8 MB")                     \
  X(pool_gbps, "GB/s", "MaxPool 3x3 stride 2 pads 1 of [1,64,64,64]: 9 x output bytes")                  \
  X(resize_gbps, "GB/s", "Resize nearest 2x of [1,32,64,64]: bytes of both per-axis passes' outputs")   \
  X(conv_flops, "FLOP/s", "Conv x[1,32,64,64] w[64,32,3,3] pads 1")                                      \
  X(conv_depthwise_flops, "FLOP/s", "Conv x[1,128,64,64] w[128,1,3,3] group 128 pads 1")                \
  X(conv_pointwise_flops, "FLOP/s", "Conv x[1,128,40,40] w[256,128,1,1]")                               \
  X(conv_overhead_ns, "ns", "Conv x[1,16,8,8] w[16,16,3,3] pads 1 less Neg of x: a conv's fixed cost")    \
  X(stream_gbps, "GB/s", "Neg of 1M float32 (GPU: 8M), 8 bytes per element: elementwise pricing on a GPU")

/* The figures of one device (see RLX_CALIBRATION_FIGURES for each figure). A plain value. */
typedef struct rlx_calibration {
  char device_name[128]; /* "cpu: <CPU model>, <N> threads" (N: rlx's CPU kernel threads,
                            RLX_NUM_THREADS or the CPUs available) or the GPU's name
                            (rlx_device_describe) */
  char mlx_version[32];  /* rlx_mlx_version() when measured */
  char rlx_version[32];  /* the rlx build measured with: RLX_VERSION "+" 16 hex digits identifying
                            the library file (its inode, size and modification time) */
  char precision[8];     /* "fp32" or "tf32": the GPU float32 precision measured at ("fp32" on the CPU) */
#define RLX_X(field, unit, what) double field;
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
} rlx_calibration;

/* Options of rlx_calibration_measure / _get / rlx_cost_pick_device; zero-initialize for defaults.
 * Borrowed for the call. */
typedef struct rlx_calibrate_options {
  bool force;            /* measure even when the cache holds a usable calibration (then rewrite it) */
  bool quick;            /* 3 samples of >= 1 ms instead of 15 of >= 10 ms (also RLX_CALIBRATE_QUICK=1): tests */
  bool no_cache;         /* neither read nor write the cache */
  const char *cache_dir; /* NULL: $XDG_CACHE_HOME/rlx, else $HOME/.cache/rlx */
  /* GPU float32 precision to measure at, and to run the graphs a prediction is for at
   * (RLX_PRECISION_DEFAULT resolves as executables do, see rlx/executable.h). Measuring on the GPU
   * fixes the process's GPU precision to it, as a GPU run does. Ignored on the CPU. */
  rlx_precision precision;
  /* Called before each figure is measured (index 0..count-1, its JSON key) and once more with
   * index == count and figure NULL when the device is done. NULL: silent. */
  void (*progress)(void *ud, rlx_device device, const char *figure, int index, int count);
  /* Called with a one-line message for a cache file that was unusable (corrupt, truncated, from
   * another device or version) or could not be written. NULL: printed to stderr as
   * "rlx: warning: ...". */
  void (*warn)(void *ud, const char *message);
  void *ud;
} rlx_calibrate_options;

/* Measures every figure on `device` (the cache is not involved). opts may be NULL. Takes about
 * 3 s on an idle CPU (under 1 s quick). Errors: UNAVAILABLE (GPU requested without one),
 * FAILED_PRECONDITION (GPU: this process already runs GPU work at the other precision), INTERNAL
 * (an MLX failure), RESOURCE_EXHAUSTED. *out untouched on failure. */
rlx_status *rlx_calibration_measure(rlx_device device, const rlx_calibrate_options *opts, rlx_calibration *out);

/* Writes the cache file path of `device` into buf (cap bytes, NUL-terminated): cache_dir (NULL for
 * the default, see above) joined with mlx-calib-<sanitized device name>.json. Errors:
 * UNAVAILABLE (no GPU; neither XDG_CACHE_HOME nor HOME set), OUT_OF_RANGE (buf too small). buf
 * untouched on failure. */
rlx_status *rlx_calibration_cache_path(rlx_device device, const char *cache_dir, char *buf, size_t cap);

/* Reads a calibration file written by rlx_calibration_save and checks it against `device`, this
 * MLX and this rlx. Errors: NOT_FOUND (no file), DATA_LOSS (unreadable, not JSON, truncated, a
 * figure missing or not a finite positive number: the key is named), FAILED_PRECONDITION (another
 * device, MLX or rlx version: both values given; the precision is rlx_calibration_get's to check).
 * *out untouched on failure. */
rlx_status *rlx_calibration_load(const char *path, rlx_device device, rlx_calibration *out);

/* Writes `cal` as pretty JSON to `path`: to a unique temporary file beside it, then renamed over
 * it, so a reader or another writer never sees a partial file; the parent directory is created
 * (mode 0777 before the umask) when missing. Errors: UNAVAILABLE (the directory or file cannot be
 * written: the path and reason), RESOURCE_EXHAUSTED. */
rlx_status *rlx_calibration_save(const rlx_calibration *cal, const char *path);

/* The calibration of `device`: from the cache when it holds a usable one (and opts->force is
 * off; on the GPU one of the requested precision), else measured and saved. An unusable cache file (see rlx_calibration_load; a missing one
 * excepted) and a failed save are reported through opts->warn, never as errors. *out_measured
 * (may be NULL) tells whether it was measured now. opts may be NULL. Errors: those of
 * rlx_calibration_measure. Out-parameters untouched on failure. */
rlx_status *rlx_calibration_get(rlx_device device, const rlx_calibrate_options *opts, rlx_calibration *out,
                                bool *out_measured);

/* ---- cost model ---- */

/* Cost families: which figure prices a node. */
#define RLX_COST_FAMILY_TABLE(X)                                                                   \
  X(MATMUL, "matmul")           /* matmul ops: 2 M K N FLOPs at sgemm_small (M K N < 32768) or   \
                                   sgemm_large (the reference's rule); a FusedMatMulBiasAct's bias \
                                   add and activation count as elementwise */                     \
  X(CONV, "conv")               /* Conv/ConvTranspose: 2 * out * Ci/group * prod(kernel) FLOPs at \
                                   the figure of the path the lowering takes on the device (see  \
                                   cost.c: direct kernel, 1x1 GEMM, im2col GEMM) plus            \
                                   conv_overhead; Pool: output bytes x window taps at pool_gbps; \
                                   Resize: its per-axis passes' bytes at resize_gbps (FLOPs of   \
                                   both, a FLOP per pooling tap, 2 per Resize tap, counted but   \
                                   not priced) */                                                  \
  X(ATTENTION, "attention")     /* Attention: 2 Sk (|q| + |y|) FLOPs at attention_flops */         \
  X(NORM_REDUCE, "norm/reduce") /* Softmax/LogSoftmax bytes at softmax_gbps; other norms and    \
                                   reductions at reduce_gbps */                                    \
  X(ELEMENTWISE, "elementwise") /* binary, where, cast, regions: bytes at memory_bw; unary ops as \
                                   the lowering computes them: passes of simple ops at memory_bw \
                                   plus one of erf (erf_gbps), tanh (tanh_gbps) or another       \
                                   transcendental (transcendental_gbps), e.g. Gelu = 4 + erf */   \
  X(MOVEMENT, "data movement")  /* Transpose: 2 x output bytes at strided_copy; Concat, Pad, Tile, \
                                   gathers, scatters: bytes at memory_bw; views (Reshape, Slice,  \
                                   Narrow, Expand) cost 0 */                                       \
  X(OTHER, "other")             /* every other op: bytes at memory_bw (FLOPs of the convolution  \
                                   and max-pool gradients and dense solves counted, not priced) */ \
  X(TRANSFER, "transfer")       /* graph inputs and outputs: bytes at transfer_gbps */             \
  X(OVERHEAD, "overhead")       /* run_overhead once, plus dispatch_overhead_ns per node */

typedef enum rlx_cost_family {
#define RLX_X(e, name) RLX_COST_##e,
  RLX_COST_FAMILY_TABLE(RLX_X)
#undef RLX_X
      RLX_COST_FAMILY_COUNT
} rlx_cost_family;

/* The family's name ("matmul", ...; static); "invalid" outside the enum. */
const char *rlx_cost_family_name(rlx_cost_family f);

/* A prediction for one device. A plain value. */
typedef struct rlx_cost_estimate {
  rlx_device device;
  double total_s;                          /* predicted seconds per run (lazy mode) */
  double flops, bytes;                     /* FLOPs and bytes moved, all nodes */
  size_t nodes;                            /* nodes that run (control flow unrolled; no leaves) */
  double family_s[RLX_COST_FAMILY_COUNT];  /* seconds per family; they add up to total_s */
  double family_flops[RLX_COST_FAMILY_COUNT];
  double family_bytes[RLX_COST_FAMILY_COUNT];
  size_t family_nodes[RLX_COST_FAMILY_COUNT];
} rlx_cost_estimate;

/* Predicts the run time of graph `g` (borrowed) on the device `cal` describes (device is recorded
 * as given). Every value type of g must be static (fix the input shapes first, e.g. with
 * rlx_onnx_options_set_shape). Errors: INVALID_ARGUMENT (NULL argument; a symbolic dim: the node
 * and type are named; a figure that is not positive), errors of binding a sub-graph. *out
 * untouched on failure. */
rlx_status *rlx_cost_predict(const rlx_graph *g, const rlx_calibration *cal, rlx_device device, rlx_cost_estimate *out);

/* Picks the device with the smaller predicted time for `g`, calibrating each device through
 * rlx_calibration_get (cache first). Without a GPU the CPU is picked and out_gpu (may be NULL) gets
 * total_s = INFINITY and nothing else; out_cpu may be NULL too. Errors: those of
 * rlx_calibration_get and rlx_cost_predict. Out-parameters untouched on failure. */
rlx_status *rlx_cost_pick_device(const rlx_graph *g, const rlx_calibrate_options *opts, rlx_device *out_device,
                                 rlx_cost_estimate *out_cpu, rlx_cost_estimate *out_gpu);

#ifdef __cplusplus
}
#endif
#endif
