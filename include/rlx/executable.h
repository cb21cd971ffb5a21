/* rlx/executable.h: running a graph on MLX.
 *
 * An executable binds a graph to a device (MLX's CPU backend by default, or a GPU through MLX's
 * CUDA backend) and an execution mode:
 * - RLX_MODE_LAZY: each run lowers the whole graph onto MLX lazy arrays and evaluates the
 *   outputs with one mlx::core::eval (MLX schedules the whole DAG).
 * - RLX_MODE_EAGER: each node is evaluated right after it is lowered, so a failure names the
 *   node and op that failed (debugging).
 * - RLX_MODE_COMPILED: the first run (or rlx_executable_warmup) builds an mlx::core::compile
 *   function whose trace lowers the graph; later runs with the same input shapes and dtypes
 *   replay the cached trace (new shapes, e.g. new symbol sizes, trace again unless the
 *   executable is shapeless, see rlx_executable_set_shapeless). A run in which some node output
 *   has no elements is evaluated as in lazy mode, without tracing or replaying (MLX's fused
 *   kernels are not launched with zero elements).
 *   The compiled function takes its leaves in this order: the graph inputs in declaration order
 *   (rlx_graph_input_name), then the constants in node order, then the params of the graph and of
 *   its sub-graphs in rlx_executable_param_name order. Params and constants are leaves, not
 *   values baked into the trace, so rlx_executable_set_param never forces a new trace, and
 *   If/While/Scan sub-graphs that read params work in compiled mode.
 * RLX_MODE_DEFAULT takes the mode from the environment variable RLX_MLX_MODE
 * (eager | lazy | compiled, case-insensitive) and is lazy when it is unset.
 *
 * The executable holds a reference on its graph: the caller may free the graph at any time after
 * creating the executable (it is released with the last executable using it), and the graph
 * cannot change while an executable uses it (builder calls fail with FAILED_PRECONDITION).
 *
 * Typed data: params, inputs, handles and outputs are rlx_tensor / raw bytes in the graph's
 * declared dtypes (float16, bfloat16 and integer data are never widened to float32) and outputs
 * come back with their concrete shapes. An input with symbolic dims takes its sizes from the data
 * given for it (tensor or handle; see rlx/types.h): every dim naming symbol k must get the same
 * size across all inputs of a run, else the run fails with INVALID_ARGUMENT naming the input, the
 * dim, the symbol and both sizes. Unchanged sizes are not re-bound.
 *
 * Where a run's inputs come from: for each graph input, in order of precedence, the tensor passed
 * to the run, the input's device handle, its host handle (see "Handles"); an input with none of
 * them fails the run with INVALID_ARGUMENT.
 *
 * Errors: every fallible function returns a status (rlx/status.h); a failing run writes no
 * outputs, applies no handle feed, and leaves the executable usable (an error raised while a
 * compiled function traces is returned like any other and the next run traces again). An index
 * out of range in a gather or scatter (rlx/op_table.h) fails the run with OUT_OF_RANGE naming the
 * node, the input, the index and the axis size, in every mode: indices are clamped before MLX sees
 * them and checked in the same evaluation as the outputs.
 *
 * Thread-safety: every function may be called from any thread, on distinct executables
 * concurrently. Each executable holds a mutex that serializes the calls made on it (runs,
 * commits, syncs, setters, handle reads, accessors of mutable state); distinct executables share
 * no lock (MLX >= 0.31.2 evaluates on a default stream per thread and keeps a compile cache per
 * thread, so concurrent MLX work needs none). A compiled executable called from several threads
 * traces once on each of them (each thread's compile cache holds its own trace, keyed by an id
 * that is never reused); freeing it erases those traces from every thread's cache. rlx takes a
 * process-wide lock in one place: when a compiled function that another thread traced is freed,
 * the erasure owed to that thread's cache is queued under it (a thread's cache may only be touched
 * by that thread, which performs the erasure on its next compiled call). Arrays shared between
 * threads (params, constants, device handles) are evaluated before they are kept; a committed
 * run may be synced, read or followed by runs from another thread. Only rlx_executable_free must
 * not race any other call on the same executable.
 */
#ifndef RLX_EXECUTABLE_H
#define RLX_EXECUTABLE_H

#include "rlx/graph.h"
#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_mode {
  RLX_MODE_DEFAULT = 0, /* RLX_MLX_MODE, else lazy */
  RLX_MODE_LAZY = 1,
  RLX_MODE_EAGER = 2,
  RLX_MODE_COMPILED = 3,
} rlx_mode;

