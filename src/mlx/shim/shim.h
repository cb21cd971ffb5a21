/* shim.h: rlx's C ABI over mlx::core, the only C++ in rlx (shim_*.cpp implement it).
 *
 * One function per MLX call, thin: argument conversion, the call, and exception capture.
 *
 * Context (rlx_mx): an arena of arrays, a device stream, a sticky error and an allocation limit
 * (rlx_mx_set_max_allocation). Every op takes the context first and returns an array owned by
 * the context's arena (freed by rlx_mx_free or rlx_mx_clear). When an op fails (MLX throws), the context records the error as a status and
 * the op returns NULL; every later op on a failed context, and every op given a NULL array,
 * returns NULL without doing anything. So lowering code composes ops without checking each
 * result and checks the context once (rlx_mx_failed / rlx_mx_take_error). No C++ exception ever
 * leaves the shim.
 *
 * Kept arrays (rlx_mx_keep) live outside any arena until rlx_mx_release; they can be used as
 * operands in any context (params, constants and device-resident handles).
 *
 * Thread-safety: a context is used by one thread at a time. Kept arrays may be shared read-only.
 */
#ifndef RLX_MLX_SHIM_H
#define RLX_MLX_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_mx rlx_mx;
typedef struct rlx_mx_arr rlx_mx_arr;
typedef struct rlx_mx_fn rlx_mx_fn;

typedef enum rlx_mx_device { RLX_MX_CPU = 0, RLX_MX_GPU = 1 } rlx_mx_device;

/* ---- runtime ---- */
const char *rlx_mx_version(void);
/* true when MLX was built with a GPU backend and a GPU is present. Never throws. */
bool rlx_mx_gpu_available(void);
/* Once per process, when neither CUDA_HOME nor CUDA_PATH is set: sets CUDA_HOME to the first of
 * /usr/local/cuda and <site-packages>/nvidia/cu13 (next to MLX's package) that holds
 * include/cuda_runtime.h, for the NVRTC compiles of MLX's CUDA backend. Never throws. */
void rlx_mx_cuda_home(void);
/* MLX's peak allocation in bytes (0 when MLX throws). Never throws. */
size_t rlx_mx_peak_memory(void);
/* A description of the device ("cpu", or the GPU's name). */
void rlx_mx_device_name(rlx_mx_device d, char *buf, size_t cap);

/* ---- contexts ---- */
/* Creates a context on the calling thread's default stream of `device`. UNAVAILABLE when the
 * device is a GPU and none is available. */
RLX_MUST_USE rlx_status *rlx_mx_create(rlx_mx_device device, rlx_mx **out);
void rlx_mx_free(rlx_mx *c);
/* Releases every arena array (kept arrays are unaffected); the error is kept. */
void rlx_mx_clear(rlx_mx *c);
bool rlx_mx_failed(const rlx_mx *c);
/* Returns the recorded error (NULL when none) and clears it. */
RLX_MUST_USE rlx_status *rlx_mx_take_error(rlx_mx *c);
/* Records `st` as the context's error unless one is recorded already (then `st` is freed). */
void rlx_mx_fail(rlx_mx *c, rlx_status *st);
rlx_mx_device rlx_mx_get_device(const rlx_mx *c);
/* The memory of `device` in bytes: MLX's memory limit on a GPU (0.8 x the device's memory on
 * CUDA), else the physical RAM (SIZE_MAX when the system cannot say). Never throws. */
size_t rlx_mx_device_memory(rlx_mx_device device);
/* The most bytes one array of this context may take (default: rlx_mx_device_memory of its
 * device). Every op checks the array it returns, and ops whose MLX implementation allocates a
 * larger buffer inside (a convolution's unfolded input and attention's scores on the CPU) check
 * that too, before MLX allocates anything: a larger one fails the op with RESOURCE_EXHAUSTED
 * naming its shape (or size), its bytes and the limit. Compiled functions trace under the limit of
 * the context that calls them. */
void rlx_mx_set_max_allocation(rlx_mx *c, size_t bytes);

/* ---- arrays ---- */
/* A heap copy of `a` (shares MLX's buffer) that outlives the context; NULL on a failed context. */
rlx_mx_arr *rlx_mx_keep(rlx_mx *c, rlx_mx_arr *a);
void rlx_mx_release(rlx_mx_arr *a); /* NULL accepted */
/* Copies host bytes (numel * dtype size, little-endian) into a new array of the given type. */
rlx_mx_arr *rlx_mx_from_bytes(rlx_mx *c, const void *data, const rlx_type *t);
/* rlx_mx_from_bytes for an array kept across runs (params, device handles, constants): on the
 * CPU, one of 1 MB or more is put in transparent huge pages (kernels.h advise_huge_pages). */
rlx_mx_arr *rlx_mx_from_bytes_resident(rlx_mx *c, const void *data, const rlx_type *t);
/* A scalar (rank 0) of `dtype` holding v (bool: v != 0; complex: real part; integers: v
 * saturated at the dtype's limits, NaN as 0). rlx_mx_full fills the same way. */
rlx_mx_arr *rlx_mx_scalar(rlx_mx *c, double v, rlx_dtype dtype);
/* Evaluates `a` and copies its elements (row-major) into dst, which holds exactly `nbytes`.
 * Returns false (error recorded) on failure or size mismatch. */
