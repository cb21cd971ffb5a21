/* constfold.c: constant folding (rlx/optimize.h). Every pure node whose operands are constants
 * (or params with given values), transitively, is computed in one MLX run on the CPU; the values
 * that something else reads become constants. Such a value larger than its node's operands and
 * than 4 KiB stays computed by its node (an Expand of a scalar stays a lazy broadcast), with its
 * operands folded in turn; a large value that only folded nodes read (Expand then ReduceSum)
 * folds away. */
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"
#include "rlx/executable.h"

#define SMALL_BYTES 4096

static bool foldable_node(const rlx_graph *g, const rlx_node *n, const bool *known) {
  if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM || n->op == RLX_OP_CONSTANT || !rlx_opt_pure(n)) return false;
  for (uint32_t i = 0; i < n->n_in; i++)
    if (!known[n->in[i]]) return false;
  for (uint32_t o = 0; o < n->n_out; o++)
    if (!rlx_type_is_static(&g->types[n->out0 + o])) return false;
  return true;
}

/* true when n's results are larger than its operands and than SMALL_BYTES. */
static bool grows(const rlx_graph *g, const rlx_node *n) {
  size_t in_bytes = 0, out_bytes = 0, b;
  for (uint32_t i = 0; i < n->n_in; i++) {
    rlx_status *st = rlx_type_nbytes(&g->types[n->in[i]], &b);
    if (st) return rlx_status_free(st), true;
    in_bytes += b;
  }
  for (uint32_t o = 0; o < n->n_out; o++) {
    rlx_status *st = rlx_type_nbytes(&g->types[n->out0 + o], &b);
    if (st) return rlx_status_free(st), true;
    out_bytes += b;
  }
  return out_bytes > SMALL_BYTES && out_bytes > in_bytes;
}

/* Runs the sub-graph of g that computes values want[0..nw) (all known) and writes the results. */
static rlx_status *evaluate(const rlx_graph *g, const rlx_opt_ctx *cx, const rlx_value *want, size_t nw, rlx_tensor **res) {
  bool *live = calloc(g->n_nodes, sizeof *live);
  rlx_value *outs = malloc(nw * sizeof *outs);
  rlx_rw rw = {0};
  rlx_executable *ex = NULL;
  rlx_status *st = live && outs ? rlx_rw_init(&rw, g) : RLX_OOM();
  if (!st) rlx_graph_mark_live(g, nw, want, live);
  for (size_t k = 0; !st && k < g->n_nodes; k++)
    if (live[k]) st = rlx_rw_copy(&rw, &g->nodes[k]);
  for (size_t i = 0; !st && i < nw; i++) outs[i] = rw.map[want[i]];
  if (!st) st = rlx_graph_set_outputs(rw.dst, nw, outs);
  if (!st) st = rlx_executable_create(rw.dst, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex);
  for (size_t p = 0; !st && p < rlx_executable_num_params(ex); p++) {
    const char *pn = rlx_executable_param_name(ex, p);
    size_t k = 0;
    while (k < cx->n_params && strcmp(cx->pnames[k], pn)) k++;
    st = k < cx->n_params ? rlx_executable_set_param(ex, pn, cx->pvals[k]) : RLX_ERR(INTERNAL, "param '%s' has no value", pn);
  }
  if (!st) st = rlx_executable_run(ex, 0, NULL, NULL, nw, res);
  rlx_executable_free(ex);
  rlx_rw_free(&rw);
  free(live);
  free(outs);
  return st;
}

rlx_status *rlx_pass_constfold(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  bool *known = calloc(g->n_vals ? g->n_vals : 1, sizeof *known), *fold = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *fold);
  rlx_value *want = malloc((g->n_vals ? g->n_vals : 1) * sizeof *want);
  rlx_tensor **res = calloc(g->n_vals ? g->n_vals : 1, sizeof *res);
  size_t nw = 0;
  rlx_status *st = known && fold && want && res ? NULL : RLX_OOM();
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    bool leaf = n->op == RLX_OP_CONSTANT || (n->op == RLX_OP_PARAM && rlx_opt_const_data(g, n->out0, cx));
    fold[k] = !leaf && foldable_node(g, n, known);
    for (uint32_t o = 0; o < n->n_out; o++) known[n->out0 + o] = leaf || fold[k];
  }
  /* the folded values something else reads (a node that is not folded, or a graph output),
   * deciding from the last node back which folded nodes stay nodes because they grow */
  bool *wanted = st ? NULL : calloc(g->n_vals ? g->n_vals : 1, sizeof *wanted);
  if (!st && !wanted) st = RLX_OOM();
  for (size_t i = 0; !st && i < g->n_outputs; i++) wanted[g->outputs[i]] = true;
  for (size_t k = g->n_nodes; !st && k-- > 0;) {
    const rlx_node *n = &g->nodes[k];
    bool read = false;
    for (uint32_t o = 0; o < n->n_out; o++) read |= wanted[n->out0 + o];
    if (fold[k] && read && grows(g, n)) fold[k] = false;
    if (fold[k]) continue;
    for (uint32_t i = 0; i < n->n_in; i++) wanted[n->in[i]] = true;
  }
  for (size_t v = 0; !st && v < g->n_vals; v++)
    if (wanted[v] && fold[g->val_node[v]]) want[nw++] = (rlx_value)v;
  if (!st && nw) st = evaluate(g, cx, want, nw, res);
  /* rewrite: wanted values become constants, other folded nodes are dropped */
  rlx_rw rw = {0};
  if (!st) st = rlx_rw_init(&rw, g);
  for (size_t k = 0, w = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (!fold[k]) {
      st = rlx_rw_copy(&rw, n);
      continue;
    }
    for (uint32_t o = 0; !st && o < n->n_out; o++) {
      if (w == nw || want[w] != n->out0 + o) continue;
      const rlx_tensor *t = res[w++];
      st = rlx_graph_add_constant(rw.dst, rlx_tensor_type(t), rlx_tensor_cdata(t), rlx_tensor_nbytes(t), &rw.map[n->out0 + o]);
    }
  }
  if (!st) st = rlx_rw_finish(&rw, out);
  bool any = false;
  for (size_t k = 0; fold && k < g->n_nodes; k++) any |= fold[k];
  if (!st) *changed = any;
  rlx_rw_free(&rw);
  for (size_t i = 0; res && i < nw; i++) rlx_tensor_free(res[i]);
  free(known);
  free(fold);
  free(wanted);
  free(want);
  free(res);
  return st;
}
