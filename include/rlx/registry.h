/* rlx/registry.h: custom ops, a process-wide registry of named kernels for the Custom op.
 *
 * A custom op is registered once under a name. Graphs use it through the Custom op
 * (RLX_OP_CUSTOM, see rlx/op_table.h) with the string attribute name = "<registered name>"; every
 * other attribute of that node is the op's own and is passed to its functions. A registration
 * supplies both sides rlx needs:
 * - the IR side: the arity (min/max inputs) and a shape-inference function, so rlx_graph_add can
 *   build and check the node, and symbolic dims can be bound before a run;
 * - the backend side: exactly one kernel.
 *   (a) A graph kernel (expand) builds the op's computation from rlx ops. When the node is
 *       lowered, rlx creates a fresh sub-graph whose inputs in0, in1, ... have the node's concrete
 *       input types, the kernel adds nodes to it with the graph builder (rlx/graph.h: constants,
 *       rlx_graph_add, even other custom ops) and names the output values; rlx lowers that
 *       sub-graph onto MLX in place of the node (as If/While bodies are). The computation stays in
 *       MLX's lazy graph: it runs on any device, fuses with its neighbours and works in every
 *       execution mode, compiled included. The sub-graph is built again each time the node is
 *       lowered (each run in lazy and eager mode, once per trace in compiled mode).
 *   (b) A host kernel receives the node's inputs as host tensors and writes its outputs into host
 *       tensors that rlx allocated with the inferred types (zero-filled). This forces evaluation
 *       where the node sits: MLX computes everything the inputs depend on, the bytes are copied to
 *       the host, the kernel runs on the calling thread, and its outputs are copied into new MLX
 *       arrays. It is a synchronization point that breaks MLX's lazy scheduling and fusion and
 *       costs a copy each way. Inside a compiled function (RLX_MODE_COMPILED) the inputs are
 *       trace values without data (the executable passes inputs, params and constants into the
 *       mlx::compile function), so creating an executable of such a graph in compiled mode
 *       (rlx_executable_create, rlx_executable_set_mode) fails with UNIMPLEMENTED naming the node
 *       and the op: use lazy or eager mode for graphs with host kernels.
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

/* A custom op definition, copied by rlx_custom_op_register. */
typedef struct rlx_custom_op_def {
  const char *name;            /* non-empty, NUL-terminated; the Custom node's `name` attribute */
  int32_t min_inputs;          /* arity: 0 <= min_inputs <= max_inputs <= 256 */
  int32_t max_inputs;
  rlx_custom_infer_fn infer;   /* required */
  rlx_custom_expand_fn expand; /* exactly one of expand and host */
  rlx_custom_host_fn host;
  void *user_data;             /* passed to every function */
  void (*free_user_data)(void *user_data); /* NULL, or called once when the registration ends */
} rlx_custom_op_def;

/* Registers (or replaces) the op def->name. *out_replaced (when out_replaced is not NULL) is set
 * to whether an op of that name was registered before (the old registration ends as described
 * above). Errors: INVALID_ARGUMENT (NULL def, empty name, no infer, not exactly one kernel, bad
 * arity: the message says which), RESOURCE_EXHAUSTED. Nothing changes on failure. */
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
