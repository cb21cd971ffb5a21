/* transpose.c: Transpose of a Transpose composed into one, and identity Transposes dropped
 * (rlx/optimize.h). y = T(T(x; p1); p2) has y.dims[i] = x.dims[p1[p2[i]]], so the two are
 * T(x; c) with c[i] = p1[p2[i]] (numpy.transpose semantics; an empty perm reverses the axes). */
#include "opt/opt.h"

/* n's perm, normalized (empty: reversed; negative entries + rank) into p; false if malformed. */
static bool perm_of(const rlx_node *n, int rank, int64_t *p) {
  size_t np;
  const int64_t *q = rlx_node_is(n, "perm", &np);
  if (np && np != (size_t)rank) return false;
  for (int i = 0; i < rank; i++) p[i] = np ? (q[i] < 0 ? q[i] + rank : q[i]) : rank - 1 - i;
  return true;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_TRANSPOSE) return NULL;
  rlx_graph *d = r->rw->dst;
  rlx_value x = rlx_opt_mapped(r, n->in[0]), y;
  int rank = d->types[x].rank;
  int64_t p2[RLX_MAX_RANK], p1[RLX_MAX_RANK], c[RLX_MAX_RANK];
  if (!perm_of(n, rank, p2)) return NULL;
  const rlx_node *t = rlx_opt_def(d, x, RLX_OP_TRANSPOSE);
  bool composed = t && perm_of(t, rank, p1);
  for (int i = 0; i < rank; i++) c[i] = composed ? p1[p2[i]] : p2[i];
  bool identity = true;
  for (int i = 0; i < rank; i++) identity &= c[i] == i;
  if (!composed && !identity) return NULL;
  rlx_value src = composed ? t->in[0] : x;
  if (identity) {
    y = src;
  } else {
    rlx_attr a = RLX_ATTR_IS("perm", (size_t)rank, c);
    RLX_TRY(rlx_graph_add1(d, RLX_OP_TRANSPOSE, n->name, 1, &src, 1, &a, &y));
  }
  rlx_opt_replace(r, n, 0, y);
  *fired = true;
  return NULL;
}

rlx_status *rlx_pass_transpose(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
