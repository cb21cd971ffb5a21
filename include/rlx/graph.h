/* rlx/graph.h: the rlx IR graph builder.
 *
 * A graph is an append-only list of nodes in topological order. Each node applies one op (see
 * rlx/op_table.h for the vocabulary and each op's semantics) to earlier values and produces one
 * or more values. A value is named by an rlx_value id, dense from 0 in creation order.
 *
 * Every builder call infers the output types from the input types and attributes and verifies
 * them (arity, dtypes, ranks, broadcastability, attribute names/types/ranges). A failing call
 * returns a status naming the node, the op and what was expected vs got, adds nothing to the graph
 * and leaves its out-parameters untouched. So a graph that was built is always well-formed.
 *
 * Leaves: inputs (named, typed; dims may be symbolic, see rlx/types.h), params (named weights,
 * static shape) and constants (raw little-endian bytes in their dtype). Names of inputs and params
 * are unique within a graph (an input and a param may not share a name).
 *
 * Sub-graphs (If, While, Scan bodies) are graphs too; their inputs bind positionally to the
 * parent node's operands and their params resolve by name against the executable's params.
 *
 * Ownership: the graph owns its nodes, names, constant bytes and attribute copies. A sub-graph
 * passed in an RLX_ATTR_GRAPH attribute is moved into the node on success (the caller must not
 * use or free it afterwards) and stays with the caller on failure. An executable created on a
 * graph keeps it alive (rlx_graph_free may come first) and frozen: while one exists, every builder
 * call on the graph fails with FAILED_PRECONDITION.
 * Thread-safety: building needs exclusive use; a finished graph may be read concurrently.
 */
#ifndef RLX_GRAPH_H
#define RLX_GRAPH_H

#include <stdio.h>

#include "rlx/op_table.h"
#include "rlx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rlx_op {
#define RLX_X(e, name, fam, lo, hi, spec) RLX_OP_##e,
  RLX_OP_TABLE(RLX_X)
#undef RLX_X
      RLX_OP_COUNT
} rlx_op;

/* Op name as in rlx/op_table.h ("MatMul"; a static string); "invalid" outside the enum. */
const char *rlx_op_name(rlx_op op);
/* Looks an op up by name (case-sensitive). NOT_FOUND naming `name` when unknown (NULL included),
 * INVALID_ARGUMENT for a NULL out; *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_op_from_name(const char *name, rlx_op *out);

typedef struct rlx_graph rlx_graph;
typedef uint32_t rlx_value;
/* The value returned by the index getters below for an index out of range. */
#define RLX_NO_VALUE ((rlx_value)UINT32_MAX)

/* ---- attributes ---- */
typedef enum rlx_attr_kind {
  RLX_ATTR_INT,
  RLX_ATTR_FLOAT,
  RLX_ATTR_INTS,
  RLX_ATTR_FLOATS,
  RLX_ATTR_STRING,
  RLX_ATTR_GRAPH,
} rlx_attr_kind;

/* A named attribute as passed to rlx_graph_add. Only the member matching `kind` is read:
 * i (INT), f (FLOAT), n + ints (INTS), n + floats (FLOATS), s (STRING, NUL-terminated),
 * graph (GRAPH, moved into the node on success). All pointers are borrowed for the call. */
typedef struct rlx_attr {
  const char *name;
  rlx_attr_kind kind;
  int64_t i;
  double f;
  size_t n;
  const int64_t *ints;
  const double *floats;
  const char *s;
  rlx_graph *graph;
} rlx_attr;

/* Attribute constructors: RLX_ATTR_I("axis", 1), RLX_ATTR_IS("perm", 3, perm), ... In C they are
 * compound literals (usable in array initializers); in C++ (any standard: C++ has no compound
 * literals, and designated initializers only from C++20) they call the inline functions below. */
#ifndef __cplusplus
#define RLX_ATTR_I(nm, v) ((rlx_attr){.name = (nm), .kind = RLX_ATTR_INT, .i = (v)})
#define RLX_ATTR_F(nm, v) ((rlx_attr){.name = (nm), .kind = RLX_ATTR_FLOAT, .f = (v)})
#define RLX_ATTR_IS(nm, cnt, p) ((rlx_attr){.name = (nm), .kind = RLX_ATTR_INTS, .n = (cnt), .ints = (p)})
#define RLX_ATTR_FS(nm, cnt, p) \
  ((rlx_attr){.name = (nm), .kind = RLX_ATTR_FLOATS, .n = (cnt), .floats = (p)})
