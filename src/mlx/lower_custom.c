/* lower_custom.c: Custom: a graph kernel's sub-graph lowered in place of the node, or a host
 * kernel run on evaluated inputs (see rlx/registry.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ir/custom.h"
#include "mlx/lower.h"

static bool same_type(const rlx_type *a, const rlx_type *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Builds the kernel's sub-graph over the node's inputs and lowers it; outputs land in out. */
static rlx_status *expand(rlx_lower *L, const rlx_node *n, const rlx_custom_op_def *d, const rlx_attr *attrs, size_t na,
                          rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_graph *sub;
  RLX_TRY(rlx_graph_create(&sub));
  rlx_value ins[256], outs[RLX_MAX_NODE_OUTPUTS];
  rlx_status *st = NULL;
  for (uint32_t i = 0; !st && i < n->n_in; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%u", i);
    st = rlx_graph_add_input(sub, name, rlx_in_type(L, n, i), &ins[i]);
  }
  if (!st) st = d->expand(d->user_data, sub, n->n_in, ins, na, attrs, n->n_out, outs);
  for (uint32_t i = 0; !st && i < n->n_out; i++) {
    const rlx_type *got = rlx_graph_value_type(sub, outs[i]), *want = rlx_out_type(L, n, i);
    if (!got) st = RLX_ERR(INVALID_ARGUMENT, "its graph kernel gave output %u as value %u, which is not in its graph", i, outs[i]);
    else if (!same_type(got, want))
      st = RLX_ERR(INVALID_ARGUMENT, "its graph kernel made output %u of type %s, but its infer function says %s", i, RLX_TYPE_STR(got),
                   RLX_TYPE_STR(want));
  }
  if (!st) st = rlx_graph_set_outputs(sub, n->n_out, outs);
  rlx_type in_types[256];
  for (uint32_t i = 0; i < n->n_in; i++) in_types[i] = *rlx_in_type(L, n, i);
  rlx_sub prepared;
  if (!st) st = rlx_sub_prepare(L, sub, in_types, n->n_in, &prepared);
  if (!st) {
    st = rlx_sub_run(L, &prepared, in, out);
    rlx_sub_free(&prepared);
  }
  rlx_graph_free(sub);
  return st;
}

/* Copies the inputs to host tensors, runs the kernel, copies its outputs into MLX arrays. */
static rlx_status *host(rlx_lower *L, const rlx_node *n, const rlx_custom_op_def *d, const rlx_attr *attrs, size_t na,
                        rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  for (uint32_t i = 0; i < n->n_in; i++)
    if (rlx_mx_is_tracer(in[i]))
      return RLX_ERR(UNIMPLEMENTED, "it has a host kernel, which needs the values of its inputs; in a compiled function (RLX_MODE_COMPILED) "
                                    "input %u depends on the function's inputs and has none yet: run this graph in lazy or eager mode", i);
  rlx_tensor *ti[256] = {0}, *to[RLX_MAX_NODE_OUTPUTS] = {0};
  rlx_status *st = NULL;
  for (uint32_t i = 0; !st && i < n->n_in; i++) {
    const rlx_type *t = rlx_in_type(L, n, i);
    st = rlx_tensor_create(t->dtype, t->rank, t->dims, NULL, 0, &ti[i]);
    if (!st && !rlx_mx_to_host(c, in[i], rlx_tensor_data(ti[i]), rlx_tensor_nbytes(ti[i])))
      st = rlx_status_annotate(rlx_mx_take_error(c), "input %u", i);
  }
  for (uint32_t i = 0; !st && i < n->n_out; i++) {
    const rlx_type *t = rlx_out_type(L, n, i);
    st = rlx_tensor_create(t->dtype, t->rank, t->dims, NULL, 0, &to[i]);
  }
  if (!st) st = d->host(d->user_data, n->n_in, (const rlx_tensor *const *)ti, na, attrs, n->n_out, to);
  for (uint32_t i = 0; !st && i < n->n_out; i++) out[i] = rlx_mx_from_bytes(c, rlx_tensor_cdata(to[i]), rlx_tensor_type(to[i]));
  for (uint32_t i = 0; i < n->n_in; i++) rlx_tensor_free(ti[i]);
  for (uint32_t i = 0; i < n->n_out; i++) rlx_tensor_free(to[i]);
  return st;
}

void rlx_lower_custom(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const char *name = rlx_node_s(n, "name");
  const rlx_custom_entry *e = rlx_custom_acquire(name);
  if (!e) {
    rlx_lower_fail(L, RLX_STATUS_NOT_FOUND, "custom op '%s' is not registered (rlx_custom_op_register)", name);
    return;
  }
  const rlx_custom_op_def *d = rlx_custom_def(e);
  rlx_attr *attrs = NULL;
  size_t na = 0;
  rlx_status *st = rlx_custom_attrs(n, &attrs, &na);
  if (!st) st = d->expand ? expand(L, n, d, attrs, na, in, out) : host(L, n, d, attrs, na, in, out);
  free(attrs);
  rlx_custom_release(e);
  if (st) rlx_mx_fail(L->mx, rlx_status_annotate(st, "custom op '%s'", name));
}