bool rlx_mx_to_host(rlx_mx *c, rlx_mx_arr *a, void *dst, size_t nbytes);
/* Type of an array (dtype and shape). false for NULL or an MLX dtype rlx lacks. */
bool rlx_mx_type(const rlx_mx_arr *a, rlx_type *out);
/* Whether a has been submitted for evaluation (its buffer and layout are known) and is row-contiguous. */
bool rlx_mx_row_contiguous(const rlx_mx_arr *a);
/* Whether a and b, both submitted for evaluation, hold the same buffer (one may be a view of the other). */
bool rlx_mx_shares_memory(const rlx_mx_arr *a, const rlx_mx_arr *b);
/* A copy of a (exact, any dtype) in a buffer nothing else holds. */
rlx_mx_arr *rlx_mx_copy_fresh(rlx_mx *c, rlx_mx_arr *a);

/* ---- evaluation ---- */
void rlx_mx_eval(rlx_mx *c, rlx_mx_arr *const *a, size_t n);
void rlx_mx_async_eval(rlx_mx *c, rlx_mx_arr *const *a, size_t n);

/* ---- compile (mlx::core::compile) ----
 * The trace callback lowers the computation from `in` (arena arrays of the trace context) and
 * writes n_out arrays to `out`. A non-NULL status aborts the trace and comes back from
 * rlx_mx_call as the context error; the function stays usable (the next call traces again).
 * MLX caches traces per thread (and per input shapes/dtypes, or per ranks/dtypes when
 * shapeless): the first call of a function on each thread traces it there. A function is called
 * by one thread at a time; rlx_mx_fn_free may run on any thread and erases the function's traces
 * from every thread's cache (other threads' at their next rlx_mx_call). */
typedef rlx_status *(*rlx_mx_trace_fn)(void *ud, rlx_mx *trace, rlx_mx_arr *const *in, size_t n_in,
                                       rlx_mx_arr **out, size_t n_out);
RLX_MUST_USE rlx_status *rlx_mx_compile(rlx_mx_trace_fn fn, void *ud, bool shapeless, rlx_mx_fn **out);
/* Calls a compiled function; outputs land in c's arena. false on failure (error recorded). */
bool rlx_mx_call(rlx_mx *c, rlx_mx_fn *f, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out);
void rlx_mx_fn_free(rlx_mx_fn *f);

/* ---- vjp (mlx::core::vjp) ----
 * The vector-Jacobian product of the computation a trace callback builds (called once, on arena
 * arrays of a fresh context on c's device and stream standing for primals[0..n_in)), with one
 * cotangent per output (cot[0..n_out), of the output's shape): grads[i] = the gradient of
 * sum_j sum(cot_j * out_j) with respect to primals[i], of its shape, in c's arena. Lazy like any
 * op (works inside compile traces). false on failure (error recorded; a callback's status comes
 * back as the context error). */
bool rlx_mx_vjp(rlx_mx *c, rlx_mx_trace_fn fn, void *ud, rlx_mx_arr *const *primals, size_t n_in, rlx_mx_arr *const *cot,
                size_t n_out, rlx_mx_arr **grads);

/* ---- elementwise ---- */
typedef enum rlx_mx_unary_op {
  RLX_MXU_ABS, RLX_MXU_NEGATIVE, RLX_MXU_EXP, RLX_MXU_LOG, RLX_MXU_SQRT, RLX_MXU_RSQRT,
  RLX_MXU_SIN, RLX_MXU_COS, RLX_MXU_TAN, RLX_MXU_ARCSIN, RLX_MXU_ARCCOS, RLX_MXU_ARCTAN,
  RLX_MXU_SINH, RLX_MXU_COSH, RLX_MXU_TANH, RLX_MXU_ARCSINH, RLX_MXU_ARCCOSH, RLX_MXU_ARCTANH,
  RLX_MXU_SIGMOID, RLX_MXU_ROUND, RLX_MXU_FLOOR, RLX_MXU_CEIL, RLX_MXU_SIGN, RLX_MXU_RECIPROCAL,
  RLX_MXU_ERF, RLX_MXU_LOGICAL_NOT, RLX_MXU_ISNAN, RLX_MXU_ISPOSINF, RLX_MXU_ISNEGINF,
  RLX_MXU_BITWISE_INVERT, RLX_MXU_SQUARE, RLX_MXU_LOG1P, RLX_MXU_EXPM1, RLX_MXU_STOP_GRADIENT,
  RLX_MXU_REAL, RLX_MXU_IMAG, RLX_MXU_ERFINV, RLX_MXU_ISINF
} rlx_mx_unary_op;
rlx_mx_arr *rlx_mx_unary(rlx_mx *c, rlx_mx_unary_op op, rlx_mx_arr *a);

typedef enum rlx_mx_binary_op {
  RLX_MXB_ADD, RLX_MXB_SUBTRACT, RLX_MXB_MULTIPLY, RLX_MXB_DIVIDE, RLX_MXB_MAXIMUM, RLX_MXB_MINIMUM,
  RLX_MXB_POWER, RLX_MXB_REMAINDER, RLX_MXB_FLOOR_DIVIDE, RLX_MXB_LOGICAL_AND, RLX_MXB_LOGICAL_OR,
  RLX_MXB_BITWISE_AND, RLX_MXB_BITWISE_OR, RLX_MXB_BITWISE_XOR, RLX_MXB_LEFT_SHIFT, RLX_MXB_RIGHT_SHIFT,
  RLX_MXB_EQUAL, RLX_MXB_NOT_EQUAL, RLX_MXB_LESS, RLX_MXB_LESS_EQUAL, RLX_MXB_GREATER,
  RLX_MXB_GREATER_EQUAL, RLX_MXB_LOGADDEXP, RLX_MXB_ARCTAN2
} rlx_mx_binary_op;
rlx_mx_arr *rlx_mx_binary(rlx_mx *c, rlx_mx_binary_op op, rlx_mx_arr *a, rlx_mx_arr *b);

