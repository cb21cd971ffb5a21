/* rewrite.c: building one graph from another node by node (see rewrite.h). */
#include <stdlib.h>
#include <string.h>

#include "opt/rewrite.h"

rlx_status *rlx_rw_init(rlx_rw *rw, const rlx_graph *src) {
  *rw = (rlx_rw){.src = src};
  rw->map = malloc((src->n_vals ? src->n_vals : 1) * sizeof *rw->map);
  if (!rw->map) return RLX_OOM();
  memset(rw->map, 0xff, (src->n_vals ? src->n_vals : 1) * sizeof *rw->map);
  return rlx_graph_create(&rw->dst);
}

void rlx_rw_free(rlx_rw *rw) {
  free(rw->map);
  rlx_graph_free(rw->dst);
  *rw = (rlx_rw){0};
}

void rlx_rw_attrs_release(rlx_attr *a, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i].kind == RLX_ATTR_GRAPH) rlx_graph_free(a[i].graph), a[i].graph = NULL;
}

rlx_status *rlx_rw_attrs(const rlx_node *n, rlx_attr *a) {
  for (uint32_t i = 0; i < n->n_attrs; i++) {
    const rlx_attr_val *v = &n->attrs[i];
    a[i] = (rlx_attr){.name = v->name, .kind = v->kind, .i = v->i, .f = v->f, .n = v->n, .ints = v->ints, .floats = v->floats, .s = v->s};
    if (v->kind != RLX_ATTR_GRAPH) continue;
    rlx_status *st = rlx_graph_clone(v->graph, &a[i].graph);
    if (st) {
      a[i].kind = RLX_ATTR_INT;
      rlx_rw_attrs_release(a, i);
      return st;
    }
  }
  return NULL;
}

rlx_status *rlx_rw_add_like(rlx_graph *dst, const rlx_node *n, size_t n_in, const rlx_value *in, rlx_value *out) {
  rlx_attr a[64];
  if (n->n_attrs > 64) return RLX_ERR(INTERNAL, "rewrite: %u attributes", n->n_attrs);
  RLX_TRY(rlx_rw_attrs(n, a));
  rlx_status *st = rlx_graph_add1(dst, n->op, n->name, n_in, in, n->n_attrs, a, out);
  if (st) rlx_rw_attrs_release(a, n->n_attrs);
  return st;
}

rlx_status *rlx_rw_copy(rlx_rw *rw, const rlx_node *n) {
  const rlx_graph *s = rw->src;
  rlx_value out[RLX_MAX_NODE_OUTPUTS];
  const rlx_type *t = &s->types[n->out0];
  if (n->op == RLX_OP_INPUT) {
    RLX_TRY(rlx_graph_add_input(rw->dst, n->name, t, out));
  } else if (n->op == RLX_OP_PARAM) {
    RLX_TRY(rlx_graph_add_param(rw->dst, n->name, t, out));
  } else if (n->op == RLX_OP_CONSTANT) {
    RLX_TRY(rlx_graph_add_constant_of(rw->dst, s, n, out));
  } else {
    rlx_value in[256];
    for (uint32_t i = 0; i < n->n_in; i++) {
      in[i] = rw->map[n->in[i]];
      if (in[i] == RLX_RW_NONE) return RLX_ERR(INTERNAL, "rewrite: input %u of %s is not built", i, rlx_op_name(n->op));
    }
    rlx_attr a[64];
    if (n->n_attrs > 64) return RLX_ERR(INTERNAL, "rewrite: %u attributes", n->n_attrs);
    RLX_TRY(rlx_rw_attrs(n, a));
    size_t nout = 0;
    rlx_status *st = rlx_graph_add(rw->dst, n->op, n->name, n->n_in, in, n->n_attrs, a, RLX_MAX_NODE_OUTPUTS, out, &nout);
    if (st) {
      rlx_rw_attrs_release(a, n->n_attrs);
      return st;
    }
    if (nout != n->n_out) return RLX_ERR(INTERNAL, "rewrite: %s gave %zu outputs, not %u", rlx_op_name(n->op), nout, n->n_out);
  }
  for (uint32_t i = 0; i < n->n_out; i++) rw->map[n->out0 + i] = out[i];
  return NULL;
}

rlx_status *rlx_rw_finish(rlx_rw *rw, rlx_graph **out) {
  const rlx_graph *s = rw->src;
  if (s->n_outputs) {
    rlx_value *o = malloc(s->n_outputs * sizeof *o);
    if (!o) return RLX_OOM();
    rlx_status *st = NULL;
    for (size_t i = 0; !st && i < s->n_outputs; i++)
      if ((o[i] = rw->map[s->outputs[i]]) == RLX_RW_NONE) st = RLX_ERR(INTERNAL, "rewrite: output %zu is not built", i);
    if (!st) st = rlx_graph_set_outputs(rw->dst, s->n_outputs, o);
    free(o);
    for (size_t i = 0; !st && i < s->n_outputs; i++) st = rlx_graph_set_output_name(rw->dst, i, s->output_names[i]);
    RLX_TRY(st);
  }
  *out = rw->dst;
  rw->dst = NULL;
  return NULL;
}

rlx_status *rlx_graph_clone(const rlx_graph *g, rlx_graph **out) {
  rlx_rw rw;
  rlx_status *st = rlx_rw_init(&rw, g);
  for (size_t k = 0; !st && k < g->n_nodes; k++) st = rlx_rw_copy(&rw, &g->nodes[k]);
  if (!st) st = rlx_rw_finish(&rw, out);
  rlx_rw_free(&rw);
  return st;
}

void rlx_graph_mark_live(const rlx_graph *g, size_t n, const rlx_value *roots, bool *live) {
  for (size_t i = 0; i < n; i++) live[g->val_node[roots[i]]] = true;
  for (size_t k = g->n_nodes; k-- > 0;) {
    if (!live[k]) continue;
    const rlx_node *nd = &g->nodes[k];
    for (uint32_t i = 0; i < nd->n_in; i++) live[g->val_node[nd->in[i]]] = true;
  }
}
