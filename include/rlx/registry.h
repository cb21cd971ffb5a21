/* rlx/registry.h: custom ops, a process-wide registry of named kernels for the Custom op.
 *
 * A custom op is registered once under a name. Graphs use it through the Custom op
 * (RLX_OP_CUSTOM, see rlx/op_table.h) with the string attribute name = "<registered name>"; every
 * other attribute of that node is the op's own and is passed to its functions. A registration
 * supplies both sides rlx needs:
 * - the IR side: the arity (min/max inputs) and a shape-inference function, so rlx_graph_add can
 *   build and check the node, and symbolic dims can be bound before a run;
 * - the backend side: a graph kernel (a) or a host kernel (b), a CUDA source kernel (c), or (c)
 *   together with (a) or (b), which then serves every device but the GPU.
 *   (a) A graph kernel (expand) builds the op's computation from rlx ops. When the node is
 *       lowered, rlx creates a fresh sub-graph whose inputs in0, in1, ... have the node's concrete
 *       input types, the kernel adds nodes to it with the graph builder (rlx/graph.h: constants,
 *       rlx_graph_add, even other custom ops) and names the output values; rlx lowers that
 *       sub-graph onto MLX in place of the node (as If/While bodies are). The computation stays in
 *       MLX's lazy graph: it runs on any device, fuses with its neighbours and works in every
 *       execution mode, compiled included. The sub-graph is built again each time the node is
 *       lowered (each run in lazy and eager mode, once per trace in compiled mode).
 *   (b) A host kernel receives the node's inputs as host tensors and writes its outputs into host
 *       tensors that rlx allocated with the inferred types (zero-filled). It runs as an MLX
 *       primitive on MLX's CPU stream: lazily, when the evaluation reaches it, on MLX's CPU
 *       worker thread (not the thread that called run), in every execution mode, compiled
 *       included (the trace records the call and every replay calls the kernel again). It is an
 *       opaque node: MLX cannot fuse across it, and its inputs are made row-contiguous first.
 *       Cost on the GPU: the inputs are read and the outputs written through unified memory, so
 *       MLX waits for the GPU work the inputs depend on and the data migrates to the host and
 *       back (a device-to-host copy of the inputs, a host-to-device copy of the outputs).
 *   (c) A CUDA source kernel (rlx_custom_cuda_kernel) runs on the GPU through MLX's
 *       mx::fast::cuda_kernel: NVRTC compiles the source on its first use (MLX caches the
 *       module). It works in every execution mode. On an executable whose device is the CPU,
 *       the op's graph or host kernel runs instead; an op with only a CUDA kernel fails there
 *       with UNAVAILABLE naming the op.
 * Kernels never see MLX or its C++ API.
 *
 * Attributes are passed to the functions as rlx_attr values (rlx/graph.h) borrowed for the call,
 * `name` excluded; sub-graph attributes are passed as borrowed graphs (do not free or move them).
 *
 * Lifetime: the registry copies the definition (and the name). user_data is owned by the caller
 * until the registration ends: when the op is replaced by a new registration of the same name or
 * unregistered, free_user_data (when not NULL) is called once, after every call that was running
 * into the old registration has returned. Graphs hold the name only: a graph whose custom op was
 * unregistered fails to bind or run with NOT_FOUND; one whose op was replaced uses the new
 * registration from then on.
 *
 * Thread-safety: the registry is guarded by a reader-writer lock; register, unregister and
 * lookups (graph building, binding, lowering) may run on any threads at once. The lock is not held
 * while an op's functions run, so they may build graphs and even (un)register ops. The functions
 * of one op may be called from several threads at once (different graphs or executables) and must
 * be thread-safe for that use.
 */
#ifndef RLX_REGISTRY_H
#define RLX_REGISTRY_H

#include "rlx/graph.h"
#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shape inference: from the input types in[0..n_in) (dims may be symbolic while a graph is being
 * built, see rlx/types.h; they are concrete when a graph is bound for a run) and the attributes,
 * writes the output types to out[0..*n_out) (1 <= *n_out <= out_cap). A failure is reported to
 * the caller of rlx_graph_add annotated with the node and the op name; use INVALID_ARGUMENT for
 * bad shapes/dtypes/attributes, as built-in ops do. */