typedef enum rlx_device {
  RLX_DEVICE_CPU = 0, /* MLX's CPU backend */
  RLX_DEVICE_GPU = 1, /* MLX's GPU backend (CUDA on Linux) */
} rlx_device;

/* "lazy", "eager", "compiled" ("default" for RLX_MODE_DEFAULT). */
const char *rlx_mode_name(rlx_mode mode);
/* Parses a mode name (case-insensitive). INVALID_ARGUMENT naming the text when unknown, or for a
 * NULL out. */
RLX_MUST_USE rlx_status *rlx_mode_from_name(const char *name, rlx_mode *out);
/* "cpu" or "gpu". */
const char *rlx_device_name(rlx_device device);
/* Parses "cpu" or "gpu". INVALID_ARGUMENT otherwise. */
RLX_MUST_USE rlx_status *rlx_device_from_name(const char *name, rlx_device *out);
/* true when MLX has a usable GPU in this process. */
bool rlx_gpu_available(void);
/* MLX's version string ("0.32.4"). */
const char *rlx_mlx_version(void);
/* The most memory MLX's allocator has held at once since the process started (bytes; device
 * memory on a GPU, host memory on the CPU backend; mlx::core::get_peak_memory; process-wide, all
 * executables together). 0 if MLX cannot say. Thread-safe. */
size_t rlx_mlx_peak_memory(void);
/* Writes the name MLX reports for `device` (e.g. "NVIDIA H200"; "cpu" for the CPU, or the device
 * kind when MLX reports no name) into buf, NUL-terminated and truncated to cap bytes. Never fails;
 * thread-safe. */
void rlx_device_describe(rlx_device device, char *buf, size_t cap);

typedef struct rlx_executable rlx_executable;

/* ---- lifetime and mode ---- */

/* Creates an executable for graph `g` (referenced, see above) on `device` in `mode`. Errors:
 * INVALID_ARGUMENT (NULL graph, a graph without outputs, a param declared with two types in the
 * graph and a sub-graph, RLX_MLX_MODE set to an unknown mode, RLX_MAX_ALLOCATION set to something
 * that is not a size), UNAVAILABLE (device GPU without a
 * GPU: "no GPU: ..."), RESOURCE_EXHAUSTED. No MLX work happens here; params are set next.
 * On the GPU, compiled mode has MLX compile fused kernels with NVRTC, which needs the CUDA runtime
 * headers: when neither CUDA_HOME nor CUDA_PATH is set, the first GPU executable of the process
 * sets CUDA_HOME (setenv) to /usr/local/cuda or to the pip package nvidia/cu13 beside MLX's,
 * whichever has include/cuda_runtime.h (the cccl/cute/cutlass headers come with mlx-cuda-13).
 * Programs that read the environment from other threads meanwhile should set CUDA_HOME themselves.
 * *out untouched on failure. Release with rlx_executable_free. */
RLX_MUST_USE rlx_status *rlx_executable_create(const rlx_graph *g, rlx_device device, rlx_mode mode, rlx_executable **out);

/* Waits for a committed run, then releases the executable, its params, handles, arena and
 * compiled function (its traces leave every thread's MLX compile cache). NULL accepted. That wait
 * is not bounded by a process group's timeout (rlx/dist.h; the group may be gone): sync a
 * committed run with collectives first. */
void rlx_executable_free(rlx_executable *ex);

/* The graph (alive and unchanged while the executable exists). */
const rlx_graph *rlx_executable_graph(const rlx_executable *ex);

/* The resolved mode (never RLX_MODE_DEFAULT). */
rlx_mode rlx_executable_mode(const rlx_executable *ex);

/* How many times the compiled function traced the graph on this executable (0 outside compiled
 * mode): once per input signature (shapes and dtypes, or ranks and dtypes when shapeless) and per
 * calling thread, again after a mode or shapeless change. A diagnostic for re-trace storms. */
size_t rlx_executable_num_traces(const rlx_executable *ex);

/* Changes the mode (RLX_MODE_DEFAULT resolves as in create); a compiled function is dropped.
 * INVALID_ARGUMENT for an unknown mode or RLX_MLX_MODE value. The mode is unchanged on failure. */
RLX_MUST_USE rlx_status *rlx_executable_set_mode(rlx_executable *ex, rlx_mode mode);

