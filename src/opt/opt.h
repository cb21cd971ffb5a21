/* opt.h: the optimization pipeline's internals (src/opt): the pass interface, the rule driver
 * that most passes use, and pattern-matching helpers. Each pass lives in its own file; the
 * pipeline (pipeline.c) runs them by level (rlx/optimize.h). Not installed. */
#ifndef RLX_OPT_OPT_H
#define RLX_OPT_OPT_H

#include "opt/rewrite.h"
#include "rlx/optimize.h"

/* What passes may read besides the graph: the values of params (borrowed), for folding. */
typedef struct rlx_opt_ctx {
  size_t n_params;
  const char *const *pnames;
  const rlx_tensor *const *pvals;
} rlx_opt_ctx;

/* A pass reads g and writes the rewritten graph to *out (a new graph), *changed telling whether
 * it rewrote anything. Errors: the graph builder's, RESOURCE_EXHAUSTED, MLX failures (folding). */
typedef rlx_status *(*rlx_pass_fn)(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed);

#define RLX_OPT_PASSES(X)                                                                     \
  X(dce, "dead-code elimination: drops nodes no output depends on (inputs stay)")            \
  X(cse, "common-subexpression elimination: one node per (op, inputs, attributes), one constant per (type, bytes)") \
  X(constfold, "constant folding: nodes whose inputs are all constants become constants")     \
  X(fold_affine, "Conv/MatMul followed by a per-channel Mul/Div/Add/Sub by constants (BatchNorm, scalar scale) folded into weights and bias") \
  X(epilogue, "MatMul + bias Add + activation into FusedMatMulBiasAct")                      \
  X(activation, "GELU (exact, tanh), SiLU, HardSigmoid and HardSwish written out into their ops") \
  X(norm, "LayerNorm and RmsNorm written out (mean, subtract, square, sqrt, divide; or jax's E[x^2] - E[x]^2 moments) into LayerNorm / RmsNorm") \
  X(attention, "MatMul(Q, K^T), scale, mask, Softmax, MatMul(V) into Attention (MLX's fused SDPA)") \
  X(transpose, "Transpose of a Transpose composed (dropped when the identity)")              \
  X(identity, "Reshape/Expand/Narrow/Slice that return their input dropped, Reshape of a Reshape composed") \
  X(scalarize, "size-1 constants read by a binary elementwise op that they do not broadcast made rank-0 scalars") \
  X(channel_scale, "a per-channel scale of a group-1 Conv's input (squeeze-and-excitation) moved into its weights where they are smaller") \
  X(onehot, "a one-hot encoding's product with a matrix (Cast(Equal(idx, 0..V-1)) @ W) into a gather of W's rows") \
  X(sink_reshape, "an activation, or Add/Sub/Mul/Div by a constant, after a Reshape that only drops or inserts size-1 axes moved before it")

#define RLX_X(name, doc) RLX_MUST_USE rlx_status *rlx_pass_##name(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed);
RLX_OPT_PASSES(RLX_X)
#undef RLX_X

/* ---- the rule driver ----
 * Copies g node by node into a new graph; before copying node n it offers n to `rule`, which may
 * instead handle it, setting *fired: add replacement nodes to rw->dst and map n's outputs to them
 * (rlx_opt_replace), or copy n itself (rlx_rw_copy) and then replace what it matched in dst
 * (patterns are matched on dst, where earlier rewrites are visible). A rule that rewrote sets
 * `rewrote`. Replaced nodes' producers are copied as usual; dce drops what became dead.
 * uses[v] counts the readers of src value v (node operands and graph outputs). */
typedef struct rlx_opt_rule_ctx {
  rlx_rw *rw;
  const rlx_opt_ctx *cx;
  const uint32_t *uses;
  void *state; /* the pass's own */
  bool rewrote;
} rlx_opt_rule_ctx;
typedef rlx_status *(*rlx_opt_rule_fn)(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired);
RLX_MUST_USE rlx_status *rlx_opt_run_rule(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_opt_rule_fn rule, void *state, rlx_graph **out,
                             bool *changed);

/* ---- helpers ---- */
/* Per-value use counts of g (node operands, graph outputs); malloc'ed, NULL on OOM. */
uint32_t *rlx_opt_uses(const rlx_graph *g);
/* true for ops that are deterministic functions of their operands (no sampling, custom or
 * unsupported ops, no sub-graphs): those may be merged, folded or dropped. */
bool rlx_opt_pure(const rlx_node *n);
/* The node of graph g that produces v. */
static inline const rlx_node *rlx_opt_producer(const rlx_graph *g, rlx_value v) { return &g->nodes[g->val_node[v]]; }
/* The bytes of v when g knows them: a Constant's, or a Param's value from cx (type-checked);
 * NULL otherwise. Borrowed. */
const void *rlx_opt_const_data(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx);
/* v's constant elements as doubles (float32/float64/integer dtypes), malloc'ed into *out (numel
 * entries, at least one allocated): false when v is not a known constant of such a dtype or on
 * OOM. */
bool rlx_opt_const_f64(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx, double **out, int64_t *numel);
/* true when v is a known constant with one element, written to *out. */
bool rlx_opt_scalar(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx, double *out);
/* A float32 constant of type t from doubles (converted) in rw->dst. */
RLX_MUST_USE rlx_status *rlx_opt_const_from_f64(rlx_graph *g, const rlx_type *t, const double *data, rlx_value *out);
/* A rank-0 constant of dtype dt (F32, F64, I32 or I64; INTERNAL for others) holding v (converted
 * like a C cast) in g. */
RLX_MUST_USE rlx_status *rlx_opt_scalar_const(rlx_graph *g, rlx_dtype dt, double v, rlx_value *out);
/* The dst value of src value v. */
static inline rlx_value rlx_opt_mapped(const rlx_opt_rule_ctx *r, rlx_value v) { return r->rw->map[v]; }
/* The dst node producing the dst value of src value v (valid until the next node is added). */
static inline const rlx_node *rlx_opt_dst_producer(const rlx_opt_rule_ctx *r, rlx_value v) {
  return rlx_opt_producer(r->rw->dst, r->rw->map[v]);
}
/* Maps src node n's output k to dst value v (a rewrite). */
static inline void rlx_opt_replace(rlx_opt_rule_ctx *r, const rlx_node *n, uint32_t k, rlx_value v) {
  r->rw->map[n->out0 + k] = v;
  r->rewrote = true;
}

/* ---- matching on dst (src/opt/match.c) ---- */
/* The node producing v in d when its op is `op`; NULL otherwise. */
const rlx_node *rlx_opt_def(const rlx_graph *d, rlx_value v, rlx_op op);
/* When v = u op c (or c op u for Add/Mul) with c a known scalar constant: *u, *c and true. */
bool rlx_opt_bin_scalar(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_op op, rlx_value *u, double *c);
/* v = a u + b through a chain of Add/Sub/Mul/Div by scalar constants (possibly none: u = v, a = 1,
 * b = 0); returns the number of ops peeled. */
int rlx_opt_affine(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *u, double *a, double *b);
/* |a - b| within a relative 1e-4 (constants exported in float32 or rounded by exporters). */
bool rlx_opt_near(double a, double b);

#endif
