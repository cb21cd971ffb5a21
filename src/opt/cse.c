/* cse.c: common-subexpression elimination (rlx/optimize.h). Nodes are copied in order; a pure
 * node whose op, operands (already deduplicated) and attributes equal an earlier copy's, or a
 * constant with the same type and bytes, reuses that copy's outputs. */
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"

static uint64_t mix(uint64_t h, const void *p, size_t n) { /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return h;
}

static uint64_t attr_hash(uint64_t h, const rlx_attr_val *a) {
  h = mix(h, a->name, strlen(a->name));
  h = mix(h, &a->kind, sizeof a->kind);
  switch (a->kind) {
    case RLX_ATTR_INT: return mix(h, &a->i, sizeof a->i);
    case RLX_ATTR_FLOAT: return mix(h, &a->f, sizeof a->f);
    case RLX_ATTR_INTS: return a->n ? mix(h, a->ints, a->n * sizeof *a->ints) : h;
    case RLX_ATTR_FLOATS: return a->n ? mix(h, a->floats, a->n * sizeof *a->floats) : h;
    case RLX_ATTR_STRING: return a->s ? mix(h, a->s, strlen(a->s)) : h;
    default: return h;
  }
}

static bool attr_eq(const rlx_attr_val *a, const rlx_attr_val *b) {
  if (strcmp(a->name, b->name) || a->kind != b->kind) return false;
  switch (a->kind) {
    case RLX_ATTR_INT: return a->i == b->i;
    case RLX_ATTR_FLOAT: return !memcmp(&a->f, &b->f, sizeof a->f);
    case RLX_ATTR_INTS: return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, a->n * sizeof *a->ints));
    case RLX_ATTR_FLOATS: return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, a->n * sizeof *a->floats));
    case RLX_ATTR_STRING: return !strcmp(a->s ? a->s : "", b->s ? b->s : "");
    default: return false;
  }
}

/* n (a src node, operands mapped through map) against d (a dst node). */
static bool same(const rlx_graph *src, const rlx_node *n, const rlx_value *map, const rlx_graph *dst, const rlx_node *d) {
  if (n->op != d->op || n->n_in != d->n_in || n->n_attrs != d->n_attrs || n->n_out != d->n_out) return false;
  for (uint32_t i = 0; i < n->n_in; i++)
    if (map[n->in[i]] != d->in[i]) return false;
  for (uint32_t i = 0; i < n->n_attrs; i++)
    if (!attr_eq(&n->attrs[i], &d->attrs[i])) return false;
  if (n->op == RLX_OP_CONSTANT) {
    const rlx_type *a = &src->types[n->out0], *b = &dst->types[d->out0];
    if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) return false;
    return n->nbytes == d->nbytes && (!n->nbytes || !memcmp(n->data, d->data, n->nbytes));
  }
  return true;
}

static uint64_t node_hash(const rlx_graph *src, const rlx_node *n, const rlx_value *map) {
  uint64_t h = mix(1469598103934665603ull, &n->op, sizeof n->op);
  for (uint32_t i = 0; i < n->n_in; i++) h = mix(h, &map[n->in[i]], sizeof(rlx_value));
  for (uint32_t i = 0; i < n->n_attrs; i++) h = attr_hash(h, &n->attrs[i]);
  if (n->op == RLX_OP_CONSTANT) {
    const rlx_type *t = &src->types[n->out0];
    h = mix(h, &t->dtype, sizeof t->dtype);
    h = mix(h, t->dims, sizeof(int64_t) * (size_t)t->rank);
    /* the first bytes and the size: equal candidates are compared whole (same) */
    h = mix(h, &n->nbytes, sizeof n->nbytes);
    if (n->nbytes) h = mix(h, n->data, n->nbytes < 64 ? n->nbytes : 64);
  }
  return h;
}

rlx_status *rlx_pass_cse(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  (void)cx;
  size_t cap = 16;
  while (cap < 2 * g->n_nodes) cap *= 2;
  uint32_t *slot = malloc(cap * sizeof *slot); /* dst node index + 1, open addressing */
  uint64_t *hs = malloc(cap * sizeof *hs);
  rlx_rw rw = {0};
  rlx_status *st = slot && hs ? rlx_rw_init(&rw, g) : RLX_OOM();
  if (slot) memset(slot, 0, cap * sizeof *slot);
  bool any = false;
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    bool mergeable = n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM && rlx_opt_pure(n);
    if (!mergeable) {
      st = rlx_rw_copy(&rw, n);
      continue;
    }
    uint64_t h = node_hash(g, n, rw.map);
    size_t i = h & (cap - 1);
    for (; slot[i]; i = (i + 1) & (cap - 1)) {
      const rlx_node *d = &rw.dst->nodes[slot[i] - 1];
      if (hs[i] == h && same(g, n, rw.map, rw.dst, d)) break;
    }
    if (slot[i]) {
      const rlx_node *d = &rw.dst->nodes[slot[i] - 1];
      for (uint32_t o = 0; o < n->n_out; o++) rw.map[n->out0 + o] = d->out0 + o;
      any = true;
      continue;
    }
    st = rlx_rw_copy(&rw, n);
    if (!st) slot[i] = (uint32_t)rw.dst->n_nodes, hs[i] = h;
  }
  if (!st) st = rlx_rw_finish(&rw, out);
  if (!st) *changed = any;
  rlx_rw_free(&rw);
  free(slot);
  free(hs);
  return st;
}