typedef rlx_status *(*rlx_custom_infer_fn)(void *user_data, size_t n_in, const rlx_type *in, size_t n_attrs,
                                           const rlx_attr *attrs, size_t out_cap, rlx_type *out, size_t *n_out);

/* Graph kernel: adds the op's computation to `g` (the sub-graph described above) from its inputs
 * in[0..n_in) and writes the n_out output values to out (values of g; the same value may appear
 * twice, an input may be an output). Each output's type must equal the inferred one; a mismatch
 * fails the run with INVALID_ARGUMENT. `g` stays owned by rlx. */
typedef rlx_status *(*rlx_custom_expand_fn)(void *user_data, rlx_graph *g, size_t n_in, const rlx_value *in,
                                            size_t n_attrs, const rlx_attr *attrs, size_t n_out, rlx_value *out);

/* Host kernel: reads the input tensors in[0..n_in) (borrowed, read-only, of the node's concrete
 * input types) and writes the output tensors out[0..n_out) (rlx-owned, of the inferred types,
 * zero-filled; write their bytes through rlx_tensor_data). */
typedef rlx_status *(*rlx_custom_host_fn)(void *user_data, size_t n_in, const rlx_tensor *const *in, size_t n_attrs,
                                          const rlx_attr *attrs, size_t n_out, rlx_tensor *const *out);

/* ---- CUDA source kernels ----
 * The kernel's body is CUDA C++ (the statements of a __global__ function, as for MLX's
 * mx::fast::cuda_kernel, https://ml-explore.github.io/mlx/build/html/dev/custom_metal_kernels.html
 * describes the same contract for Metal). rlx wraps it in a function whose parameters are, in
 * order: each input as `const T *<input name>` (T the CUDA type of its dtype: float, __half,
 * __nv_bfloat16, double, int8_t .. uint64_t, bool), followed by `const Shape <name>_shape`,
 * `const Strides <name>_strides` and `const int <name>_ndim` when the body mentions them; then each
 * output as `T *<output name>`. Template arguments become `constexpr int`, `constexpr bool` or
 * `using` type aliases at the top of the body. Output shapes and dtypes are the op's inferred
 * ones. Dynamic shared memory is declared in the body as `extern __shared__ T smem[];`. */
typedef enum rlx_custom_template_kind {
  RLX_CUSTOM_TEMPLATE_INT = 0,   /* constexpr int name = i; */
  RLX_CUSTOM_TEMPLATE_BOOL = 1,  /* constexpr bool name = i != 0; */
  RLX_CUSTOM_TEMPLATE_DTYPE = 2, /* using name = <CUDA type of dtype>; */
} rlx_custom_template_kind;

typedef struct rlx_custom_template_arg {
  const char *name; /* a C identifier; borrowed for the call that receives it */
  rlx_custom_template_kind kind;
  int64_t i;        /* INT (within int32) and BOOL */
  rlx_dtype dtype;  /* DTYPE */
} rlx_custom_template_arg;

#define RLX_CUSTOM_MAX_TEMPLATE_ARGS 16

/* How one call is launched. */
typedef struct rlx_custom_cuda_launch {
  int64_t grid[3];        /* threads per dimension x, y, z (each >= 1; MLX's convention): the
                             blocks are ceil(grid / threadgroup) per dimension */
  int64_t threadgroup[3]; /* threads per block per dimension (each >= 1, product <= 1024) */
  int32_t shared_memory;  /* bytes of dynamic shared memory per block (0 .. 227 KiB on Hopper) */
  bool has_init_value;    /* outputs are filled with init_value before the kernel runs; otherwise */
  float init_value;       /* they start uninitialized and the kernel must write every element */
  size_t n_template_args; /* <= RLX_CUSTOM_MAX_TEMPLATE_ARGS */
  rlx_custom_template_arg template_args[RLX_CUSTOM_MAX_TEMPLATE_ARGS];
} rlx_custom_cuda_launch;

/* Computes the launch of one call from the node's concrete input and output types and its
 * attributes (for grids that depend on shapes). *launch arrives zeroed. */
typedef rlx_status *(*rlx_custom_cuda_launch_fn)(void *user_data, size_t n_in, const rlx_type *in, size_t n_attrs,
                                                 const rlx_attr *attrs, size_t n_out, const rlx_type *out,
                                                 rlx_custom_cuda_launch *launch);

