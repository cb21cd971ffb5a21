/* dce.c: dead-code elimination (rlx/optimize.h): copies the inputs and the nodes the outputs
 * depend on. */
#include <stdlib.h>

#include "opt/opt.h"

rlx_status *rlx_pass_dce(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  (void)cx;
  bool *live = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *live);
  if (!live) return RLX_OOM();
  rlx_graph_mark_live(g, g->n_outputs, g->outputs, live);
  rlx_rw rw;
  rlx_status *st = rlx_rw_init(&rw, g);
  size_t kept = 0;
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    if (!live[k] && g->nodes[k].op != RLX_OP_INPUT) continue;
    st = rlx_rw_copy(&rw, &g->nodes[k]);
    kept++;
  }
  if (!st) st = rlx_rw_finish(&rw, out);
  if (!st) *changed = kept != g->n_nodes;
  rlx_rw_free(&rw);
  free(live);
  return st;
}