/* Shape-polymorphic compiled mode (mlx::core::compile's `shapeless`): one trace serves every
 * size of the symbolic dims (a new trace only for new ranks or dtypes). Only graphs whose
 * symbol-dependent nodes lower without baking sizes into the trace qualify: the elementwise
 * families (unary, binary/compare, Where, Cast, ElementwiseRegion), Transpose, Concat, Softmax,
 * LogSoftmax, LayerNorm, LayerNorm2d, RmsNorm, MatMul of operands of rank >= 2, and Reduce
 * (except an integer mean). Nodes whose input and output types are static are always fine.
 * Errors: UNIMPLEMENTED naming the first node that prevents it ("node 4 (Reshape): ... bakes
 * ..."); the setting is then unchanged. Toggling drops a compiled function. Ignored outside
 * compiled mode. */
RLX_MUST_USE rlx_status *rlx_executable_set_shapeless(rlx_executable *ex, bool shapeless);
bool rlx_executable_shapeless(const rlx_executable *ex);

/* ---- float32 precision on the GPU ---- */

/* How float32 matmuls and convolutions run on the GPU. MLX's CUDA backend computes them either
 * in full float32 (cuBLASLt CUBLAS_COMPUTE_32F; cuDNN engines without the TENSOR_CORE numerical
 * note) or in TF32 on tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32; inputs rounded to a 10-bit
 * mantissa, float32 accumulation: about 1e-3 relative error per product, ~1000x rlx's error
 * against ONNX Runtime on BERT-base). MLX decides this from the environment variable
 * MLX_ENABLE_TF32 (atoi; unset means 1), which it reads ONCE per process, at its first float32
 * matmul or convolution on a GPU (mlx/utils.h env::enable_tf32, a function-local static), and
 * its cached cuBLASLt/cuDNN plans keep the choice: the precision is per process, not per call.
 * rlx therefore fixes it at the first run of a GPU executable in the process (setting
 * MLX_ENABLE_TF32 to 0 or 1 before MLX reads it) and refuses a GPU run that asks for the other
 * precision later. The CPU backend has no TF32: there the setting is accepted and has no effect.
 * If the process ran float32 GPU matmuls through MLX before rlx's first GPU run, MLX keeps what
 * it read then (rlx cannot see it). */
typedef enum rlx_precision {
  RLX_PRECISION_DEFAULT = 0, /* MLX_ENABLE_TF32 when set in the environment (nonzero: tf32), else fp32 */
  RLX_PRECISION_FP32 = 1,    /* full float32 (the default) */
  RLX_PRECISION_TF32 = 2,    /* TF32 tensor cores for float32 matmuls and convolutions */
} rlx_precision;

/* "fp32", "tf32" ("default" for RLX_PRECISION_DEFAULT; "invalid" outside the enum). */
const char *rlx_precision_name(rlx_precision p);
/* Parses "fp32", "tf32" or "default" (case-insensitive). INVALID_ARGUMENT naming the text when
 * unknown; *out untouched then. */
RLX_MUST_USE rlx_status *rlx_precision_from_name(const char *name, rlx_precision *out);
/* Sets the executable's float32 precision (RLX_PRECISION_DEFAULT resolves as documented above;
 * executables start with RLX_PRECISION_DEFAULT resolved at creation). Errors: INVALID_ARGUMENT
 * (NULL ex, a value outside the enum), FAILED_PRECONDITION for a
 * GPU executable when this process's GPU precision is already fixed to the other value (message
 * names both); the setting is then unchanged. A GPU run fails the same way when another
 * executable fixed the other precision after this one was set. Thread-safe. */
RLX_MUST_USE rlx_status *rlx_executable_set_precision(rlx_executable *ex, rlx_precision precision);
/* The resolved precision (never RLX_PRECISION_DEFAULT). */
rlx_precision rlx_executable_precision(const rlx_executable *ex);

