/* ir.h: the IR's internal representation, shared by the IR, the MLX lowering and the importer.
 * Not installed; users see rlx/graph.h. */
#ifndef RLX_IR_IR_H
#define RLX_IR_IR_H

#include "base/util.h"
#include "rlx/graph.h"

#define RLX_MAX_NODE_OUTPUTS 64

/* An owned attribute (a validated copy of an rlx_attr; defaults are materialized). */
typedef struct rlx_attr_val {
  char *name;
  rlx_attr_kind kind;
  int64_t i;
  double f;
  size_t n;
  int64_t *ints;
  double *floats;
  char *s;
  rlx_graph *graph;
} rlx_attr_val;

typedef struct rlx_node {
  rlx_op op;
  char *name;         /* label for messages; Input/Param: the input or param name */
  uint32_t n_in;
  rlx_value *in;
  uint32_t n_out;
  rlx_value out0;     /* outputs are out0 .. out0 + n_out - 1 */
  uint32_t n_attrs;
  rlx_attr_val *attrs;
  void *data;         /* Constant payload */
  size_t nbytes;
} rlx_node;

struct rlx_graph {
  rlx_node *nodes;
  size_t n_nodes, cap_nodes;
  rlx_type *types;      /* per value */
  uint32_t *val_node;   /* per value: producing node */
  size_t n_vals, cap_vals;
  uint32_t *inputs;     /* node indices of Input nodes, declaration order */
  size_t n_inputs, cap_inputs;
  uint32_t *params;     /* node indices of Param nodes */
  size_t n_params, cap_params;
  rlx_value *outputs;
  char **output_names;
  size_t n_outputs;
  int64_t n_symbols;    /* 1 + largest symbol id used by an input */
  _Atomic size_t refs;  /* references: the creator's (until rlx_graph_free) and each executable's */
};

/* Adds a Constant to g holding the payload of Constant node c of graph src, shared, not copied
 * (its type: c's output type in src). Errors: INVALID_ARGUMENT (c not a Constant),
 * FAILED_PRECONDITION (g used by an executable), RESOURCE_EXHAUSTED. Not thread-safe for g. */
RLX_MUST_USE rlx_status *rlx_graph_add_constant_of(rlx_graph *g, const rlx_graph *src, const rlx_node *c, rlx_value *out);

/* Takes a reference on g (an executable's: g stays alive and unchangeable until the matching
 * rlx_graph_unref). Thread-safe. */
void rlx_graph_ref(const rlx_graph *g);
/* Drops a reference; the last one frees the graph. NULL accepted. Thread-safe. */
void rlx_graph_unref(const rlx_graph *g);
/* FAILED_PRECONDITION naming `what` when an executable holds g (it must not change), else NULL. */
rlx_status *rlx_graph_check_mutable(const rlx_graph *g, const char *what);
/* true when a dim of some input of g is symbol `id`: a run binds it (a symbol below n_symbols that
 * no input uses stays unbound). */
bool rlx_graph_input_symbol(const rlx_graph *g, int64_t id);

/* ---- op metadata (generated from rlx/op_table.h) ---- */
typedef struct rlx_attr_spec {
  const char *name;     /* points into the parsed schema storage */
  rlx_attr_kind kind;
  bool has_default;
  rlx_attr_val dflt;
} rlx_attr_spec;

typedef struct rlx_op_info {
  const char *name;
  const char *family;
  int min_in, max_in;
  const char *schema;
  size_t n_specs;
  rlx_attr_spec *specs; /* parsed schema */
  bool open;            /* schema ends in '*': further attributes accepted */
  bool oom;             /* parsing the schema ran out of memory (every add of the op fails) */
} rlx_op_info;

/* Parsed op info; parses every schema once (thread-safe). */
const rlx_op_info *rlx_op_info_get(rlx_op op);

/* ---- attribute access on a built node (defaults are materialized, so lookups of schema attributes
 * always succeed; the fallbacks below only apply to names outside the schema) ---- */
const rlx_attr_val *rlx_node_attr(const rlx_node *n, const char *name);
int64_t rlx_node_i(const rlx_node *n, const char *name);
double rlx_node_f(const rlx_node *n, const char *name);
const int64_t *rlx_node_is(const rlx_node *n, const char *name, size_t *count);
const double *rlx_node_fs(const rlx_node *n, const char *name, size_t *count);
const char *rlx_node_s(const rlx_node *n, const char *name);
const rlx_graph *rlx_node_g(const rlx_node *n, const char *name);

/* Validates attrs against the op's schema, copies them and materializes defaults.
 * On success *out and *n_out own the copies (free with rlx_attrs_free). */