#define RLX_ATTR_S(nm, v) ((rlx_attr){.name = (nm), .kind = RLX_ATTR_STRING, .s = (v)})
#define RLX_ATTR_G(nm, g) ((rlx_attr){.name = (nm), .kind = RLX_ATTR_GRAPH, .graph = (g)})
#else
static inline rlx_attr rlx_attr_make_(const char *name, rlx_attr_kind kind) {
  rlx_attr a = rlx_attr();
  a.name = name;
  a.kind = kind;
  return a;
}
static inline rlx_attr rlx_attr_i_(const char *nm, int64_t v) { rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_INT); a.i = v; return a; }
static inline rlx_attr rlx_attr_f_(const char *nm, double v) { rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_FLOAT); a.f = v; return a; }
static inline rlx_attr rlx_attr_is_(const char *nm, size_t n, const int64_t *p) {
  rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_INTS);
  a.n = n;
  a.ints = p;
  return a;
}
static inline rlx_attr rlx_attr_fs_(const char *nm, size_t n, const double *p) {
  rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_FLOATS);
  a.n = n;
  a.floats = p;
  return a;
}
static inline rlx_attr rlx_attr_s_(const char *nm, const char *v) { rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_STRING); a.s = v; return a; }
static inline rlx_attr rlx_attr_g_(const char *nm, rlx_graph *g) { rlx_attr a = rlx_attr_make_(nm, RLX_ATTR_GRAPH); a.graph = g; return a; }
#define RLX_ATTR_I(nm, v) rlx_attr_i_((nm), (v))
#define RLX_ATTR_F(nm, v) rlx_attr_f_((nm), (v))
#define RLX_ATTR_IS(nm, cnt, p) rlx_attr_is_((nm), (cnt), (p))
#define RLX_ATTR_FS(nm, cnt, p) rlx_attr_fs_((nm), (cnt), (p))
#define RLX_ATTR_S(nm, v) rlx_attr_s_((nm), (v))
#define RLX_ATTR_G(nm, g) rlx_attr_g_((nm), (g))
#endif

/* ---- building ---- */

/* Creates an empty graph. Errors: INVALID_ARGUMENT (NULL out), RESOURCE_EXHAUSTED. Free with
 * rlx_graph_free. */
RLX_MUST_USE rlx_status *rlx_graph_create(rlx_graph **out);
/* Releases the caller's graph: the graph, its sub-graphs and everything it owns are freed once no
 * executable uses it any more (an executable keeps its graph alive, so freeing the graph before
 * the executable is safe). NULL accepted. Thread-safe against executables being freed. */
void rlx_graph_free(rlx_graph *g);

/* Adds a named runtime input of type `type` (copied; dims may be symbolic) and writes its value to
 * *out. The name is copied. Errors: INVALID_ARGUMENT for a NULL argument, an empty name or a
 * malformed type (rank, dtype), ALREADY_EXISTS when an input or param has the name,
 * RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_graph_add_input(rlx_graph *g, const char *name, const rlx_type *type,
                                rlx_value *out);
/* Adds a named param (weight) of static type `type`; its value is set on the executable by name.
 * Errors as rlx_graph_add_input, plus INVALID_ARGUMENT for a symbolic dim. */
RLX_MUST_USE rlx_status *rlx_graph_add_param(rlx_graph *g, const char *name, const rlx_type *type,
                                rlx_value *out);
/* Adds a constant of static type `type` whose bytes (nbytes = numel * dtype size, copied; data
 * may be NULL when that is 0) are little-endian in the dtype's layout. Errors: INVALID_ARGUMENT
 * (NULL argument, malformed type, symbolic dim, size mismatch: both sizes given),
 * RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_graph_add_constant(rlx_graph *g, const rlx_type *type, const void *data,
                                   size_t nbytes, rlx_value *out);

/* Adds a node applying `op` to inputs[0..n_inputs) with the given attributes (copied; see
 * rlx_attr for sub-graphs), infers and checks its output types, and writes its output values to
 * out[0..*out_n) (out_n may be NULL). out_cap must be large enough: 1 for most ops, 2 for TopK and
 * GatedDeltaNet, the branch output count for If, the carried count for While, for Scan the carries
 * (twice with save_trajectory) plus the body's per-step outputs, a custom op's inferred count; at
 * most 64. `name` (may be NULL; copied) labels the node in messages and in the printer. Errors:
 * INVALID_ARGUMENT (NULL g, inputs or out; an invalid op or a leaf op; arity; unknown, repeated or
 * mistyped attribute; missing required attribute; dtype/shape mismatch; more outputs than out_cap:
 * the message names the node index, op, name and the offending input or attribute with expected
 * vs got), OUT_OF_RANGE (axis, index), UNIMPLEMENTED (an attribute value rlx does not support),
 * NOT_FOUND (an input value id not in this graph; a Custom op name not registered),
 * RESOURCE_EXHAUSTED. On failure nothing is added and *out, *out_n are untouched. */