/* ---- allocation limit ----
 *
 * No single buffer a run asks MLX for may take more than the executable's allocation limit:
 * every node output (checked at the run's concrete types before anything is lowered), every
 * temporary array the lowering builds (a pooling window view, im2col patches, a Resize gather,
 * a broadcast, counted at its logical size even when it is a view), and the buffers MLX allocates
 * inside the ops rlx calls where they outgrow their operands (the unfolded input of MLX's CPU
 * convolution, the scores of MLX's CPU attention). A run that would exceed it fails with
 * RESOURCE_EXHAUSTED naming the node and op ("node 3 (Pool 'p'): ..."), the array's type or the
 * buffer, its bytes and the limit, before MLX allocates anything, in every mode (the same holds
 * for the values the ONNX importer and the constant-folding pass compute, which run through
 * executables). MLX cannot survive an allocation that fails: its CPU allocator hands back NULL and
 * MLX writes through it. The limit bounds each buffer, not their sum: buffers that each fit can
 * together still exhaust the machine's memory.
 * Default: the environment variable RLX_MAX_ALLOCATION when set (bytes, or a number followed by
 * K, M, G or T for binary multiples: "1G"; read at creation; rlx_executable_create fails with
 * INVALID_ARGUMENT naming it when it is not a size), else the device's memory: the physical RAM
 * for the CPU, MLX's memory limit for a GPU (0.8 x the device's memory on CUDA). */

/* Sets the limit in bytes; 0 restores the default. A compiled function is dropped (its traces
 * were checked against the old limit). Errors: INVALID_ARGUMENT (NULL ex, or bytes 0 with a bad
 * RLX_MAX_ALLOCATION). Thread-safe. */
RLX_MUST_USE rlx_status *rlx_executable_set_max_allocation(rlx_executable *ex, size_t bytes);
/* The limit in bytes. */
size_t rlx_executable_max_allocation(const rlx_executable *ex);

/* ---- params ---- */

/* Uploads the value of param `name` (of the graph or a sub-graph) to the device (copied; the
 * tensor may be freed after the call) and evaluates it there. The tensor must have the param's
 * declared dtype and shape. Errors: NOT_FOUND (no param of that name; the message lists the
 * params), INVALID_ARGUMENT (dtype or shape mismatch: both given), INTERNAL (MLX failure). On
 * failure the previous value (if any) is kept. */
RLX_MUST_USE rlx_status *rlx_executable_set_param(rlx_executable *ex, const char *name, const rlx_tensor *value);

/* Params the executable takes: those of the graph and of its sub-graphs (If/While/Scan bodies),
 * one per name, the graph's own first. Names are borrowed from the graph; NULL when i is out of
 * range. */
size_t rlx_executable_num_params(const rlx_executable *ex);
const char *rlx_executable_param_name(const rlx_executable *ex, size_t i);

/* ---- running ---- */

/* Runs the graph. Inputs are given by name (names[i] -> values[i], borrowed for the call and only
 * read; declared `rlx_tensor *const *` so that an ordinary `rlx_tensor *values[n]` and
 * `const char *names[n]` pass without casts); every
 * graph input must come from the call or a handle, and a name may be given once. On success
 * outputs[0..n_outputs) receive new owning tensors in graph output order (free each with
 * rlx_tensor_free; rlx_graph_output_index finds an output's index by name); an output whose
 * readback is off (by default an output that feeds a handle, see
 * rlx_executable_set_output_readback) gets NULL. n_outputs must equal the graph's output count.
 * After the outputs are computed, handle feeds are applied. Errors: NOT_FOUND (unknown input name; the message lists the inputs),
 * INVALID_ARGUMENT (NULL arguments, an input given twice or not at all, dtype/rank/dim mismatch
 * with expected vs got, symbols bound to different sizes, wrong n_outputs), FAILED_PRECONDITION (a
 * param was not set), RESOURCE_EXHAUSTED (a buffer over the allocation limit, see above), and any
 * error raised while lowering or evaluating, annotated with the node and op ("node 12 (Conv
 * 'conv1'): ..."). On failure no output is written. */
RLX_MUST_USE rlx_status *rlx_executable_run(rlx_executable *ex, size_t n_inputs, const char *const *names,
                               rlx_tensor *const *values, size_t n_outputs, rlx_tensor **outputs);

/* Compiled mode: builds the compiled function and traces it now, for the given inputs' shapes,
 * on the calling thread (a run whose outputs are discarded; feeds are not applied). Other modes:
 * runs once (warms MLX's caches). Errors as rlx_executable_run. */
RLX_MUST_USE rlx_status *rlx_executable_warmup(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  rlx_tensor *const *values);