rlx_mx_arr *rlx_mx_where(rlx_mx *c, rlx_mx_arr *cond, rlx_mx_arr *x, rlx_mx_arr *y);
rlx_mx_arr *rlx_mx_astype(rlx_mx *c, rlx_mx_arr *a, rlx_dtype dtype);
/* Reinterprets the bytes of a contiguous copy as another dtype of the same size (mx::view). */
rlx_mx_arr *rlx_mx_view(rlx_mx *c, rlx_mx_arr *a, rlx_dtype dtype);
rlx_mx_arr *rlx_mx_clip(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *lo, rlx_mx_arr *hi); /* lo/hi may be NULL */

/* ---- shape ---- */
rlx_mx_arr *rlx_mx_reshape(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *dims);
rlx_mx_arr *rlx_mx_transpose(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *perm);
/* Strided slice: start/stop/strides per axis (mx::slice; negative strides allowed). */
rlx_mx_arr *rlx_mx_slice(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *start, const int64_t *stop,
                         const int64_t *strides);
/* In-place-style slice update: returns a copy of `a` with `upd` written at [start:stop:strides]. */
rlx_mx_arr *rlx_mx_slice_update(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *upd, int rank, const int64_t *start,
                                const int64_t *stop, const int64_t *strides);
rlx_mx_arr *rlx_mx_concatenate(rlx_mx *c, rlx_mx_arr *const *a, size_t n, int axis);
rlx_mx_arr *rlx_mx_stack(rlx_mx *c, rlx_mx_arr *const *a, size_t n, int axis);
rlx_mx_arr *rlx_mx_broadcast_to(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *dims);
/* mode: "constant" (value is a scalar array of a's dtype), "edge", "reflect", "symmetric". */
rlx_mx_arr *rlx_mx_pad(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *lo, const int64_t *hi,
                       rlx_mx_arr *value, const char *mode);
rlx_mx_arr *rlx_mx_tile(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *reps);
rlx_mx_arr *rlx_mx_contiguous(rlx_mx *c, rlx_mx_arr *a);
/* A strided view (element strides) of a row-contiguous copy of `a` (mx::as_strided). */
rlx_mx_arr *rlx_mx_as_strided(rlx_mx *c, rlx_mx_arr *a, int rank, const int64_t *shape, const int64_t *strides,
                              int64_t offset);
rlx_mx_arr *rlx_mx_arange(rlx_mx *c, double start, double stop, double step, rlx_dtype dtype);
rlx_mx_arr *rlx_mx_full(rlx_mx *c, int rank, const int64_t *dims, double v, rlx_dtype dtype);

/* ---- indexing ---- */
rlx_mx_arr *rlx_mx_take(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, int axis);
rlx_mx_arr *rlx_mx_take_along_axis(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, int axis);
/* reduce: 0 none (put), 1 add, 2 mul, 3 max, 4 min (scatter along axis). */
rlx_mx_arr *rlx_mx_put_along_axis(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, rlx_mx_arr *upd, int axis, int reduce);
/* put_along_axis without reduction written into a's own buffer (kernel_scatter.cpp): the result
 * shares a's memory, so a's old values are gone for every holder of a. idx (integers, every
 * index in [0, a's size along axis): unchecked) and upd (a's dtype) have one shape, a's but along
 * axis. For an operand nothing else reads: a donated KV cache (exec_handles.c,
 * rlx_exec_plan_inplace). On the CPU an a that is not row-contiguous is copied first; on a GPU a
 * is written through its strides, which must not alias (no broadcast), and a reader of the result
 * is ordered after the write only if it also reads the write's marker (kernel_scatter_cuda.cpp):
 * rlx_mx_attention_bias_cuda does, rlx_mx_after_writes orders any other. */
rlx_mx_arr *rlx_mx_put_along_axis_inplace(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *idx, rlx_mx_arr *upd, int axis);
/* x, ordered on a GPU after the in-place writes (rlx_mx_put_along_axis_inplace) that produced
 * from[0..n) (or views of them; NULL entries skipped): x + 0 * each write's marker, one elementwise
 * kernel in MLX's CUDA graph with an edge from each write. x itself when there is none (always on
 * the CPU). */
rlx_mx_arr *rlx_mx_after_writes(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *const *from, size_t n);
/* mx::scatter family: indices[i] index axes[i]; updates have rank = idx rank + a rank. */
rlx_mx_arr *rlx_mx_scatter(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *const *idx, size_t n_idx, rlx_mx_arr *upd,
                           const int *axes, int reduce);