RLX_MUST_USE rlx_status *rlx_attrs_build(rlx_op op, size_t n, const rlx_attr *attrs, rlx_attr_val **out, uint32_t *n_out);
void rlx_attrs_free(rlx_attr_val *a, uint32_t n, bool free_graphs);

/* ---- shape inference ---- */
typedef struct rlx_infer_ctx {
  const rlx_graph *g;
  const rlx_node *n;       /* n->in/n->n_in/attrs are set; outputs not yet */
  const rlx_type *in;      /* types of the inputs */
  rlx_type *out;           /* RLX_MAX_NODE_OUTPUTS slots */
  uint32_t n_out;          /* set by the infer function (default 1) */
  const int64_t *sym;      /* symbol values when binding (NULL while building) */
  int64_t n_sym;
} rlx_infer_ctx;

typedef rlx_status *(*rlx_infer_fn)(rlx_infer_ctx *c);

/* One infer function per family. */
#define RLX_X(e, name, fam, lo, hi, spec) rlx_status *rlx_infer_##fam(rlx_infer_ctx *c);
RLX_OP_TABLE(RLX_X)
#undef RLX_X

rlx_infer_fn rlx_infer_fn_of(rlx_op op);

/* Validates an activation attribute: "none" (*out = RLX_OP_COUNT) or the name of an
 * attribute-free float unary op (*out = that op); INVALID_ARGUMENT otherwise. */
RLX_MUST_USE rlx_status *rlx_infer_activation(const char *act, rlx_op *out);
/* The normalized length of a norm op's x (input 0, float): the size of `axis` (LayerNorm, RmsNorm
 * and their gradients) or the channels C of x[N,C,...] (group: GroupNorm, num_groups dividing C).
 * INVALID_ARGUMENT for a non-float x, a bad rank, epsilon < 0 or num_groups; OUT_OF_RANGE axis. */
RLX_MUST_USE rlx_status *rlx_infer_norm_len(const rlx_infer_ctx *c, bool group, int64_t *len);
/* The number of operands an ElementwiseRegion step of this kind reads (unary and cast 1, binary 2,
 * where 3). */
static inline int rlx_region_operands(int64_t kind) { return kind == 2 ? 2 : kind == 3 ? 3 : 1; }
/* true for the compare ops (bool output). */
bool rlx_op_is_compare(rlx_op op);

/* Resolves a dim through the binding (symbols become sizes when bound). */
int64_t rlx_infer_dim(const rlx_infer_ctx *c, int64_t d);
/* Broadcasts two dims (NumPy rules; symbols unify with themselves and with 1). */
bool rlx_dim_broadcast(int64_t a, int64_t b, int64_t *out);
/* true when a and b may be equal (equal, or either is symbolic). */
bool rlx_dim_compatible(int64_t a, int64_t b);
/* Broadcasts two types' shapes into out->rank/dims (dtype untouched); INVALID_ARGUMENT otherwise. */
RLX_MUST_USE rlx_status *rlx_shape_broadcast(const rlx_type *a, const rlx_type *b, rlx_type *out);

/* Re-runs inference for every node with symbols bound to sym[0..n_sym) (sizes), writing the
 * concrete type of every value to types[0..num_values). Errors name the node. */
RLX_MUST_USE rlx_status *rlx_graph_bind(const rlx_graph *g, const int64_t *sym, int64_t n_sym, rlx_type *types);
/* The node half of rlx_graph_bind: with the leaf types (inputs, params, constants) already in
 * types[] (static), infers every other value's type in node order. Callers that run a graph at
 * other leaf shapes than the declared ones (an active extent) fill the leaves themselves. */
RLX_MUST_USE rlx_status *rlx_graph_infer_nodes(const rlx_graph *g, const int64_t *sym, int64_t n_sym, rlx_type *types);

/* Types every value of sub-graph `sub` (If/While/Scan body) when its inputs bind positionally to
 * operands of types in[0..n): dtypes and ranks must match, static dims must agree and each
 * sub-graph symbol takes one size. With concrete operand types the sub-graph is bound
 * (rlx_graph_bind); otherwise (building with symbolic dims) its own types are returned with the
 * symbols that the operands resolve substituted and the rest RLX_DIM_DYNAMIC. types holds
 * sub->n_vals entries. INVALID_ARGUMENT on an operand count or type mismatch (the input is named),
 * errors of binding the sub-graph otherwise. */
RLX_MUST_USE rlx_status *rlx_subgraph_bind(const rlx_graph *sub, const rlx_type *in, size_t n, rlx_type *types);