RLX_MUST_USE rlx_status *rlx_graph_add(rlx_graph *g, rlx_op op, const char *name, size_t n_inputs,
                          const rlx_value *inputs, size_t n_attrs, const rlx_attr *attrs,
                          size_t out_cap, rlx_value *out, size_t *out_n);

/* Convenience for single-output ops: rlx_graph_add with out_cap 1. */
RLX_MUST_USE rlx_status *rlx_graph_add1(rlx_graph *g, rlx_op op, const char *name, size_t n_inputs,
                           const rlx_value *inputs, size_t n_attrs, const rlx_attr *attrs,
                           rlx_value *out);

/* Declares the graph outputs values[0..n) (copied; duplicates allowed). Replaces any earlier list
 * and resets the output names to "out0", "out1", ... Errors: NOT_FOUND for an unknown value id;
 * INVALID_ARGUMENT for n == 0 or a NULL argument; RESOURCE_EXHAUSTED. The graph is unchanged on
 * failure. */
RLX_MUST_USE rlx_status *rlx_graph_set_outputs(rlx_graph *g, size_t n, const rlx_value *values);

/* Renames output i (the name is copied; names are used by executables and written by the CLI;
 * default "out<i>"). Output names are unique: naming output i like another output fails with
 * ALREADY_EXISTS naming both indices. Errors: OUT_OF_RANGE for i >= the output count,
 * INVALID_ARGUMENT for a NULL graph or a NULL/empty name, RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_graph_set_output_name(rlx_graph *g, size_t i, const char *name);

/* ---- inspection ----
 * Borrowed results (types, names) live until the graph is freed or the next builder call that
 * changes what they describe (adding nodes may move value types; set_outputs replaces output
 * names). Every getter checks its arguments: a NULL graph gives 0 / NULL / RLX_NO_VALUE, and so
 * does an index at or above the matching count (names: NULL; values: RLX_NO_VALUE). */
size_t rlx_graph_num_values(const rlx_graph *g);
size_t rlx_graph_num_nodes(const rlx_graph *g);
/* The type of a value; NULL for an unknown id. */
const rlx_type *rlx_graph_value_type(const rlx_graph *g, rlx_value v);
size_t rlx_graph_num_inputs(const rlx_graph *g);           /* Input nodes, declaration order */
rlx_value rlx_graph_input_value(const rlx_graph *g, size_t i);
const char *rlx_graph_input_name(const rlx_graph *g, size_t i);
size_t rlx_graph_num_params(const rlx_graph *g);           /* Param nodes of this graph only */
rlx_value rlx_graph_param_value(const rlx_graph *g, size_t i);
const char *rlx_graph_param_name(const rlx_graph *g, size_t i);
size_t rlx_graph_num_outputs(const rlx_graph *g);          /* 0 until rlx_graph_set_outputs */
rlx_value rlx_graph_output_value(const rlx_graph *g, size_t i);
const char *rlx_graph_output_name(const rlx_graph *g, size_t i);
/* Finds an input or param by name. Errors: NOT_FOUND when absent (NULL name included),
 * INVALID_ARGUMENT for NULL g or out. *out untouched on failure. */
RLX_MUST_USE rlx_status *rlx_graph_find(const rlx_graph *g, const char *name, rlx_value *out);
/* The index of the output named `name` (exact match), for every API that takes an output index
 * (rlx_executable_run's outputs array, rlx_executable_set_handle_feed,
 * rlx_executable_set_output_readback, rlx_executable_output_slot). Errors: NOT_FOUND naming `name`
 * and listing the outputs (NULL name included), INVALID_ARGUMENT for NULL g or out. *out untouched
 * on failure. */
RLX_MUST_USE rlx_status *rlx_graph_output_index(const rlx_graph *g, const char *name, size_t *out);
/* The op of the node that produces value v; RLX_OP_COUNT for an unknown id. */
rlx_op rlx_graph_value_op(const rlx_graph *g, rlx_value v);

/* Prints the graph readably to f: one line per node with its values, op, attributes and types
 * (constants show their first 8 elements), then the outputs. Sub-graphs are printed indented. */
void rlx_graph_print(const rlx_graph *g, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