/* ---- reductions, scans, sorting ---- */
/* kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 logsumexp, 6 all, 7 any. n_axes 0 = all axes. */
rlx_mx_arr *rlx_mx_reduce(rlx_mx *c, rlx_mx_arr *a, int kind, int n_axes, const int *axes, bool keepdims);
rlx_mx_arr *rlx_mx_argmax(rlx_mx *c, rlx_mx_arr *a, int axis, bool keepdims);
rlx_mx_arr *rlx_mx_argmin(rlx_mx *c, rlx_mx_arr *a, int axis, bool keepdims);
/* kind: 0 cumsum, 1 cumprod, 2 cummax, 3 cummin. */
rlx_mx_arr *rlx_mx_scan(rlx_mx *c, rlx_mx_arr *a, int kind, int axis, bool reverse, bool inclusive);
rlx_mx_arr *rlx_mx_sort(rlx_mx *c, rlx_mx_arr *a, int axis);
rlx_mx_arr *rlx_mx_argsort(rlx_mx *c, rlx_mx_arr *a, int axis);
rlx_mx_arr *rlx_mx_softmax(rlx_mx *c, rlx_mx_arr *a, int axis, bool precise);

/* ---- linear algebra and nn ---- */
/* mx::matmul semantics. On the CPU, float32 operands of rank >= 2 whose batch dims agree (or are
 * all 1 on one side) run rlx's GEMM kernel over tiles on the kernel pool (kernel_gemm.cpp). */
rlx_mx_arr *rlx_mx_matmul(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b);
/* bias + a @ b (mx::addmm; the CPU backend folds bias into the GEMM as its C operand, beta 1);
 * bias broadcasts to the product's shape. */
rlx_mx_arr *rlx_mx_addmm(rlx_mx *c, rlx_mx_arr *bias, rlx_mx_arr *a, rlx_mx_arr *b);
/* mx::conv_general on channels-last x [N, d.., C] and w [Co, k.., C / groups]; a stride past the
 * padded (input-dilated) extent of x and the kernel's span is taken as the larger of the two (the
 * same single window; MLX's strides are ints). */
rlx_mx_arr *rlx_mx_conv_general(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, int nsp, const int64_t *stride,
                                const int64_t *pad_lo, const int64_t *pad_hi, const int64_t *kernel_dilation,
                                const int64_t *input_dilation, int groups, bool flip);
/* LayerNorm (rms false) or RMSNorm (then plus b) of x over `axis` (0 <= axis < ndim); w, b may be
 * NULL. On the CPU, float32 x (with float32 w, b of that axis's size in values) runs rlx's kernel
 * (kernel_norm.cpp) in x's layout: MLX has none there and runs the op's fallback, 5-7
 * single-threaded passes. Elsewhere fast::layer_norm / rms_norm, the axis moved last and back. */
rlx_mx_arr *rlx_mx_norm(rlx_mx *c, bool rms, rlx_mx_arr *x, int axis, rlx_mx_arr *w, rlx_mx_arr *b, float eps);
/* Rope (rlx's kernel: kernel_rope.cpp on the CPU, kernel_rope_cuda.cpp on a GPU): float32 x [.., S, H * head_dim], each head's
 * first n_rot values rotated by rows 0..S-1 of the float32 tables cos, sin [>= S, >= n_rot / 2]
 * (row s for index s of x's second last axis): interleaved pairs (2i, 2i + 1) or halves
 * (i, i + n_rot / 2); sign -1 the inverse rotation (RopeBackward). */
rlx_mx_arr *rlx_mx_rope(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *cs, rlx_mx_arr *sn, int64_t head_dim, int64_t n_rot, bool interleaved,
                        float sign);
/* fast::scaled_dot_product_attention: q/k/v [B,H,S,D]; mask_mode "", "causal" or "array". On the
 * CPU, float32 q/k/v run rlx's kernel (kernel_attention.cpp; MLX runs the op's single-threaded
 * fallback there): a bool mask hides keys, a float one is added; a query row with no visible
 * key comes out as zeros (MLX: the mean of the values). */
rlx_mx_arr *rlx_mx_sdpa(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, float scale, const char *mask_mode,
                        rlx_mx_arr *mask);
/* rlx_mx_sdpa on packed operands, the CPU kernel only (float32): q [B,Sq,Hq*D], k [B,Sk,Hkv*D],
 * v [B,Sk,Hkv*Dv] read as [B,H,S,D] through their strides (no split of the heads), y [B,Sq,Hq*Dv]. */
rlx_mx_arr *rlx_mx_sdpa_packed(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, int64_t hq, int64_t hkv, float scale,
                               const char *mask_mode, rlx_mx_arr *mask);
/* FusedSwiGLU on float32 x [.., 2N] (rlx's CPU kernel; on a GPU MLX's ops, recorded for
 * rlx_mx_matvec's x_once): y [.., N] = silu(gate) * up, gate the first half of each row when
 * gate_first, else the second; x may be strided. */
rlx_mx_arr *rlx_mx_swiglu(rlx_mx *c, rlx_mx_arr *x, bool gate_first);
rlx_mx_arr *rlx_mx_gather_mm(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b, rlx_mx_arr *lhs_idx, rlx_mx_arr *rhs_idx);
/* mx::quantized_matmul; mode "affine" (biases given), "mxfp4", "nvfp4" or "mxfp8" (no biases). */
rlx_mx_arr *rlx_mx_quantized_matmul(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *scales, rlx_mx_arr *biases,
                                    bool transpose, int group_size, int bits, const char *mode);
