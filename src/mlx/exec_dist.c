/* exec_dist.c: executables and process groups (rlx_executable_set_group in rlx/dist.h). */
#include <string.h>

#include "dist/dist_impl.h"
#include "mlx/exec.h"

bool rlx_exec_has_collective(const rlx_graph *g) {
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op == RLX_OP_ALL_REDUCE || n->op == RLX_OP_ALL_GATHER || n->op == RLX_OP_REDUCE_SCATTER) return true;
    if (n->op == RLX_OP_CUSTOM && strcmp(rlx_node_s(n, "name"), RLX_DIST_ALL_REDUCE_OP) == 0) return true;
  }
  return false;
}

rlx_dist_group *rlx_exec_group(const rlx_executable *ex) { return ex->group ? ex->group : rlx_dist_default_group(); }

rlx_status *rlx_executable_set_group(rlx_executable *ex, rlx_dist_group *g) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_group: NULL executable");
  pthread_mutex_lock(&ex->mu);
  if (ex->group != g) rlx_exec_drop_compiled(ex);
  ex->group = g;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}
