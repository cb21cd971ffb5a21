/* match.c: the rule driver and the pattern-matching helpers the passes share (see opt.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"

uint32_t *rlx_opt_uses(const rlx_graph *g) {
  uint32_t *u = calloc(g->n_vals ? g->n_vals : 1, sizeof *u);
  if (!u) return NULL;
  for (size_t k = 0; k < g->n_nodes; k++)
    for (uint32_t i = 0; i < g->nodes[k].n_in; i++) u[g->nodes[k].in[i]]++;
  for (size_t i = 0; i < g->n_outputs; i++) u[g->outputs[i]]++;
  return u;
}

bool rlx_opt_pure(const rlx_node *n) {
  switch (n->op) {
    case RLX_OP_SAMPLE:
    case RLX_OP_CUSTOM:
    case RLX_OP_ASSERT:
      return false;
    default:
      break;
  }
  const char *fam = rlx_op_info_get(n->op)->family;
  /* collectives communicate: their value depends on the other ranks, never fold or merge them */
  if (!strcmp(fam, "collective")) return false;
  for (uint32_t i = 0; i < n->n_attrs; i++)
    if (n->attrs[i].kind == RLX_ATTR_GRAPH) return false;
  return true;
}

const void *rlx_opt_const_data(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx) {
  const rlx_node *n = rlx_opt_producer(g, v);
  if (n->op == RLX_OP_CONSTANT) return n->data ? n->data : (const void *)"";
  if (n->op != RLX_OP_PARAM || !cx) return NULL;
  for (size_t i = 0; i < cx->n_params; i++) {
    if (strcmp(cx->pnames[i], n->name)) continue;
    const rlx_type *a = rlx_tensor_type(cx->pvals[i]), *b = &g->types[v];
    if (a->dtype != b->dtype || a->rank != b->rank || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank)) return NULL;
    return rlx_tensor_numel(cx->pvals[i]) ? rlx_tensor_cdata(cx->pvals[i]) : (const void *)"";
  }
  return NULL;
}

static bool read_f64(rlx_dtype dt, const void *p, int64_t i, double *out) {
  switch (dt) {
    case RLX_DTYPE_F32: *out = ((const float *)p)[i]; return true;
    case RLX_DTYPE_F64: *out = ((const double *)p)[i]; return true;
    case RLX_DTYPE_I64: *out = (double)((const int64_t *)p)[i]; return true;
    case RLX_DTYPE_I32: *out = ((const int32_t *)p)[i]; return true;
    default: return false;
  }
}

bool rlx_opt_const_f64(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx, double **out, int64_t *numel) {
  const void *p = rlx_opt_const_data(g, v, cx);
  int64_t cnt;
  double d;
  const rlx_type *t = &g->types[v];
  if (!p) return false;
  rlx_status *e = rlx_type_numel(t, &cnt);
  if (e) return rlx_status_free(e), false;
  if (cnt && !read_f64(t->dtype, p, 0, &d)) return false;
  double *buf = malloc((size_t)(cnt ? cnt : 1) * sizeof *buf);
  if (!buf) return false;
  for (int64_t i = 0; i < cnt; i++) read_f64(t->dtype, p, i, &buf[i]);
  *out = buf;
  *numel = cnt;
  return true;
}

bool rlx_opt_scalar(const rlx_graph *g, rlx_value v, const rlx_opt_ctx *cx, double *out) {
  const rlx_type *t = &g->types[v];
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] != 1) return false;
  const void *p = rlx_opt_const_data(g, v, cx);
  return p && read_f64(t->dtype, p, 0, out);
}