/* mx::gather_qmm: quantized_matmul of x with w[rhs_idx] (w, scales, biases stacked over experts
 * on their first axis); modes as rlx_mx_quantized_matmul. */
rlx_mx_arr *rlx_mx_gather_qmm(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *scales, rlx_mx_arr *biases,
                              rlx_mx_arr *rhs_idx, int group_size, int bits, const char *mode);

/* ---- rlx's own CPU kernels (MLX primitives in kernel_*.cpp; see kernels.h) ----
 * CPU stream only: the lowering calls them only on a CPU context (on a GPU they fail when
 * evaluated). Their work is split over a thread pool of rlx_mx_num_threads() threads. */

/* The activation a kernel applies to its output (float): none, max(x, 0), min(max(x, a), b),
 * max(0, min(1, a x + b)) (ONNX HardSigmoid), x max(0, min(1, a x + b)) (ONNX HardSwish with
 * a = 1/6, b = 1/2), 1 / (1 + exp(-x)), x / (1 + exp(-x)) (SiLU), x/2 (1 + erf(x / sqrt 2)) (Gelu),
 * x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GeluApprox), tanh(x). */
typedef enum rlx_mx_act_kind {
  RLX_MX_ACT_NONE, RLX_MX_ACT_RELU, RLX_MX_ACT_CLIP, RLX_MX_ACT_HARD_SIGMOID, RLX_MX_ACT_HARD_SWISH, RLX_MX_ACT_SIGMOID,
  RLX_MX_ACT_SILU, RLX_MX_ACT_GELU, RLX_MX_ACT_GELU_TANH, RLX_MX_ACT_TANH
} rlx_mx_act_kind;
typedef struct rlx_mx_act {
  int kind; /* rlx_mx_act_kind */
  float a, b;
} rlx_mx_act;

/* Threads of the kernels' pool, the calling thread included: RLX_NUM_THREADS when set to a
 * positive integer, else the CPUs the process may run on (sched_getaffinity). */
int rlx_mx_num_threads(void);

/* The right operand w [K, N] (transposed: w [N, K]) float32 of rlx_mx_matmul_packed, packed into
 * the GEMM kernel's panels (a float32 vector; CPU): made once for a constant weight. */
rlx_mx_arr *rlx_mx_pack_rhs(rlx_mx *c, rlx_mx_arr *w, bool transposed);
/* x [..., K] float32 @ W [K, N] (+ bias [N] float32, NULL: none), then act: y [..., N] float32;
 * W given as its panels (rlx_mx_pack_rhs). CPU. */
rlx_mx_arr *rlx_mx_matmul_packed(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *packed, int64_t n, rlx_mx_arr *bias, rlx_mx_act act);

/* Direct 2D convolution, channels first: x [N,C,H,W], w [Co,C/group,kh,kw], b [Co] or NULL,
 * strides[2], pads[4] (begin h, w, end h, w; >= 0), dilations[2]; y [N,Co,OH,OW] (contiguous)
 * = act(conv + b). 1D: x [N,C,L], w [Co,C/group,k] give y [N,Co,OL] (height 1: strides[0] and
 * dilations[0] 1, pads[0] and pads[2] 0). Float dtypes (computed in float32). Fast when C/group * kh * kw is small
 * (depthwise convolutions, a few input channels). */
rlx_mx_arr *rlx_mx_direct_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, const int64_t *strides,
                                 const int64_t *pads, const int64_t *dilations, int64_t group, rlx_mx_act act);
/* GEMM 2D convolution (CPU), arguments and result as rlx_mx_direct_conv2d: per image and group,
 * the patches of a block of output positions (none for 1x1 convolutions with stride 1 and no
 * pads) times the weight rows, on the kernel pool, then bias and activation. For convolutions
 * with many input channels per group. wino: NULL, or w's Winograd transform
 * (rlx_mx_winograd_weights): a convolution rlx_mx_winograd_fits whose output is at least 4 x 4
 * and at most 2^16 wide then runs by F(2x2, 3x3) (kernel_winograd.cpp). */
rlx_mx_arr *rlx_mx_gemm_conv2d(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *b, rlx_mx_arr *wino, const int64_t *strides,
                               const int64_t *pads, const int64_t *dilations, int64_t group, rlx_mx_act act);
/* Whether the filters [Co, C, kh, kw] of a 2D convolution with `group` groups, strides and
 * dilations fit Winograd's F(2x2, 3x3) kernel: 3x3, stride 1, no dilation, one group, 32 to 2^14
 * input channels, at least 32 outputs (fewer channels: the transforms and the shallow products
 * outweigh the multiply-adds saved). */
bool rlx_mx_winograd_fits(int64_t C, int64_t Co, int64_t group, int64_t kh, int64_t kw, const int64_t *strides, const int64_t *dilations);
/* The filters w [Co, C, 3, 3] (float) of a convolution transformed for Winograd's F(2x2, 3x3):
 * U[4 i + j] = (G w G^T)[i, j] with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] (Lavin and Gray
 * 2016), float32 [16, ceil(Co / R), C, R] for the R rows the GEMM's micro-kernel takes per call
 * (8 with AVX-512, else 6; kernels.h gemm_rows_per_call): U[xi][o][c] at [xi, o / R, c, o % R],
 * zeros past Co. Made once per executable for a constant weight (exec_layout.c). */