/* Whether output i is copied back to the host by runs, syncs and slot runs. Default: an output
 * that feeds a device handle (rlx_executable_set_handle_feed; a KV cache) is NOT read back, its
 * entry of the outputs array comes back NULL and its slot is left as it was; every other output
 * is read back. Calling this fixes the choice for output i whatever its feeds (true: a fed output
 * is read back too). An output not read back is still evaluated (on the device; see
 * rlx_executable_set_output_wanted). OUT_OF_RANGE for a bad i. */
RLX_MUST_USE rlx_status *rlx_executable_set_output_readback(rlx_executable *ex, size_t i, bool readback);

/* Whether runs compute output i at all (default true), as ONNX Runtime's Run computes only the
 * outputs it is asked for: unwanted, it is neither evaluated (in lazy and compiled mode: MLX
 * evaluates what the wanted outputs need; eager mode evaluates node by node) nor read back, and
 * its entry of the outputs array comes back NULL; an output that feeds a device handle is
 * evaluated whatever this says. Index checks run as before. OUT_OF_RANGE for a bad i. Takes ex's
 * lock; holds from the next run or commit. */
RLX_MUST_USE rlx_status *rlx_executable_set_output_wanted(rlx_executable *ex, size_t i, bool wanted);

/* Whether runs check the indices of Gather, GatherElements, GatherND, ScatterElements, ScatterND and
 * ScatterAdd (default true: an index outside its axis fails the run with OUT_OF_RANGE naming the
 * node; in lazy and compiled mode the extremes of every index array are gathered into one vector
 * that is read back after the run, a few small kernels and a copy to the host per run). Off, the
 * caller vouches that every index the graph computes lies in range, as rlx_llm does (its host
 * checks each token and position before a step; the tokens fed back on the device come from
 * Sample): an index out of range is then still taken modulo its axis, so nothing is read or
 * written out of bounds, but the run does not fail. Solves' singular checks and Assert are not
 * index checks and run either way. INVALID_ARGUMENT for a NULL ex; takes ex's lock; holds from the
 * next run or commit (a compiled function is traced again). */
RLX_MUST_USE rlx_status *rlx_executable_set_index_checks(rlx_executable *ex, bool on);

/* ---- asynchronous runs ---- */

/* Starts a run without waiting for it (mlx::core::async_eval): inputs are bound and checked, the
 * graph is lowered (or the compiled function called) and its evaluation scheduled; handle feeds
 * take the scheduled outputs. The results stay pending until rlx_executable_sync. A second commit
 * replaces the pending results (the first run still completes); runs and handle reads may follow a
 * commit at once (they wait on what they use). Errors as rlx_executable_run, for the work done
 * before scheduling; on failure nothing is pending from this call and earlier pending results
 * are kept.
 * Error contract: each error of a committed run is reported exactly once. The commit reports what
 * fails before scheduling (inputs, binding, lowering; in eager mode, which evaluates node by node,
 * also an index out of range). What is found while evaluating (an index out of range in lazy and
 * compiled mode) is reported by the next rlx_executable_sync, prefixed "committed run: "; when
 * several commits precede the sync, it reports the first failing one (after 64 commits without a
 * sync, the next commit reads the earlier runs' checks and reports such an error itself). Handles
 * fed by a commit already hold its outputs when such an error surfaces (their values are then
 * unspecified; memory is never touched out of bounds): bind them again to recover. */
RLX_MUST_USE rlx_status *rlx_executable_commit(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  rlx_tensor *const *values);

/* Waits for the pending committed run (the oldest one, when rlx_executable_set_max_pending lets
 * several be pending): its outputs read back and its checks. With outputs non-NULL it also reads the
 * committed results into outputs[0..n_outputs) as rlx_executable_run does (n_outputs must equal the
 * output count; the outputs read back are those whose readback was on at the commit: the commit
 * keeps no reference to the others, so that a later run may update a fed handle in place).
 * With nothing pending, a sync with outputs NULL is a no-op returning NULL, and one asking for
 * outputs fails with FAILED_PRECONDITION. Errors raised while evaluating come back here (see the
 * error contract at rlx_executable_commit): OUT_OF_RANGE "committed run: node ..." for an index
 * out of range. A sync that fails its argument check (INVALID_ARGUMENT: outputs given with the
 * wrong n_outputs) does nothing: the run stays pending. Otherwise the pending results are
 * released after the sync, whether it succeeded or not. */
RLX_MUST_USE rlx_status *rlx_executable_sync(rlx_executable *ex, size_t n_outputs, rlx_tensor **outputs);

/* true while a committed run has not been synced. */
bool rlx_executable_pending(const rlx_executable *ex);