rlx_status *rlx_opt_const_from_f64(rlx_graph *g, const rlx_type *t, const double *data, rlx_value *out) {
  int64_t cnt;
  RLX_TRY(rlx_type_numel(t, &cnt));
  if (t->dtype != RLX_DTYPE_F32 && t->dtype != RLX_DTYPE_F64) return RLX_ERR(INTERNAL, "constant of dtype %s from doubles", RLX_TYPE_STR(t));
  size_t es = rlx_dtype_size(t->dtype);
  void *buf = malloc((size_t)(cnt ? cnt : 1) * es);
  if (!buf) return RLX_OOM();
  for (int64_t i = 0; i < cnt; i++) {
    if (t->dtype == RLX_DTYPE_F32) ((float *)buf)[i] = (float)data[i];
    else ((double *)buf)[i] = data[i];
  }
  rlx_status *st = rlx_graph_add_constant(g, t, buf, (size_t)cnt * es, out);
  free(buf);
  return st;
}

rlx_status *rlx_opt_scalar_const(rlx_graph *g, rlx_dtype dt, double v, rlx_value *out) {
  rlx_type t = {.dtype = dt};
  unsigned char buf[16];
  switch (dt) {
    case RLX_DTYPE_F32: *(float *)buf = (float)v; break;
    case RLX_DTYPE_F64: *(double *)buf = v; break;
    case RLX_DTYPE_I32: *(int32_t *)buf = (int32_t)v; break;
    case RLX_DTYPE_I64: *(int64_t *)buf = (int64_t)v; break;
    default: return RLX_ERR(INTERNAL, "scalar constant of dtype %s", RLX_TYPE_STR(&t));
  }
  return rlx_graph_add_constant(g, &t, buf, rlx_dtype_size(dt), out);
}

const rlx_node *rlx_opt_def(const rlx_graph *d, rlx_value v, rlx_op op) {
  const rlx_node *n = rlx_opt_producer(d, v);
  return n->op == op ? n : NULL;
}

bool rlx_opt_bin_scalar(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_op op, rlx_value *u, double *c) {
  const rlx_node *n = rlx_opt_def(d, v, op);
  if (!n || !rlx_dtype_is_float(d->types[v].dtype)) return false;
  if (rlx_opt_scalar(d, n->in[1], cx, c) && rlx_type_same(&d->types[n->in[0]], &d->types[v])) return *u = n->in[0], true;
  bool commutes = op == RLX_OP_ADD || op == RLX_OP_MUL;
  if (commutes && rlx_opt_scalar(d, n->in[0], cx, c) && rlx_type_same(&d->types[n->in[1]], &d->types[v])) return *u = n->in[1], true;
  return false;
}

int rlx_opt_affine(const rlx_graph *d, const rlx_opt_ctx *cx, rlx_value v, rlx_value *u, double *a, double *b) {
  double A = 1, B = 0, c; /* v = A z + B */
  int steps = 0;
  for (rlx_value z = v, w;; steps++, z = w) {
    if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_ADD, &w, &c)) B += A * c;
    else if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_SUB, &w, &c)) B -= A * c;
    else if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_MUL, &w, &c)) A *= c;
    else if (rlx_opt_bin_scalar(d, cx, z, RLX_OP_DIV, &w, &c) && c != 0) A /= c;
    else {
      *u = z, *a = A, *b = B;
      return steps;
    }
  }
}

bool rlx_opt_near(double a, double b) { return fabs(a - b) <= 1e-4 * fabs(b) + 1e-7; }

rlx_status *rlx_opt_run_rule(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_opt_rule_fn rule, void *state, rlx_graph **out,
                             bool *changed) {
  rlx_rw rw;
  uint32_t *uses = rlx_opt_uses(g);
  rlx_status *st = uses ? rlx_rw_init(&rw, g) : RLX_OOM();
  if (!uses) rw = (rlx_rw){0};
  rlx_opt_rule_ctx r = {.rw = &rw, .cx = cx, .uses = uses, .state = state};
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    bool fired = false;
    if (n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM && n->op != RLX_OP_CONSTANT) st = rule(&r, n, &fired);
    if (!st && !fired) st = rlx_rw_copy(&rw, n);
  }
  if (!st) st = rlx_rw_finish(&rw, out);
  if (!st) *changed = r.rewrote;
  rlx_rw_free(&rw);
  free(uses);
  return st;
}