/* Shared by inference and lowering (src/ir). */
/* Reads a per-spatial-dim int list attribute (nsp entries; pads: 2 nsp), `dflt` when empty;
 * INVALID_ARGUMENT for another length. */
RLX_MUST_USE rlx_status *rlx_conv_list(const rlx_node *n, const char *name, int nsp, int64_t dflt, int64_t *out);
/* The same for a node that inference has checked (lowering): never fails. */
void rlx_conv_list_get(const rlx_node *n, const char *name, int nsp, int64_t dflt, int64_t *out);
/* Output size of one pooled dim (ONNX pooling, ceil_mode included); -1 when the window does not fit. */
int64_t rlx_pool_out(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d, bool ceil_mode);
/* Checks that the window arithmetic of pooled spatial dim `dim` stays inside int64: the padded
 * size plus a stride, and the window's extent k * d (every window position and the output size
 * are then below INT64_MAX); RESOURCE_EXHAUSTED naming the geometry otherwise. */
RLX_MUST_USE rlx_status *rlx_pool_fits(int dim, int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d);
/* Validates an attention mask kind (*kind: 0 none, 1 causal, 2 sliding_window, 3 custom, 4 bias)
 * and window; *with_input when it takes a mask tensor. */
RLX_MUST_USE rlx_status *rlx_infer_attention_mask(const char *mask, int64_t window, int *kind, bool *with_input);
/* Checks a custom / bias mask tensor against [B,H,Sq,Sk] = full. */
RLX_MUST_USE rlx_status *rlx_infer_attention_mask_input(const rlx_type *m, int kind, const int64_t *full);
/* Checks the operands and attributes of an Attention-shaped node (q, k, v at inputs 0..2, the mask
 * at input mask_in when its kind takes one); *y receives Attention's output type. */
RLX_MUST_USE rlx_status *rlx_infer_attention_operands(const rlx_infer_ctx *c, int mask_in, rlx_type *y);
/* Checks Rope-shaped operands (x, cos, sin at inputs 0..2; attributes head_dim, n_rot, interleaved). */
RLX_MUST_USE rlx_status *rlx_infer_rope_shapes(const rlx_infer_ctx *c);
/* Operand positions of the fused blocks (-1 = absent; rlx/op_table.h lists them): x is the input
 * (h of the attention ops), gamma/beta the (last) norm's parameters. count = inputs expected. */
typedef struct rlx_fused_io {
  int x, r, bias, gamma, beta;
  int qkv_w, qkv_b, out_w, out_b, mask, cos, sin;
  int ln1_g, ln1_b, ff1_w, ff1_b, ff2_w, ff2_b;
  int count;
} rlx_fused_io;
void rlx_fused_io_of(const rlx_node *n, rlx_fused_io *io);
/* Index of a reduction kind (sum 0, mean 1, max 2, min 3, prod 4); -1 when unknown. */
int rlx_reduce_kind(const char *k);
/* Index of an AllReduce kind (sum 0, max 1, min 2); -1 when unknown. */
int rlx_collective_kind(const char *k);
/* ONNX Slice clamping of one axis: output length; *out_start the effective start. */
int64_t rlx_slice_range(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *out_start);

/* fftsample: the FFT norm names backward, ortho, forward -> 0, 1, 2 (mx::fft::FFTNorm order); -1
 * when unknown. */
int rlx_fft_norm(const char *name);

/* Element e of integer data of dtype dt as int64 (uint64 above INT64_MAX reads as negative). */
static inline int64_t rlx_int_at(const void *data, rlx_dtype dt, int64_t e) {
  switch (dt) {
    case RLX_DTYPE_I8: return ((const int8_t *)data)[e];
    case RLX_DTYPE_I16: return ((const int16_t *)data)[e];
    case RLX_DTYPE_I32: return ((const int32_t *)data)[e];
    case RLX_DTYPE_U8: return ((const uint8_t *)data)[e];
    case RLX_DTYPE_U16: return ((const uint16_t *)data)[e];
    case RLX_DTYPE_U32: return ((const uint32_t *)data)[e];
    case RLX_DTYPE_U64: return (int64_t)((const uint64_t *)data)[e];
    default: return ((const int64_t *)data)[e];
  }
}

/* Node of value v and the output index within it. */
static inline const rlx_node *rlx_value_node(const rlx_graph *g, rlx_value v) {
  return &g->nodes[g->val_node[v]];
}

/* "node 12 (Conv 'conv1')" for messages, written into buf. */
const char *rlx_node_label(const rlx_graph *g, const rlx_node *n, char *buf, size_t cap);

#endif
