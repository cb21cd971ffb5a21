/* rlx/optimize.h: the IR optimization pipeline.
 *
 * rlx_graph_optimize rewrites a graph into an equivalent one that runs faster on MLX: fewer
 * nodes, folded constants, fused ops with MLX fast paths. The passes (src/opt/, one file each):
 *
 *   dce          dead-code elimination: nodes no output depends on are dropped (inputs stay, so
 *                positional inputs keep their meaning).
 *   cse          common-subexpression elimination: one node per (op, operands, attributes) and
 *                one constant per (type, bytes).
 *   constfold    constant folding: a node whose operands are all constants (or params whose values
 *                are given) is computed once on MLX's CPU and becomes a constant, unless its result
 *                is larger than its operands and 4 KiB (broadcasts stay lazy).
 *   fold_affine  Conv(x, W, b) or MatMul(x, W[K,N]) with constant weights followed by Mul/Div by
 *                a constant that is per output channel (or a scalar), and Conv followed by Add/Sub
 *                of such a constant, folded into the weights and bias: W' = W c, b' = b c + d
 *                (BatchNormalization, which the ONNX importer writes as x a + b, and scalar scales);
 *                and a scalar a x + b before a Conv without padding: W' = a W, b' = b + b_in sum(W[o]).
 *   epilogue     MatMul(x, W[K,N]) + bias [N] + activation (Relu, Gelu, GeluApprox, Silu, Sigmoid,
 *                Tanh) into one FusedMatMulBiasAct.
 *   norm         layer norm written out ((x - mean) / sqrt(var + eps) * gamma + beta, with
 *                ReduceMean, Sub, Pow 2 or Mul, Sqrt, Div) into LayerNorm (MLX fast::layer_norm),
 *                x / sqrt(mean(x^2) + eps) * gamma into RmsNorm (fast::rms_norm); also the
 *                moments form jax's LayerNorm exports ((x - m) * rsqrt(max(E[x^2] - m^2, 0) +
 *                eps) * gamma, the means as sums times 1/N), over any one axis.
 *   activation   x/2 (1 + erf(x / sqrt 2)) into Gelu, x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *                into GeluApprox, x sigmoid(x) into Silu, min(max(x + 3, 0), 6) / 6 (or
 *                clip(x/6 + 1/2, 0, 1)) into HardSigmoid and x HardSigmoid(x) into HardSwish.
 *   attention    Softmax(Q K^T scale [+ mask]) V on [B,H,S,D] operands into Attention (MLX
 *                fast::scaled_dot_product_attention).
 *   transpose    Transpose(Transpose(x)) composed into one Transpose, dropped when the identity.
 *   identity     Reshape(Reshape(x)) composed into one Reshape; Reshape or Expand to the input's
 *                shape, Narrow over a whole axis and a unit-step Slice that keeps the shape
 *                dropped (each would be a node of every lazy run's MLX graph).
 *   scalarize    a size-1 constant operand of an elementwise op whose output shape it does not
 *                change becomes a rank-0 scalar (MLX compile fuses scalars into its kernels).
 *   channel_scale  Conv(x * s, W, b), s one value per channel of x ([1, C, 1, ..], e.g. a
 *                squeeze-and-excitation gate), group 1, x * s read only by the Conv, into
 *                Conv(x, W * s, b) where W has fewer elements than x (sum_c W[o,c] s[c] x[c]).
 *   sink_reshape an activation, or Add/Sub/Mul/Div by a constant, of a Reshape's result moved
 *                before the Reshape when it only drops or inserts size-1 axes and has no other
 *                reader (the constant's axes laid out as the Reshape's input's), so that a 1D
 *                convolution written as a 2D one over [N, C, L, 1] and squeezed gets its bias and
 *                activation from fold_affine and epilogue.
 *   onehot       MatMul(Cast(Equal(idx [.., N, 1], 0 .. V-1)), W [V, D]) (a one-hot encoding times
 *                a float32 matrix: jax.nn.one_hot(idx) @ W) into Gather(Concat(W, zeros [1, D]),
 *                Where(0 <= i < V, i, V)): W's row per index, zeros for an index outside [0, V),
 *                as the one-hot product gives.
 *
 * Levels: "none" (the graph is copied unchanged), "basic" (constfold, dce, cse, fold_affine,
 * epilogue, dce), "all" (constfold, dce, cse, sink_reshape, fold_affine, activation, norm, attention,
 * transpose, identity, onehot, epilogue, channel_scale, scalarize, cse, dce). The passes run in that order, repeated until nothing changes
 * (at most 4 rounds). The floating-point results of a rewritten graph can differ from the original's in the
 * last bits (folded products, fused
 * kernels), as with any optimizing compiler (ONNX Runtime's graph optimizations do the same).
 *
 * Thread-safety: distinct calls may run concurrently; g is only read.
 */
#ifndef RLX_OPTIMIZE_H
#define RLX_OPTIMIZE_H

#include "rlx/graph.h"
#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks an optimization spec: "none", "basic", "all", or a comma-separated list of the pass
 * names above (run in the listed order, repeated as a level is). Errors: INVALID_ARGUMENT naming
 * an unknown level or pass (NULL included). */
RLX_MUST_USE rlx_status *rlx_optimize_check(const char *spec);

/* Writes to *out a new graph (free with rlx_graph_free) equivalent to g (same inputs in the same
 * order, same output names and types) rewritten by the passes of `spec` (rlx_optimize_check).
 * params: n_params names and values (borrowed for the call; may be 0/NULL) of g's params; folding
 * needs the values of params it reads (a param without one is left alone). Params that the new
 * graph still reads keep their names (a folded weight becomes a constant, so some params are no
 * longer read). g must have its outputs set. Errors: INVALID_ARGUMENT (NULL g or out, a bad spec,
 * a graph without outputs), RESOURCE_EXHAUSTED, INTERNAL (an MLX failure while folding). *out is
 * untouched on failure. */
RLX_MUST_USE rlx_status *rlx_graph_optimize(const rlx_graph *g, const char *spec, size_t n_params, const char *const *param_names,
                               const rlx_tensor *const *param_values, rlx_graph **out);

/* true when graph g, or one of its sub-graphs, reads the param named `name`. */
bool rlx_graph_reads_param(const rlx_graph *g, const char *name);

#ifdef __cplusplus
}
#endif
#endif
