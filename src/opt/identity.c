/* identity.c: view ops that return their input unchanged dropped, and a Reshape of a Reshape
 * composed into one (rlx/optimize.h). Reshape or Expand to the input's own shape, Narrow over a
 * whole axis and Slice with unit steps whose output keeps the input's shape are the identity. Exporters leave these behind (squeeze then unsqueeze, full-range
 * slices, an LSTM's single direction narrowed out); each would otherwise be a node of every lazy
 * run's MLX graph (Silero VAD: 15 of 57 lowered nodes). Reshape semantics make the composition
 * exact: row-major, explicit dims, symbols bound with the inputs, so Reshape(Reshape(x; a); b)
 * is Reshape(x; b). */
#include "opt/opt.h"

/* A Slice whose steps are all 1 (absent: 1); with the output's shape equal to the input's it is
 * the identity (a negative step could keep the shape and reverse the elements). */
static bool unit_steps(const rlx_node *n) {
  size_t ns;
  const int64_t *st = rlx_node_is(n, "steps", &ns);
  for (size_t i = 0; st && i < ns; i++)
    if (st[i] != 1) return false;
  return true;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_RESHAPE && n->op != RLX_OP_EXPAND && n->op != RLX_OP_NARROW && n->op != RLX_OP_SLICE) return NULL;
  rlx_graph *d = r->rw->dst;
  const rlx_type *to = &r->rw->src->types[n->out0];
  rlx_value x = rlx_opt_mapped(r, n->in[0]);
  const rlx_node *t = n->op == RLX_OP_RESHAPE ? rlx_opt_def(d, x, RLX_OP_RESHAPE) : NULL;
  if (t && rlx_type_same(&d->types[t->in[0]], to)) { /* a Reshape back to the first's input */
    rlx_opt_replace(r, n, 0, t->in[0]);
    *fired = true;
    return NULL;
  }
  if (t) {
    rlx_attr a[1];
    if (n->n_attrs != 1) return NULL;
    RLX_TRY(rlx_rw_attrs(n, a));
    rlx_value src = t->in[0], y;
    RLX_TRY(rlx_graph_add1(d, RLX_OP_RESHAPE, n->name, 1, &src, 1, a, &y));
    rlx_opt_replace(r, n, 0, y);
    *fired = true;
    return NULL;
  }
  if (!rlx_type_same(&d->types[x], to) || (n->op == RLX_OP_SLICE && !unit_steps(n))) return NULL;
  rlx_opt_replace(r, n, 0, x);
  *fired = true;
  return NULL;
}

rlx_status *rlx_pass_identity(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