#define RLX_MAX_PENDING 4

/* Lets up to `depth` committed runs be pending at once (default 1, at most RLX_MAX_PENDING):
 * rlx_executable_sync then reads the oldest of them, and a commit while `depth` runs are pending
 * replaces the oldest one's results (that run still completes; with depth 1 this is the "second
 * commit" rule of rlx_executable_commit). With depth 2 a caller commits run i + 1 before it syncs
 * run i, so the host prepares each run while the device computes the one before, and run i + 1
 * may take run i's outputs as inputs through handle feeds without a host round trip (rlx_llm_generate
 * steps a decoder this way). Errors found while evaluating are reported as the error contract of
 * rlx_executable_commit says, by the sync of the run that made them or of a later one. Errors:
 * INVALID_ARGUMENT (NULL ex, depth outside 1..RLX_MAX_PENDING), FAILED_PRECONDITION (more than
 * `depth` runs pending now: sync them first). Thread-safe as every call (the note above). */
RLX_MUST_USE rlx_status *rlx_executable_set_max_pending(rlx_executable *ex, size_t depth);

/* ---- handles: inputs kept across runs ----
 * A host handle is a copy of a tensor, used as the input's default whenever a run does not pass
 * the input (uploaded on each such run). A device handle is an MLX array kept on the device and
 * used as the input without any host transfer; a feed makes an output's array the new device
 * handle of an input after every run (the KV-cache pattern: out_k -> in_k), with no host round
 * trip. Handles follow the input's declared dtype and shape (symbolic dims take any size and bind
 * their symbols like passed inputs). */

/* Sets the host handle of input `name` (copied). Errors: NOT_FOUND (no such input), INVALID_ARGUMENT
 * (type mismatch), RESOURCE_EXHAUSTED. The previous host handle is kept on failure. */
RLX_MUST_USE rlx_status *rlx_executable_bind_host_handle(rlx_executable *ex, const char *name, const rlx_tensor *value);

/* Sets the device handle of input `name`: the tensor is uploaded and evaluated once. Errors as
 * rlx_executable_bind_host_handle, plus INTERNAL for an MLX failure. */
RLX_MUST_USE rlx_status *rlx_executable_bind_device_handle(rlx_executable *ex, const char *name, const rlx_tensor *value);

#define RLX_NO_FEED ((size_t)-1)

/* After every successful run, commit and slot run, output `output_index` becomes the device
 * handle of input `name` (RLX_NO_FEED removes the feed). A fed output is not read back to the
 * host unless asked for (rlx_executable_set_output_readback). The output's declared dtype and rank
 * must be the input's, and its static dims must fit the input's declared dims. Several feeds may
 * be set; each input has at most one. Errors: NOT_FOUND (no such input), OUT_OF_RANGE (output
 * index), INVALID_ARGUMENT (type mismatch, both types given). A run whose fed output comes out with
 * a shape the input cannot take fails with INVALID_ARGUMENT before any feed is applied. */
RLX_MUST_USE rlx_status *rlx_executable_set_handle_feed(rlx_executable *ex, const char *name, size_t output_index);

/* Donation: while a run of a lazy or compiled executable evaluates, the executable holds no
 * reference to the device handle of input `name` when that input has a feed, so that MLX may give
 * the handle's buffer to an op that writes a modified copy of it (a ScatterElements or ScatterND
 * into a KV cache) and update it in place instead of copying it first (eager mode, which
 * evaluates while lowering, never donates). MLX gives it only once no earlier run still holds the
 * buffer; when the input's only reader is a ScatterElements without reduction and the output that
 * feeds it is not read back (nor is it another output, nor feeds another input), rlx writes the
 * buffer in place itself on the CPU, also while earlier committed runs are in flight (runs on one
 * device run in commit order); a run whose pending predecessor will read back a view of that buffer is given
 * a copy. Changing the donation of such an input makes a compiled executable trace again. The output's feed replaces the handle as usual; a
 * run that fails once it evaluates (an index out of range found in lazy or compiled mode, an
 * error raised by MLX) leaves the input without a device handle: bind it again to recover.
 * Default off. NOT_FOUND for an unknown input. */
RLX_MUST_USE rlx_status *rlx_executable_set_handle_donation(rlx_executable *ex, const char *name, bool donate);

/* Drops the host handle, the device handle and the feed of input `name`. NOT_FOUND for an
 * unknown input. */