rlx_mx_arr *rlx_mx_winograd_weights(rlx_mx *c, rlx_mx_arr *w);
/* MaxPool(y) with windows of window[0] x window[1] at the same strides, no pads, dilation 1, floor
 * mode (ONNX MaxPool), as one kernel, where y is an rlx_mx_direct_conv2d / rlx_mx_gemm_conv2d
 * result (float32, not yet evaluated, without a pool): a new convolution over y's operands whose
 * result is the pooled one, [N, Co, OH / window[0], OW / window[1]] (the max as rlx_mx_pool2d
 * takes it); the convolution's rows are pooled as its tiles are formed, never all written. y
 * itself is left as it is (not evaluated unless read elsewhere). NULL, with no error set, when y
 * is not such a result, the window is 1 x 1 or larger than y's spatial dims, or y is a 1D
 * convolution run as a row ([N, C, L, 1] with a kernel of width 1). */
rlx_mx_arr *rlx_mx_conv_max_pool(rlx_mx *c, rlx_mx_arr *y, const int64_t *window);
/* act(y + r) as one convolution, where y is an rlx_mx_direct_conv2d / rlx_mx_gemm_conv2d result
 * (float32, not yet evaluated, without an activation or a pool): a new convolution over y's
 * operands and r that adds r (NULL: nothing; float32 of y's shape, any strides) to the
 * convolution + bias and then applies act (RLX_MX_ACT_NONE: none), in its task on the kernel
 * pool, where the Add (ONNX Add) and the activation would each be a pass of their own (a residual
 * block's Add + Relu). y itself is left as it is. NULL, with no error set, when y is not such a
 * result, r is given and y already adds one, r's dtype or shape differ from y's, or r is NULL and
 * act is none. */
rlx_mx_arr *rlx_mx_conv_epilogue(rlx_mx *c, rlx_mx_arr *y, rlx_mx_arr *r, rlx_mx_act act);
/* Direct 2D pooling, channels first: x [N,C,H,W] -> y [N,C,OH,OW] (contiguous); kind 0 max,
 * 1 min, 2 sum, 3 mean; kernel[2], strides[2], pads[4] (begin h, w, end h, w), dilations[2];
 * ONNX MaxPool / AveragePool semantics (pads hold no values; mean counts the window's positions
 * in the input, or with count_include_pad those in the padded extent; ceil_mode output sizes).
 * Float dtypes (computed in float32). 1D: x [N,C,L] -> y [N,C,OL] (height 1: kernel[0],
 * strides[0], dilations[0] 1, pads[0] and pads[2] 0). */
rlx_mx_arr *rlx_mx_pool2d(rlx_mx *c, rlx_mx_arr *x, int kind, const int64_t *kernel, const int64_t *strides,
                          const int64_t *pads, const int64_t *dilations, bool count_include_pad, bool ceil_mode);
/* Resize of the last two axes of x (rank >= 2, leading axes kept), float dtypes (computed in
 * float32; CPU): y[..., o, p] = sum over a < th, b < tw of wh[o th + a] ww[p tw + b]
 * x[..., ih[o th + a], iw[p tw + b]] for o < oh, p < ow; the taps ih / wh [oh, th] and iw / ww
 * [ow, tw] (indices inside the input) are copied. */
rlx_mx_arr *rlx_mx_resize2d(rlx_mx *c, rlx_mx_arr *x, int64_t oh, int64_t th, const int32_t *ih, const float *wh, int64_t ow,
                            int64_t tw, const int32_t *iw, const float *ww);
/* y [.., N] float32 = x [.., K] @ W^T for float x of any rank >= 1 (M rows; computed in float32;
 * rlx's CPU kernel): W the packed rows uint8 [N, K / QK * block bytes] of a GGUF Q8_0 (scheme 0),
 * Q4_K (scheme 1), Q4_0 (scheme 4), Q4_1 (scheme 5), Q6_K (scheme 6), Q5_K (scheme 7), Q3_K (scheme 8),
 * Q2_K (scheme 9), Q5_0 (scheme 10) or Q5_1 (scheme 11) tensor read in place, float32 [N, K]
 * (scheme 2) or float16 [N, K] (scheme 3, widened as it is read); an operand that is not
 * row-contiguous is copied by the kernel's task (no node in front of it). Each row of W is read
 * once for M <= 4; past that, tiles of W are dequantized and multiplied by sgemm. On a GPU
 * stream: scheme 3 only, M <= RLX_MX_CUDA_MATVEC_MAX_ROWS, a CUDA source kernel reading W as
 * stored (kernel_matvec_cuda.cpp). q8 (quantized schemes, the CPU): x is first rounded to GGUF Q8_0
 * blocks (DequantMatMul's activations "q8_0", rlx/op_table.h) and, for M <= 4 (any M with w8), its
 * codes meet W's in integer dot products (Q5_0, Q5_1 and Q2_K..Q6_K but Q4_K: only through w8; row by row the
 * rounded x meets the weights in float32); w8 (NULL: none; only with q8) is rlx_mx_matvec_rows8(w),
 * which those products then read for W's first N / 8 * 8 rows. x_once: x is read by this product only; when it is
 * also rlx_mx_swiglu's result not yet evaluated (CPU and GPU), the product takes that kernel's operand and
 * forms x itself (the same rows), and x is not evaluated (a decode step's ffn_down: a node fewer
 * per layer). */
