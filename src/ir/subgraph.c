/* subgraph.c: typing a sub-graph (If/While/Scan body) against the operands its inputs bind to. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* Replaces the sub-graph symbols of t that map[] resolves (to a size or an outer symbol); other
 * symbols become RLX_DIM_DYNAMIC, since they mean nothing outside the sub-graph. */
static void substitute(rlx_type *t, const int64_t *map, int64_t n_map) {
  for (int d = 0; d < t->rank; d++) {
    int64_t x = t->dims[d];
    if (x >= -1) continue;
    t->dims[d] = RLX_DIM_SYMBOL_ID(x) < n_map && map[RLX_DIM_SYMBOL_ID(x)] != RLX_DIM_DYNAMIC ? map[RLX_DIM_SYMBOL_ID(x)] : RLX_DIM_DYNAMIC;
  }
}

rlx_status *rlx_subgraph_bind(const rlx_graph *sub, const rlx_type *in, size_t n, rlx_type *types) {
  if (n != sub->n_inputs)
    return RLX_ERR(INVALID_ARGUMENT, "the sub-graph declares %zu inputs but gets %zu operands (inputs bind positionally)", sub->n_inputs, n);
  if (sub->n_outputs == 0) return RLX_ERR(INVALID_ARGUMENT, "the sub-graph has no outputs (rlx_graph_set_outputs)");
  int64_t ns = sub->n_symbols;
  int64_t *map = malloc(sizeof(int64_t) * (size_t)(ns ? ns : 1));
  if (!map) return RLX_OOM();
  for (int64_t s = 0; s < ns; s++) map[s] = RLX_DIM_DYNAMIC;
  bool concrete = true; /* every symbol maps to a size: the sub-graph can be bound */
  rlx_status *st = NULL;
  for (size_t i = 0; !st && i < n; i++) {
    const rlx_type *want = &sub->types[sub->nodes[sub->inputs[i]].out0], *got = &in[i];
    bool ok = got->dtype == want->dtype && got->rank == want->rank;
    for (int d = 0; ok && d < want->rank; d++) {
      int64_t w = want->dims[d], o = got->dims[d];
      if (o < 0) concrete = false;
      if (w >= 0) {
        ok = rlx_dim_compatible(w, o);
      } else if (w < -1) {
        int64_t *m = &map[RLX_DIM_SYMBOL_ID(w)];
        ok = *m == RLX_DIM_DYNAMIC || *m == o || o < 0 || *m < 0;
        if (ok && (*m == RLX_DIM_DYNAMIC || *m < 0)) *m = o;
      }
    }
    if (!ok)
      st = RLX_ERR(INVALID_ARGUMENT, "sub-graph input %zu ('%s') is %s but its operand is %s", i, sub->nodes[sub->inputs[i]].name,
                   RLX_TYPE_STR(want), RLX_TYPE_STR(got));
  }
  for (int64_t s = 0; s < ns; s++) concrete = concrete && map[s] >= 0;
  if (!st && concrete) {
    st = rlx_graph_bind(sub, map, ns, types);
  } else if (!st) {
    memcpy(types, sub->types, sizeof(rlx_type) * sub->n_vals);
    for (size_t v = 0; v < sub->n_vals; v++) substitute(&types[v], map, ns);
  }
  free(map);
  return st;
}
