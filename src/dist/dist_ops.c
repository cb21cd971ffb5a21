/* dist_ops.c: the reference system's custom op "collective.all_reduce" (rlx/dist.h), a graph
 * kernel that expands into the built-in AllReduce (kind sum, any group size). */
#include "base/util.h"
#include "rlx/dist.h"
#include "rlx/registry.h"

static rlx_status *infer(void *ud, size_t n_in, const rlx_type *in, size_t n_attrs, const rlx_attr *attrs, size_t out_cap, rlx_type *out,
                         size_t *n_out) {
  out[0] = in[0];
  *n_out = 1;
  return NULL;
}

static rlx_status *expand(void *ud, rlx_graph *g, size_t n_in, const rlx_value *in, size_t n_attrs, const rlx_attr *attrs, size_t n_out,
                          rlx_value *out) {
  rlx_attr a[] = {RLX_ATTR_S("kind", "sum"), RLX_ATTR_I("group_size", 0)};
  return rlx_graph_add1(g, RLX_OP_ALL_REDUCE, RLX_DIST_ALL_REDUCE_OP, 1, in, RLX_ARRAY_LEN(a), a, &out[0]);
}

rlx_status *rlx_dist_register_ops(void) {
  if (rlx_custom_op_is_registered(RLX_DIST_ALL_REDUCE_OP)) return NULL;
  rlx_custom_op_def d = {.name = RLX_DIST_ALL_REDUCE_OP, .min_inputs = 1, .max_inputs = 1, .infer = infer, .expand = expand};
  return rlx_custom_op_register(&d, NULL);
}