#define RLX_MX_CUDA_MATVEC_MAX_ROWS 8
rlx_mx_arr *rlx_mx_matvec(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *w, rlx_mx_arr *w8, int scheme, bool q8, bool x_once);
/* y + r as one kernel, where y is an rlx_mx_matvec product (CPU or GPU) not yet evaluated and r is
 * float32 of y's shape (any strides): a new product over y's operands that adds r to its rows once
 * they are formed (r + y, the sums of the Add); y itself is left as it is (not evaluated unless
 * read elsewhere). NULL, with no error set, when y is not such a product or r does not fit. */
rlx_mx_arr *rlx_mx_matvec_add(rlx_mx *c, rlx_mx_arr *y, rlx_mx_arr *r);
/* Whether this CPU has the kernel that reads rlx_mx_matvec_rows8's form of quantized scheme
 * `scheme` (rlx_mx_matvec's numbering: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and Q2_K..Q6_K; AVX-512 VNNI on x86-64, a
 * portable one in builds without rlx's AVX2 kernels). */
bool rlx_mx_matvec_rows8_able(int scheme);
/* uint8 [N / 8, K / QK * unit] = the packed GGUF rows w uint8 [N >= 8, K / QK * block bytes] of a
 * scheme that rlx_mx_matvec_rows8_able takes, in blocks of 8 rows interleaved 4 codes at a time
 * (the layout is kernel_matvec.cpp's "rows8"; unit = 8 blocks' bytes, Q4_K 32 more, Q5_0, Q5_1,
 * Q2_K, Q3_K, Q5_K and Q6_K a code per byte; rows past
 * N / 8 * 8 are left out), on a CPU stream: made once for a constant or param W and kept. */
rlx_mx_arr *rlx_mx_matvec_rows8(rlx_mx *c, rlx_mx_arr *w, int scheme);
/* y [B,H,S,Dv] = softmax((q scale) K^T + mask) V on a GPU stream for float32 q [B,H,S,D], k
 * [B,Hkv,C,D], v [B,Hkv,C,Dv] (H a multiple of Hkv: grouped-query attention) and an additive mask
 * of rank <= 4 broadcasting to [B,H,S,C]: a CUDA source kernel, one thread block per query, that
 * skips the keys whose mask is -inf (kernel_attention_cuda.cpp); ordered after the in-place writes
 * that produced k and v (rlx_mx_put_along_axis_inplace). Needs
 * rlx_mx_attention_bias_cuda_fits(C, D, Dv); a query with no visible key gives NaN. */
rlx_mx_arr *rlx_mx_attention_bias_cuda(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr *mask, float scale);
/* Whether rlx_mx_attention_bias_cuda takes C keys of D dims and values of Dv dims (Dv divides 256;
 * the scores and q fit in 48 KB of shared memory). */
bool rlx_mx_attention_bias_cuda_fits(int64_t sk, int64_t d, int64_t dv);
/* float32 [.., K] = the packed rows uint8 [.., K / QK * block bytes] of a GGUF tensor dequantized
 * (rlx's CPU kernel; schemes as rlx_mx_matvec's quantized ones, the same decoders); an operand
 * that is not row-contiguous is copied by the kernel's task. */
rlx_mx_arr *rlx_mx_dequant(rlx_mx *c, rlx_mx_arr *packed, int scheme);
/* rlx_mx_unary with rlx's kernel for EXP, LOG, TANH, ERF and SIGMOID on float32 (SLEEF, 1 ULP);
 * other ops and dtypes go to rlx_mx_unary. */
rlx_mx_arr *rlx_mx_unary_kernel(rlx_mx *c, rlx_mx_unary_op op, rlx_mx_arr *x);
/* Softmax over `axis` (negative: from the end; ONNX Softmax-13); float32 runs rlx's kernel, other
 * dtypes mx::softmax (precise). */
rlx_mx_arr *rlx_mx_softmax_axis(rlx_mx *c, rlx_mx_arr *x, int axis);
/* y = act(x + b) on float32 x (any shape; y contiguous, x's buffer reused when MLX may donate it);
 * b float32 with one value per element of x's last axis (any shape of that size), or NULL. */
rlx_mx_arr *rlx_mx_bias_act(rlx_mx *c, rlx_mx_arr *x, rlx_mx_arr *b, rlx_mx_act act);

/* ---- runtime (branch runtime) ---- */
/* Clears the arena and any recorded error, and re-targets the context at the calling thread's
 * default stream of its device: a context reused across runs and threads. */
void rlx_mx_reset(rlx_mx *c);
/* Drops every arena array but keep[0..n), which move to fresh arena slots (keep[i] is updated;
 * other handles into the arena become invalid). Called before evaluating a lazily built graph so
 * that MLX can free and reuse the buffers of intermediates as it goes. */
void rlx_mx_retain_only(rlx_mx *c, rlx_mx_arr **keep, size_t n);

/* ---- fftsample: FFT, sampling, dense solve, transform state ---- */
/* mx::fft along `axis`: kind 0 fft, 1 ifft (complex64 in and out), 2 rfft (real in, complex64
 * out), 3 irfft (complex64 in, float32 out; n = output length, -1 = 2 (m - 1)). norm: 0
 * backward, 1 ortho, 2 forward (mx::fft::FFTNorm). */