typedef struct rlx_custom_cuda_kernel {
  const char *source;              /* the body (required) */
  const char *header;              /* code placed before the function (may be NULL) */
  const char *const *input_names;  /* one C identifier per input: the op must have a fixed arity */
  const char *const *output_names; /* one C identifier per output */
  size_t n_outputs;                /* must equal the op's inferred output count */
  rlx_custom_cuda_launch launch;   /* the launch of every call, when launch_fn is NULL */
  rlx_custom_cuda_launch_fn launch_fn;
  bool strided_inputs;             /* false: inputs are made row-contiguous before the call */
} rlx_custom_cuda_kernel;

/* A custom op definition, copied by rlx_custom_op_register (cuda and everything it points to
 * included). */
typedef struct rlx_custom_op_def {
  const char *name;            /* non-empty, NUL-terminated; the Custom node's `name` attribute */
  int32_t min_inputs;          /* arity: 0 <= min_inputs <= max_inputs <= 256 */
  int32_t max_inputs;
  rlx_custom_infer_fn infer;   /* required */
  rlx_custom_expand_fn expand; /* at most one of expand and host; at least one of expand, */
  rlx_custom_host_fn host;     /* host and cuda */
  const rlx_custom_cuda_kernel *cuda; /* NULL, or the GPU kernel (min_inputs == max_inputs) */
  void *user_data;             /* passed to every function */
  void (*free_user_data)(void *user_data); /* NULL, or called once when the registration ends */
} rlx_custom_op_def;

/* ---- built-in ops (registered before the registry is first used; replaceable like any op) ----
 * RLX_CUSTOM_BATCHED_DENSE_SOLVE (A float32 [B,n,n], b float32 [B,n]) -> (x float32 [B,n], status
 * int32 [B]): A[i] x[i] = b[i], 1 <= n <= 128, by LU with partial pivoting (the reference's
 * batched LU kernel). On the GPU a CUDA kernel solves one system per thread block and reports a
 * singular A[i] (a zero pivot) as status[i] = 1 with x[i] all NaN (like the info array of
 * cuBLAS getrfBatched); elsewhere the BatchedDenseSolve op runs (mx::linalg::solve on the CPU
 * stream), which fails the run with INVALID_ARGUMENT "singular matrix" instead, so status is all
 * 0 there. */
#define RLX_CUSTOM_BATCHED_DENSE_SOLVE "rlx_linalg_batched_dense_solve"

/* Registers (or replaces) the op def->name. *out_replaced (when out_replaced is not NULL) is set
 * to whether an op of that name was registered before (the old registration ends as described
 * above). Works without a GPU (a CUDA kernel is compiled when first run on one). Errors:
 * INVALID_ARGUMENT (NULL def, empty name, no infer, both expand and host, no kernel at all, bad
 * arity; for a CUDA kernel: no source, a variable arity, a missing or non-identifier input or
 * output name, a launch outside the limits above: the message says which), RESOURCE_EXHAUSTED.
 * Nothing changes on failure.
 * Errors of a CUDA kernel at run time: source that NVRTC cannot compile fails the run (at the
 * evaluation of the op's outputs) with NVRTC's log, which names the kernel "rlx_<op name>" (other
 * characters than letters and digits become '_'); a launch_fn error or an inferred output count
 * other than n_outputs fails the run naming the op; a run on a CPU executable of an op with only
 * a CUDA kernel fails with UNAVAILABLE naming it. */
RLX_MUST_USE rlx_status *rlx_custom_op_register(const rlx_custom_op_def *def, bool *out_replaced);

/* Ends the registration of `name`. Errors: NOT_FOUND (naming it) when no op of that name is
 * registered, INVALID_ARGUMENT for a NULL name. */
RLX_MUST_USE rlx_status *rlx_custom_op_unregister(const char *name);

/* true when an op named `name` is registered (false for NULL). */
bool rlx_custom_op_is_registered(const char *name);

/* For kernels: the attribute called `name` in attrs[0..n_attrs) (borrowed from attrs), or NULL
 * when absent or when attrs or name is NULL. */
const rlx_attr *rlx_attr_find(size_t n_attrs, const rlx_attr *attrs, const char *name);

#ifdef __cplusplus
}
#endif
#endif
