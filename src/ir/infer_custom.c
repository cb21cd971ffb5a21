/* infer_custom.c: inference for Custom: the registered op's arity and infer function (see
 * rlx/registry.h), with its results checked. */
#include <stdlib.h>

#include "ir/custom.h"
#include "ir/infer_util.h"

static rlx_status *check_outputs(const rlx_infer_ctx *c, size_t n_out) {
  if (n_out < 1 || n_out > RLX_MAX_NODE_OUTPUTS)
    FAIL(INVALID_ARGUMENT, "its infer function gave %zu outputs; expected 1 to %d", n_out, RLX_MAX_NODE_OUTPUTS);
  for (size_t i = 0; i < n_out; i++) {
    const rlx_type *t = &c->out[i];
    rlx_type ok;
    rlx_status *st = rlx_type_make(t->dtype, t->rank, t->dims, &ok);
    for (int d = 0; !st && d < t->rank; d++)
      if (t->dims[d] == RLX_DIM_DYNAMIC) st = RLX_ERR(INVALID_ARGUMENT, "dim %d is -1 (use a size or a symbol)", d);
    if (st) return rlx_status_annotate(st, "its infer function gave a bad type for output %zu", i);
  }
  return NULL;
}

rlx_status *rlx_infer_custom(rlx_infer_ctx *c) {
  const char *name = AS("name");
  const rlx_custom_entry *e = rlx_custom_acquire(name);
  if (!e) FAIL(NOT_FOUND, "custom op '%s' is not registered (rlx_custom_op_register)", name);
  const rlx_custom_op_def *d = rlx_custom_def(e);
  rlx_attr *attrs = NULL;
  size_t na = 0, n_out = 0;
  rlx_status *st = NULL;
  if (NIN < d->min_inputs || NIN > d->max_inputs)
    st = RLX_ERR(INVALID_ARGUMENT, "takes %d to %d inputs, got %d", (int)d->min_inputs, (int)d->max_inputs, NIN);
  if (!st) st = rlx_custom_attrs(c->n, &attrs, &na);
  if (!st) st = d->infer(d->user_data, (size_t)NIN, c->in, na, attrs, RLX_MAX_NODE_OUTPUTS, c->out, &n_out);
  if (!st) st = check_outputs(c, n_out);
  if (!st) c->n_out = (uint32_t)n_out;
  free(attrs);
  rlx_custom_release(e);
  return rlx_status_annotate(st, "custom op '%s'", name);
}