rlx_mx_arr *rlx_mx_fft(rlx_mx *c, rlx_mx_arr *a, int kind, int64_t n, int axis, int norm);
/* x with a x = b (a [..., n, n], b [..., n, k], float32 or float64) by LU with partial pivoting
 * (mx::linalg::lu, LAPACK getrf, then two triangular solves) on the CPU stream whatever the
 * context's device: MLX's factorizations have no GPU implementation. Nothing raises for a singular
 * a: *singular gets an int64 scalar, the number of matrices of a with an exactly zero pivot, and
 * their x is meaningless; the caller fails the run when it is not 0 (NULL on failure). */
rlx_mx_arr *rlx_mx_solve_cpu(rlx_mx *c, rlx_mx_arr *a, rlx_mx_arr *b, rlx_mx_arr **singular);
/* mx::random::categorical(logits, axis) drawn with `key` (a uint32[2] key array, see
 * rlx_mx_random_key), or with MLX's global key sequence when key is NULL. The result is uint32
 * indices (the axis removed). */
rlx_mx_arr *rlx_mx_categorical(rlx_mx *c, rlx_mx_arr *logits, int axis, rlx_mx_arr *key);
/* true when `a` is a tracer of an mlx::compile trace being built (mx::array::is_tracer): it has
 * no value to evaluate yet. */
bool rlx_mx_is_tracer(const rlx_mx_arr *a);
/* ---- branch control ---- */
/* mx::fast::gated_delta_update(q, k, v, g, beta, state): the gated delta rule with g the decay
 * factor itself; state (may be NULL = zeros) is [B,H,Dv,Dk]. Returns y and writes the final
 * state to *state_out (NULL on failure). */
rlx_mx_arr *rlx_mx_gated_delta_update(rlx_mx *c, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr *g, rlx_mx_arr *beta,
                                      rlx_mx_arr *state, rlx_mx_arr **state_out);

/* ---- custom-op kernels and random keys (shim_custom.cpp) ---- */
/* A host kernel: reads in[i] (row-contiguous bytes of input i) and writes out[j] (row-contiguous,
 * zero-filled, of output j's type); a non-NULL status fails the evaluation. */
typedef rlx_status *(*rlx_mx_host_fn)(void *ud, const void *const *in, void *const *out);
/* out[0..n_out) = fn(in[0..n_in)) as an MLX primitive on the CPU stream (whatever the context's
 * device: a GPU operand is read through unified memory after MLX synchronizes the streams). It is
 * lazy like any MLX op, so it also works inside mx::compile. `ud` is owned from the call on:
 * free_ud(ud) (may be NULL) runs once when MLX drops the primitive, or at once when this call
 * fails. false on failure (error recorded). */
bool rlx_mx_host_call(rlx_mx *c, rlx_mx_host_fn fn, void *ud, void (*free_ud)(void *), rlx_mx_arr *const *in, size_t n_in,
                      const rlx_type *out_types, size_t n_out, rlx_mx_arr **out);

typedef enum rlx_mx_targ_kind { RLX_MX_TARG_INT, RLX_MX_TARG_BOOL, RLX_MX_TARG_DTYPE } rlx_mx_targ_kind;
typedef struct rlx_mx_template_arg {
  const char *name;
  rlx_mx_targ_kind kind;
  int64_t i;        /* INT, BOOL */
  rlx_dtype dtype;  /* DTYPE */
} rlx_mx_template_arg;
/* One call of a CUDA source kernel (mx::fast::cuda_kernel: the body `source` is wrapped in a
 * __global__ function taking the inputs as `const T *name` (plus name_shape / name_strides /
 * name_ndim when the source mentions them) and the outputs as `T *name`; compiled by NVRTC on
 * first use and cached by MLX). grid counts threads per dimension, threadgroup threads per block
 * (blocks = ceil(grid / threadgroup)). */
typedef struct rlx_mx_cuda_call {
  const char *name;  /* kernel name (letters, digits, '_') */
  const char *source, *header;
  const char *const *in_names;
  size_t n_in;
  const char *const *out_names;
  const rlx_type *out_types;
  size_t n_out;
  int grid[3], threadgroup[3];
  const rlx_mx_template_arg *template_args;
  size_t n_template_args;
  bool has_init_value;
  float init_value;
  bool ensure_row_contiguous;
  int shared_memory; /* bytes of dynamic shared memory */
} rlx_mx_cuda_call;
/* Calls kernel k on in[0..k->n_in) (context's stream; GPU only: MLX raises on the CPU), writing
 * k->n_out arrays to out. An NVRTC compile error surfaces when the outputs are evaluated, with
 * NVRTC's log. false on failure (error recorded). */
bool rlx_mx_cuda_kernel(rlx_mx *c, const rlx_mx_cuda_call *k, rlx_mx_arr *const *in, rlx_mx_arr **out);

/* mx::random::key(seed): a uint32[2] key. */
rlx_mx_arr *rlx_mx_random_key(rlx_mx *c, uint64_t seed);
/* A fresh uint32[2] key drawn from MLX's global key sequence. */
rlx_mx_arr *rlx_mx_random_fresh_key(rlx_mx *c);
/* mx::random::split(key): returns the next key of the chain and writes the subkey to use now to
 * *sub (NULL on failure). */
rlx_mx_arr *rlx_mx_random_split(rlx_mx *c, rlx_mx_arr *key, rlx_mx_arr **sub);

#ifdef __cplusplus
}
#endif
#endif
