/* rlx/executable.h: running a graph on MLX.
 *
 * An executable binds a graph to a device (MLX's CPU backend by default, or a GPU through MLX's
 * CUDA backend) and an execution mode:
 * - RLX_MODE_LAZY: each run lowers the whole graph onto MLX lazy arrays and evaluates the
 *   outputs with one mlx::core::eval (MLX schedules the whole DAG).
 * - RLX_MODE_EAGER: each node is evaluated right after it is lowered, so a failure names the
 *   node and op that failed (debugging).
 * - RLX_MODE_COMPILED: the first run (or rlx_executable_warmup) builds an mlx::core::compile
 *   function whose trace lowers the graph; later runs replay the cached trace.
 * RLX_MODE_DEFAULT takes the mode from the environment variable RLX_MLX_MODE
 * (eager | lazy | compiled, case-insensitive) and is lazy when it is unset.
 *
 * The graph is borrowed: it must outlive the executable and must not change while it exists.
 *
 * Typed data: params and inputs are passed as rlx_tensor in the graph's declared dtype (no float32
 * round trip for float16/bfloat16/integer data) and outputs come back in the graph's dtypes with
 * their shapes. Inputs with symbolic dims take their sizes from the tensors passed (see
 * rlx/types.h); every use of a symbol must get the same size.
 *
 * Thread-safety: every function may be called from any thread. Calls on one executable are
 * serialized by a mutex inside it; distinct executables run concurrently (MLX >= 0.31.2 is
 * thread-safe; each thread uses its own MLX default stream).
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
/* Parses a mode name (case-insensitive). INVALID_ARGUMENT naming the text when unknown. */
rlx_status *rlx_mode_from_name(const char *name, rlx_mode *out);
/* "cpu" or "gpu". */
const char *rlx_device_name(rlx_device device);
/* Parses "cpu" or "gpu". INVALID_ARGUMENT otherwise. */
rlx_status *rlx_device_from_name(const char *name, rlx_device *out);
/* true when MLX has a usable GPU in this process. */
bool rlx_gpu_available(void);
/* MLX's version string ("0.32.4"). */
const char *rlx_mlx_version(void);

typedef struct rlx_executable rlx_executable;

/* Creates an executable for graph `g` (borrowed) on `device` in `mode`. Errors:
 * INVALID_ARGUMENT (NULL graph, a graph without outputs, RLX_MLX_MODE set to an unknown mode),
 * UNAVAILABLE (device GPU without a GPU: "no GPU: ..."). No MLX work happens here; params are
 * set next. *out untouched on failure. Release with rlx_executable_free. */
rlx_status *rlx_executable_create(const rlx_graph *g, rlx_device device, rlx_mode mode, rlx_executable **out);

/* Releases the executable, its params and its compiled function. NULL accepted. */
void rlx_executable_free(rlx_executable *ex);

/* The resolved mode (never RLX_MODE_DEFAULT). */
rlx_mode rlx_executable_mode(const rlx_executable *ex);

/* Changes the mode (RLX_MODE_DEFAULT resolves as in create); a compiled function is dropped. */
rlx_status *rlx_executable_set_mode(rlx_executable *ex, rlx_mode mode);

/* Uploads the value of param `name` (of the graph or a sub-graph) to the device (copied; the tensor may be freed after the
 * call). The tensor must have the param's declared dtype and shape. Errors: NOT_FOUND (no param
 * of that name; the message lists the params), INVALID_ARGUMENT (dtype or shape mismatch: both
 * given), INTERNAL (MLX failure). On failure the previous value (if any) is kept. */
rlx_status *rlx_executable_set_param(rlx_executable *ex, const char *name, const rlx_tensor *value);

/* Params the executable takes: those of the graph and of its sub-graphs (If/While/Scan bodies),
 * one per name. Names are borrowed from the graph. */
size_t rlx_executable_num_params(const rlx_executable *ex);
const char *rlx_executable_param_name(const rlx_executable *ex, size_t i);

/* Runs the graph. Inputs are given by name (names[i] -> values[i], borrowed for the call); every
 * graph input must be given exactly once. On success outputs[0..n_outputs) receive new owning
 * tensors in graph output order (free each with rlx_tensor_free); n_outputs must equal the
 * graph's output count. Errors: NOT_FOUND (unknown input name; the message lists the inputs),
 * INVALID_ARGUMENT (missing or repeated input, dtype/rank/dim mismatch with expected vs got,
 * symbols bound to different sizes, wrong n_outputs), FAILED_PRECONDITION (a param was not set),
 * and any error raised while lowering or evaluating, annotated with the node and op
 * ("node 12 (Conv 'conv1'): ..."). On failure no output is written. */
rlx_status *rlx_executable_run(rlx_executable *ex, size_t n_inputs, const char *const *names,
                               const rlx_tensor *const *values, size_t n_outputs, rlx_tensor **outputs);

/* Compiled mode: builds the compiled function now for the given inputs (a run whose outputs are
 * discarded). Other modes: runs once (warms MLX's caches). Errors as rlx_executable_run. */
rlx_status *rlx_executable_warmup(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  const rlx_tensor *const *values);

#ifdef __cplusplus
}
#endif
#endif
