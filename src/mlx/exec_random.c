/* exec_random.c: the random streams of an executable's Sample nodes (exec.h).
 *
 * Each Sample node of the graph and of its sub-graphs has a stream: a key (uint32[2], MLX's
 * threefry key) that every draw splits into the key to draw with and the stream's next key
 * (mx::random::split, the JAX scheme). A node with a seed starts its stream at
 * mx::random::key(seed); one without (seed 0) at a key drawn from MLX's global key sequence when
 * the executable first runs. The keys are leaves of the run like params (inputs of the compiled
 * function, so compiled mode draws fresh keys each run instead of replaying the traced ones) and
 * the advanced keys are extra outputs, kept after a successful run: the k-th run of an executable
 * draws with the same keys in every mode. */
#include <stdlib.h>

#include "mlx/exec.h"

static rlx_status *collect(rlx_executable *ex, const rlx_graph *g) {
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op == RLX_OP_SAMPLE) {
      const rlx_node **p = realloc(ex->rng.nodes, (ex->rng.n + 1) * sizeof *p);
      if (!p) return RLX_OOM();
      ex->rng.nodes = p;
      ex->rng.nodes[ex->rng.n++] = n;
    }
    for (uint32_t a = 0; a < n->n_attrs; a++)
      if (n->attrs[a].kind == RLX_ATTR_GRAPH) RLX_TRY(collect(ex, n->attrs[a].graph));
  }
  return NULL;
}

rlx_status *rlx_exec_rng_init(rlx_executable *ex) {
  RLX_TRY(collect(ex, ex->g));
  size_t n = ex->rng.n + 1;
  ex->rng_state = calloc(n, sizeof *ex->rng_state);
  ex->rng.keys = calloc(n, sizeof *ex->rng.keys);
  ex->rng_call_outs = calloc(ex->g->n_outputs + n + 1, sizeof *ex->rng_call_outs);
  return ex->rng_state && ex->rng.keys && ex->rng_call_outs ? NULL : RLX_OOM();
}

void rlx_exec_rng_free(rlx_executable *ex) {
  for (size_t i = 0; ex->rng_state && i < ex->rng.n; i++) rlx_mx_release(ex->rng_state[i]);
  free(ex->rng_state);
  free(ex->rng.keys);
  free((void *)ex->rng.nodes);
  free(ex->rng_call_outs);
}

void rlx_exec_rng_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **keys) {
  for (size_t i = 0; i < ex->rng.n; i++) {
    if (!ex->rng_state[i]) {
      int64_t seed = rlx_node_i(ex->rng.nodes[i], "seed");
      rlx_mx_arr *k = seed ? rlx_mx_random_key(c, (uint64_t)seed) : rlx_mx_random_fresh_key(c);
      rlx_mx_eval(c, &k, 1);
      ex->rng_state[i] = rlx_mx_keep(c, k);
    }
    keys[i] = ex->rng_state[i];
  }
}

rlx_status *rlx_exec_rng_commit(rlx_executable *ex, rlx_mx *c) {
  rlx_mx_arr *kept[RLX_EXEC_MAX_RNG];
  size_t n = ex->rng.n;
  for (size_t i = 0; i < n; i++) kept[i] = rlx_mx_keep(c, ex->rng.keys[i]);
  rlx_status *st = rlx_mx_take_error(c);
  for (size_t i = 0; i < n; i++) {
    if (st) {
      rlx_mx_release(kept[i]);
    } else {
      rlx_mx_release(ex->rng_state[i]);
      ex->rng_state[i] = kept[i];
    }
  }
  return st;
}