RLX_MUST_USE rlx_status *rlx_executable_clear_handle(rlx_executable *ex, const char *name);

/* Reads a handle back to a new host tensor: the device handle if the input has one (evaluated
 * first, waiting for a committed run that produces it), else a copy of its host handle. Errors:
 * NOT_FOUND (no such input), FAILED_PRECONDITION (the input has no handle), INTERNAL. *out
 * untouched on failure. */
RLX_MUST_USE rlx_status *rlx_executable_read_handle(rlx_executable *ex, const char *name, rlx_tensor **out);

/* ---- slot arena: runs without per-run allocation by rlx ----
 * For graphs whose outputs have static shapes, the executable owns one arena (64-byte aligned)
 * holding one slot per output at a fixed offset (64-byte aligned, in output order; each slot is
 * the output's declared size). rlx_executable_run_slots writes the outputs there. The arena is
 * allocated (zero-filled) by the first rlx_executable_arena or rlx_executable_run_slots call and
 * keeps its address for the executable's life. */

/* The arena: its base (void *, so `unsigned char *p = arena.base` needs no cast) and size. */
typedef struct rlx_arena {
  void *base;
  size_t nbytes;
} rlx_arena;

/* Writes the arena's base and size in bytes to *out (allocating it on first call). Errors:
 * INVALID_ARGUMENT (NULL argument), FAILED_PRECONDITION (no arena: the message names an output
 * with symbolic dims), RESOURCE_EXHAUSTED. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_executable_arena(rlx_executable *ex, rlx_arena *out);

/* Output i's slot: byte offset from the arena base and byte size (no allocation). Errors:
 * OUT_OF_RANGE (bad i), FAILED_PRECONDITION (no arena, as above). */
RLX_MUST_USE rlx_status *rlx_executable_output_slot(const rlx_executable *ex, size_t i, size_t *out_offset, size_t *out_nbytes);

/* Runs with positional inputs: inputs[i] (n_inputs = the graph's input count) points to the
 * little-endian bytes of graph input i in its declared static type, or is NULL to use the input's
 * device or host handle. Outputs with readback on are copied into their slots (with an active
 * extent, an output cut to `actual` rows fills the first bytes of its slot; the rest keeps its
 * old contents). Handle feeds apply. Errors: as rlx_executable_run, plus FAILED_PRECONDITION (no
 * arena), RESOURCE_EXHAUSTED and INVALID_ARGUMENT (wrong n_inputs, a non-NULL pointer for an input
 * with symbolic dims, a NULL one for an input without handle). A failure before the outputs are
 * computed leaves the arena untouched; one while copying them may have written some slots. */
RLX_MUST_USE rlx_status *rlx_executable_run_slots(rlx_executable *ex, size_t n_inputs, const void *const *inputs);

/* ---- active extent: computing only the used rows of a bucketed batch ----
 * A graph built for `upper` rows on axis 0 (a bucket) may run with only its first `actual` rows:
 * every input whose declared dim 0 is `upper` is cut to its first `actual` rows before
 * lowering (callers still pass `upper`-row data), types are inferred again, and outputs computed
 * from those rows come back with `actual` rows. This holds only when every op keeps the rows of
 * axis 0 independent (elementwise ops, row-wise norms and softmax, matmuls whose rows are batch or
 * free dims, attention, reductions and slices off axis 0, gathers of row indices, ...); otherwise
 * runs use the full extent and rlx_executable_active_extent_fallback says which op prevented it.
 * Applies to every mode (compiled mode traces once per distinct `actual`, unless shapeless). */

/* Sets the extent for the next runs: 0 < actual <= upper; actual = upper = 0 clears it. Errors:
 * INVALID_ARGUMENT for other values. */
RLX_MUST_USE rlx_status *rlx_executable_set_active_extent(rlx_executable *ex, int64_t actual, int64_t upper);

/* NULL when no extent is set or the extent applies; otherwise why runs fall back to the full
 * extent ("active extent: node 7 (Reshape 'r'): ...", or that no input has a static dim 0 of
 * `upper`, naming an input whose dim 0 is symbolic: such an input's run-time size already is
 * the row count, the extent has nothing to cut). Borrowed until the next set_active_extent
 * or run on this executable (do not race it with them). */
const char *rlx_executable_active_extent_fallback(const rlx_executable *ex);

#ifdef __cplusplus
}
#endif
#endif
