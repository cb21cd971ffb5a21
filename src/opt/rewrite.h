/* rewrite.h: building one graph from another, node by node (src/opt). The IR is append-only, so
 * every pass and the importer's on-demand evaluation (src/onnx) copy what they keep into a new
 * graph and add their replacements there. Not installed. */
#ifndef RLX_OPT_REWRITE_H
#define RLX_OPT_REWRITE_H

#include "ir/ir.h"

#define RLX_RW_NONE UINT32_MAX

/* A rewrite of src into a new graph dst: map[v] is dst's value for src value v (RLX_RW_NONE until
 * it is built). */
typedef struct rlx_rw {
  const rlx_graph *src;
  rlx_graph *dst;
  rlx_value *map;
} rlx_rw;

/* Starts an empty dst for src. RESOURCE_EXHAUSTED. Free with rlx_rw_free. */
RLX_MUST_USE rlx_status *rlx_rw_init(rlx_rw *rw, const rlx_graph *src);
/* Frees the map and dst (unless rlx_rw_finish took it). */
void rlx_rw_free(rlx_rw *rw);
/* Copies src node n into dst with its inputs mapped (they must be built) and maps its outputs:
 * leaves keep their names, constants their bytes, sub-graph attributes are deep copies. Errors of
 * the graph builder; INTERNAL for an input not built yet. */
RLX_MUST_USE rlx_status *rlx_rw_copy(rlx_rw *rw, const rlx_node *n);
/* Sets dst's outputs to src's (mapped, with their names) and moves dst into *out. */
RLX_MUST_USE rlx_status *rlx_rw_finish(rlx_rw *rw, rlx_graph **out);
/* The attribute list of node n as rlx_graph_add takes it (borrowing n's storage; sub-graph
 * attributes are deep copies that the caller owns until rlx_graph_add takes them: free them with
 * rlx_rw_attrs_release on failure). a has room for n->n_attrs entries. */
RLX_MUST_USE rlx_status *rlx_rw_attrs(const rlx_node *n, rlx_attr *a);
void rlx_rw_attrs_release(rlx_attr *a, size_t n);
/* Adds to dst a node of n's op, name and attributes over inputs in[0..n_in) (dst values), its one
 * output to *out: a node rebuilt over rewritten operands. Errors of the graph builder; INTERNAL for
 * more than 64 attributes. */
RLX_MUST_USE rlx_status *rlx_rw_add_like(rlx_graph *dst, const rlx_node *n, size_t n_in, const rlx_value *in, rlx_value *out);

/* A deep copy of g. */
RLX_MUST_USE rlx_status *rlx_graph_clone(const rlx_graph *g, rlx_graph **out);

/* Marks in live[0..g->n_nodes) every node that roots[0..n) depend on (the roots' own nodes
 * included; sub-graph bodies read their operands only). */
void rlx_graph_mark_live(const rlx_graph *g, size_t n, const rlx_value *roots, bool *live);

#endif
