/* import_ops_control.c: ONNX control flow. If -> rlx If (branch sub-graphs with captures; a
 * condition known at import picks its branch inline; a branch that cannot be typed is left out
 * under a run-time Assert); Scan (opset 8 and 9+) -> rlx Scan; Loop
 * -> unrolled at import, one inline copy of the body per iteration (so each iteration's index is a
 * constant that folds into Slice starts and such), with the run-time condition frozen by Where.
 * Semantics follow the ONNX operator documentation (If-11, Loop-11/13/16, Scan-8/9/11/16). */
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

static const Onnx__GraphProto *graph_attr(const Onnx__NodeProto *n, const char *name) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  return a ? a->g : NULL;
}

static const char *out_name(const Onnx__GraphProto *g, size_t i) { return g->output[i]->name ? g->output[i]->name : ""; }
static const char *in_name(const Onnx__GraphProto *g, size_t i) { return g->input[i]->name ? g->input[i]->name : ""; }

/* Defines `name` in I as the view v of a scope about to be freed (its data is copied). */
static rlx_status *define_copy(rlx_imp *I, const char *name, imp_val v) {
  v.owns_data = false;
  if (v.data) {
    rlx_tensor *t;
    RLX_TRY(rlx_tensor_copy(v.data, &t));
    v.data = t;
    v.owns_data = true;
  }
  rlx_status *st = imp_define(I, name, v);
  if (st && v.owns_data) rlx_tensor_free(v.data);
  return st;
}

/* The graph value of view v in I's graph. */
static rlx_status *view_value(rlx_imp *I, const imp_val *v, rlx_value *out) {
  if (v->has_v) return *out = v->v, NULL;
  return imp_tensor_const(I, v->data, out);
}

/* A borrowed copy of a scope entry. */
static imp_val view(const imp_val *v) {
  imp_val c = *v;
  c.owns_data = false;
  return c;
}

static const rlx_type *view_type(rlx_imp *I, const imp_val *v) { return v->has_v ? imp_type(I, v->v) : rlx_tensor_type(v->data); }

/* Stacks vals[0..cnt) (one type) on a new axis 0, in Concat chunks of at most 256. */
static rlx_status *stack(rlx_imp *I, const Onnx__NodeProto *n, rlx_value *vals, size_t cnt, rlx_value *out) {
  rlx_type t = *imp_type(I, vals[0]); /* a copy: adding nodes moves the graph's types */
  int64_t d[RLX_MAX_RANK] = {1};
  if (t.rank == RLX_MAX_RANK) IMP_FAIL(UNIMPLEMENTED, "stacking %s would exceed rank %d", RLX_TYPE_STR(&t), RLX_MAX_RANK);
  memcpy(d + 1, t.dims, sizeof(int64_t) * (size_t)t.rank);
  for (size_t i = 0; i < cnt; i++) RLX_TRY(imp_reshape(I, n, vals[i], t.rank + 1, d, &vals[i]));
  rlx_attr ax = RLX_ATTR_I("axis", 0);
  while (cnt > 1) {
    size_t m = 0;
    for (size_t i = 0; i < cnt; i += 256, m++) {
      size_t k = cnt - i < 256 ? cnt - i : 256;
      if (k == 1) vals[m] = vals[i];
      else RLX_TRY(imp_add(I, n, RLX_OP_CONCAT, k, vals + i, 1, &ax, &vals[m]));
    }
    cnt = m;
  }
  return *out = vals[0], NULL;
}

/* ---- If ---- */

/* Imports an If branch into sub-graph scope S (its captures declared) and sets g's outputs. */
static rlx_status *branch(rlx_imp *S, const Onnx__GraphProto *gp, rlx_graph *g) {
  RLX_TRY(imp_body(S, gp));
  if (!gp->n_output) IMP_FAIL(INVALID_ARGUMENT, "a branch has no outputs");
  rlx_value *outs = malloc(gp->n_output * sizeof *outs);
  if (!outs) return RLX_OOM();
  rlx_status *st = NULL;
  for (size_t i = 0; !st && i < gp->n_output; i++) st = imp_value(S, out_name(gp, i), &outs[i]);
  if (!st) st = rlx_graph_set_outputs(g, gp->n_output, outs);
  free(outs);
  return st;
}

/* A branch chosen at import time, imported inline. With `guard` (a bool graph value: cond, or
 * Not(cond) for else_branch), the outputs computed at run time pass through one Assert of it whose
 * message is `why`, so a run that would take the other branch fails instead of going on. */
static rlx_status *if_inline(rlx_imp *I, const Onnx__NodeProto *n, const Onnx__GraphProto *gp, const rlx_value *guard, const char *why) {
  rlx_imp S;
  imp_scope_init(&S, I, I->g);
  rlx_status *st = imp_body(&S, gp);
  size_t cnt = n->n_output < gp->n_output ? n->n_output : gp->n_output, ng = 0;
  imp_val *v = calloc(cnt ? cnt : 1, sizeof *v);
  rlx_value *in = malloc((2 * cnt + 1) * sizeof *in), *outs = in ? in + cnt + 1 : NULL; /* the Assert's operands, results */
  if (!st && (!v || !in)) st = RLX_OOM();
  for (size_t i = 0; !st && i < cnt; i++) {
    const imp_val *o = imp_lookup(&S, out_name(gp, i));
    if (!o) st = RLX_ERR(INVALID_ARGUMENT, "branch output '%s' is not defined", out_name(gp, i));
    else v[i] = view(o);
    if (!st && guard && o->has_v && n->output[i][0]) in[1 + ng++] = o->v;
  }
  if (!st && ng) { /* the guarded outputs, in order, become the Assert's */
    rlx_attr m = RLX_ATTR_S("message", why);
    in[0] = *guard;
    st = imp_addn(I, n, RLX_OP_ASSERT, ng + 1, in, 1, &m, ng, outs, NULL);
    for (size_t i = 0, k = 0; !st && i < cnt; i++)
      if (v[i].has_v && n->output[i][0]) v[i].v = outs[k++];
  }
  for (size_t i = 0; !st && i < cnt; i++)
    if (n->output[i][0]) st = define_copy(I, n->output[i], v[i]);
  free(v);
  free(in);
  imp_scope_free(&S);
  return st;
}

/* Imports the branch of If n that cond (true or false) picks, guarded by an Assert that cond has
 * that value at run time (if_inline); `why` says why the other branch was left out. */
static rlx_status *if_guarded(rlx_imp *I, const Onnx__NodeProto *n, const Onnx__GraphProto *gp, bool cond, const char *why) {
  rlx_value c;
  RLX_TRY(imp_in(I, n, 0, &c));
  if (imp_type(I, c)->dtype != RLX_DTYPE_BOOL) IMP_FAIL(INVALID_ARGUMENT, "cond must be bool, got %s", RLX_TYPE_STR(imp_type(I, c)));
  if (!cond) RLX_TRY(imp_add(I, n, RLX_OP_NOT, 1, &c, 0, NULL, &c));
  char msg[512];
  snprintf(msg, sizeof msg, "If '%s' takes its %s at run time, which was left out at import: %s", imp_node_label(n),
           cond ? "else_branch" : "then_branch", why);
  return if_inline(I, n, gp, &c, msg);
}

static rlx_status *if_both(rlx_imp *I, const Onnx__NodeProto *n, const Onnx__GraphProto *gt, const Onnx__GraphProto *ge);

static rlx_status *map_if(rlx_imp *I, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *gt = graph_attr(n, "then_branch"), *ge = graph_attr(n, "else_branch");
  if (!gt || !ge) IMP_FAIL(INVALID_ARGUMENT, "If needs the graph attributes then_branch and else_branch");
  if (gt->n_output != ge->n_output) IMP_FAIL(INVALID_ARGUMENT, "then_branch has %zu outputs, else_branch %zu", gt->n_output, ge->n_output);
  const imp_val *c = imp_has(n, 0) ? imp_lookup(I, n->input[0]) : NULL;
  if (c && c->data && !c->is_input) {
    if (rlx_tensor_numel(c->data) != 1) IMP_FAIL(INVALID_ARGUMENT, "cond has %lld elements; it must have one", (long long)rlx_tensor_numel(c->data));
    return if_inline(I, n, rlx_tensor_get_f64(c->data, 0) != 0 ? gt : ge, NULL, NULL);
  }
  rlx_status *st = if_both(I, n, gt, ge);
  if (!st || rlx_status_code_of(st) == RLX_STATUS_RESOURCE_EXHAUSTED || !imp_has(n, 0)) return st;
  /* Both branches could not be imported for these shapes (ONNX runs only the taken one, so the
   * other may not type-check). When cond follows from provided input values, import just the
   * branch it takes: the graph is then specialized to those values (rlx_onnx_options_set_input_value),
   * and a run whose inputs take the other branch fails on the guard. Otherwise the one branch that
   * imports alone, guarded likewise. */
  const rlx_tensor *cv = NULL;
  rlx_status *e = imp_eval(I, n->input[0], &cv);
  if (!e && cv && rlx_tensor_numel(cv) == 1) {
    rlx_status_free(st);
    bool t = rlx_tensor_get_f64(cv, 0) != 0;
    return if_guarded(I, n, t ? gt : ge, t, "the graph was specialized to the input values given to the import");
  }
  rlx_status_free(e);
  char why[400];
  snprintf(why, sizeof why, "it does not import for the given input shapes (%s)", rlx_status_message(st));
  for (int b = 0; b < 2; b++) {
    e = if_guarded(I, n, b ? ge : gt, !b, why);
    if (!e) {
      rlx_status_free(st);
      return NULL;
    }
    if (rlx_status_code_of(e) == RLX_STATUS_RESOURCE_EXHAUSTED) {
      rlx_status_free(st);
      return e;
    }
    rlx_status_free(e);
  }
  return st;
}

/* If with a run-time cond: both branches become sub-graphs of an rlx If node. */
static rlx_status *if_both(rlx_imp *I, const Onnx__NodeProto *n, const Onnx__GraphProto *gt, const Onnx__GraphProto *ge) {
  rlx_graph *g[2] = {NULL, NULL};
  rlx_imp S[2];
  const Onnx__GraphProto *gp[2] = {gt, ge};
  rlx_status *st = NULL;
  for (int b = 0; b < 2; b++) {
    imp_scope_init(&S[b], I, NULL);
    if (!st) st = rlx_graph_create(&g[b]);
    S[b].g = g[b];
    /* both branches take the union of their captures, in one order */
    for (int k = 0; !st && k < 2; k++) st = imp_capture_free(&S[b], gp[k]);
  }
  for (int b = 0; !st && b < 2; b++) st = rlx_status_annotate(branch(&S[b], gp[b], g[b]), b ? "else_branch" : "then_branch");
  if (!st && S[0].n_captures != S[1].n_captures) st = RLX_ERR(INTERNAL, "the branches captured different values");
  size_t nc = st ? 0 : S[0].n_captures, nout = gt->n_output;
  rlx_value *in = malloc((nc + 1) * sizeof *in), *outs = malloc((nout ? nout : 1) * sizeof *outs);
  if (!st && (!in || !outs)) st = RLX_OOM();
  if (!st) st = imp_in(I, n, 0, &in[0]);
  for (size_t i = 0; !st && i < nc; i++) st = imp_value(I, S[0].captures[i], &in[1 + i]);
  for (size_t i = 0; !st && i < nout; i++) {
    const rlx_type *a = rlx_graph_value_type(g[0], rlx_graph_output_value(g[0], i)), *b = rlx_graph_value_type(g[1], rlx_graph_output_value(g[1], i));
    if (!rlx_type_same(a, b)) st = RLX_ERR(UNIMPLEMENTED, "the branches give output %zu different types (%s, %s); rlx's If needs one type", i, RLX_TYPE_STR(a), RLX_TYPE_STR(b));
  }
  if (!st) {
    rlx_attr a[2] = {RLX_ATTR_G("then_branch", g[0]), RLX_ATTR_G("else_branch", g[1])};
    st = imp_addn(I, n, RLX_OP_IF, nc + 1, in, 2, a, nout, outs, NULL);
    if (!st) g[0] = g[1] = NULL; /* moved into the node */
  }
  for (size_t i = 0; !st && i < nout; i++) st = imp_out(I, n, i, outs[i]);
  free(in);
  free(outs);
  for (int b = 0; b < 2; b++) {
    imp_scope_free(&S[b]);
    rlx_graph_free(g[b]);
  }
  return st;
}

/* ---- Loop ---- */

/* Scalar input k when known at import time: a constant or, when `need` (the unrolling depends on
 * it), a provided input value or a value computed from those (imp_eval). *known false otherwise. */
static rlx_status *loop_scalar(rlx_imp *I, const Onnx__NodeProto *n, size_t k, bool need, bool *known, int64_t *out) {
  const imp_val *v = imp_lookup(I, n->input[k]);
  if (!v) IMP_FAIL(INVALID_ARGUMENT, "input '%s' is not defined", n->input[k]);
  const rlx_tensor *d = v->data && !v->is_input ? v->data : NULL;
  if (!d && need) RLX_TRY(imp_eval(I, n->input[k], &d));
  *known = d != NULL;
  if (d && rlx_tensor_numel(d) != 1) IMP_FAIL(INVALID_ARGUMENT, "input %zu must have one element", k);
  if (d) *out = rlx_tensor_dtype(d) == RLX_DTYPE_I64 ? *(const int64_t *)rlx_tensor_cdata(d) : imp_tensor_i64(d, 0);
  return NULL;
}

/* Loop state while unrolling: the carried values (views; their data lives in iteration scopes
 * kept until the end) and whether the loop is still running: known at import (go), or only at
 * run time (active: a bool graph value). */
typedef struct loop_state {
  imp_val *cur;
  bool go, dynamic;
  rlx_value active;
} loop_state;

/* One iteration in scope S: the body sees iteration t, cond true (it only runs while cond holds)
 * and the carried values; afterwards the carried values and the running state advance. */
static rlx_status *loop_step(rlx_imp *S, const Onnx__NodeProto *n, const Onnx__GraphProto *body, size_t nv, int64_t t,
                             loop_state *ls, imp_val *scan) {
  rlx_tensor *it, *yes;
  unsigned char one = 1;
  RLX_TRY(rlx_tensor_create(RLX_DTYPE_I64, 0, NULL, &t, sizeof t, &it));
  rlx_status *st = imp_define(S, in_name(body, 0), (imp_val){.data = it, .owns_data = true});
  if (st) rlx_tensor_free(it);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_BOOL, 0, NULL, &one, 1, &yes);
  if (!st && (st = imp_define(S, in_name(body, 1), (imp_val){.data = yes, .owns_data = true}))) rlx_tensor_free(yes);
  for (size_t j = 0; !st && j < nv; j++) st = imp_define(S, in_name(body, 2 + j), ls->cur[j]);
  if (!st) st = imp_body(S, body);
  for (size_t i = 0; !st && i < body->n_output; i++)
    if (!imp_lookup(S, out_name(body, i))) st = RLX_ERR(INVALID_ARGUMENT, "body output '%s' is not defined", out_name(body, i));
  if (st) return st;
  const imp_val *c = imp_lookup(S, out_name(body, 0));
  for (size_t k = 0; k + 1 + nv < body->n_output; k++) scan[k] = view(imp_lookup(S, out_name(body, 1 + nv + k)));
  if (!ls->dynamic && c->data && !c->is_input) {
    for (size_t j = 0; j < nv; j++) ls->cur[j] = view(imp_lookup(S, out_name(body, 1 + j)));
    ls->go = rlx_tensor_get_f64(c->data, 0) != 0;
    return NULL;
  }
  /* Run-time condition: the values advance only while active; active &= cond. */
  if (body->n_output > 1 + nv)
    IMP_FAIL(UNIMPLEMENTED, "Loop with scan outputs whose condition is only known at run time (the output length would depend on data)");
  rlx_value cv;
  RLX_TRY(imp_value(S, out_name(body, 0), &cv));
  for (size_t j = 0; j < nv; j++) {
    const imp_val *o = imp_lookup(S, out_name(body, 1 + j));
    const rlx_type *a = view_type(S, o), *b = view_type(S, &ls->cur[j]);
    if (!rlx_type_same(a, b))
      IMP_FAIL(UNIMPLEMENTED, "Loop-carried value %zu changes type (%s -> %s) under a run-time condition", j, RLX_TYPE_STR(b), RLX_TYPE_STR(a));
    rlx_value x, y;
    if (ls->dynamic) {
      RLX_TRY(view_value(S, o, &x));
      RLX_TRY(view_value(S, &ls->cur[j], &y));
      RLX_TRY(imp_select(S, n, ls->active, x, y, &x));
      ls->cur[j] = (imp_val){.v = x, .has_v = true};
    } else {
      ls->cur[j] = view(o);
    }
  }
  if (ls->dynamic) RLX_TRY(imp_bin(S, n, RLX_OP_AND, ls->active, cv, &ls->active));
  else ls->active = cv;
  ls->dynamic = true;
  return NULL;
}

/* Loop(M, cond, v_initial...) -> (v_final..., scan outputs...), unrolled at import: M (when
 * given) must be known at import; the body runs while cond holds and i < M. */
static rlx_status *map_loop(rlx_imp *I, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *body = graph_attr(n, "body");
  if (!body) IMP_FAIL(INVALID_ARGUMENT, "Loop needs the graph attribute body");
  size_t nv = n->n_input >= 2 ? n->n_input - 2 : 0;
  if (body->n_input != 2 + nv || body->n_output < 1 + nv)
    IMP_FAIL(INVALID_ARGUMENT, "the body has %zu inputs and %zu outputs for %zu loop-carried values", body->n_input, body->n_output, nv);
  size_t nk = body->n_output - 1 - nv;
  bool has_m = imp_has(n, 0), m_known, c_known = true;
  int64_t m = INT64_MAX, c0 = 1;
  if (has_m) RLX_TRY(loop_scalar(I, n, 0, true, &m_known, &m));
  if (imp_has(n, 1)) RLX_TRY(loop_scalar(I, n, 1, nk > 0, &c_known, &c0));
  loop_state ls = {.cur = calloc(nv ? nv : 1, sizeof(imp_val)), .go = c0 != 0};
  rlx_imp *scopes = calloc(RLX_ONNX_MAX_UNROLL, sizeof *scopes);
  imp_val *scan = calloc((size_t)RLX_ONNX_MAX_UNROLL * (nk ? nk : 1), sizeof *scan);
  rlx_value *tmp = malloc(sizeof(rlx_value) * RLX_ONNX_MAX_UNROLL);
  rlx_status *st = ls.cur && scopes && scan && tmp ? NULL : RLX_OOM();
  for (size_t j = 0; !st && j < nv; j++) {
    const imp_val *v = imp_lookup(I, n->input[2 + j]);
    if (!v) st = RLX_ERR(INVALID_ARGUMENT, "input '%s' is not defined", n->input[2 + j]);
    else ls.cur[j] = view(v);
  }
  if (!st && !c_known) { /* the initial condition is a run-time value */
    ls.dynamic = true;
    st = imp_in(I, n, 1, &ls.active);
  }
  int64_t t = 0;
  for (; !st && ls.go && t < m; t++) {
    if (ls.dynamic && m > RLX_ONNX_MAX_UNROLL) { /* a run-time condition needs every iteration up to the trip count */
      st = RLX_ERR(UNIMPLEMENTED, "Loop whose condition is known only at run time needs a trip count of at most %d (rlx "
                                  "unrolls loops at import)%s", RLX_ONNX_MAX_UNROLL, has_m ? "" : "; it has none");
      break;
    }
    if (t == RLX_ONNX_MAX_UNROLL) {
      st = RLX_ERR(UNIMPLEMENTED, "Loop still running after %d iterations at import (rlx unrolls loops at import)", RLX_ONNX_MAX_UNROLL);
      break;
    }
    imp_scope_init(&scopes[t], I, I->g);
    st = loop_step(&scopes[t], n, body, nv, t, &ls, scan + (size_t)t * nk);
  }
  for (size_t j = 0; !st && j < nv; j++)
    if (n->n_output > j && n->output[j][0]) st = define_copy(I, n->output[j], ls.cur[j]);
  for (size_t k = 0; !st && k < nk; k++) {
    if (n->n_output <= nv + k || !n->output[nv + k][0]) continue;
    if (t == 0) {
      st = RLX_ERR(UNIMPLEMENTED, "Loop with scan outputs that runs no iteration (the outputs' types are unknown)");
      break;
    }
    for (int64_t s = 0; !st && s < t; s++) st = view_value(I, &scan[(size_t)s * nk + k], &tmp[s]);
    rlx_value y;
    if (!st) st = stack(I, n, tmp, (size_t)t, &y);
    if (!st) st = imp_out(I, n, nv + k, y);
  }
  for (int64_t s = 0; s < t; s++) imp_scope_free(&scopes[s]);
  free(scopes);
  free(scan);
  free(tmp);
  free(ls.cur);
  return st;
}

/* ---- Scan ---- */

/* v reversed along axis 0. */
static rlx_status *reverse0(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_value *out) {
  rlx_attr a[4] = {RLX_ATTR_IS("starts", 1, ((int64_t[]){-1})), RLX_ATTR_IS("ends", 1, ((int64_t[]){INT64_MIN})),
                   RLX_ATTR_IS("axes", 1, ((int64_t[]){0})), RLX_ATTR_IS("steps", 1, ((int64_t[]){-1}))};
  return imp_add(I, n, RLX_OP_SLICE, 1, &v, 4, a, out);
}

/* v with axis `from` moved to position `to` (the others keep their order). */
static rlx_status *move_axis(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int from, int to, rlx_value *out) {
  int r = imp_type(I, v)->rank;
  if (from == to) return *out = v, NULL;
  int64_t perm[RLX_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++) {
    if (k == from) k++;
    perm[i] = i == to ? from : k++;
  }
  return imp_transpose(I, n, v, r, perm, out);
}

/* rlx Scan over states[0..ns) and xs[0..nx) (each scanned along axis 0, forward): the ONNX body
 * becomes the sub-graph (states, captures, xs) -> (states, scan outputs). outs gets
 * body->n_output values. */
static rlx_status *scan_core(rlx_imp *I, const Onnx__NodeProto *n, const Onnx__GraphProto *body, size_t ns, const rlx_value *states,
                             size_t nx, const rlx_value *xs, rlx_value *outs) {
  if (body->n_input != ns + nx || body->n_output < ns)
    IMP_FAIL(INVALID_ARGUMENT, "the body has %zu inputs and %zu outputs for %zu states and %zu scan inputs", body->n_input, body->n_output,
             ns, nx);
  int64_t len = -1;
  for (size_t j = 0; j < nx; j++) {
    const rlx_type *t = imp_type(I, xs[j]);
    if (t->rank < 1 || t->dims[0] < 0) IMP_FAIL(UNIMPLEMENTED, "scan input %zu is %s: the scanned axis needs a static length", j, RLX_TYPE_STR(t));
    if (len >= 0 && t->dims[0] != len) IMP_FAIL(INVALID_ARGUMENT, "scan inputs have lengths %lld and %lld", (long long)len, (long long)t->dims[0]);
    len = t->dims[0];
  }
  if (len < 0) IMP_FAIL(INVALID_ARGUMENT, "Scan needs at least one scan input");
  rlx_graph *g = NULL;
  rlx_imp S;
  imp_scope_init(&S, I, NULL);
  rlx_status *st = rlx_graph_create(&g);
  S.g = g;
  rlx_value v;
  for (size_t i = 0; !st && i < ns; i++) {
    st = rlx_graph_add_input(g, in_name(body, i), imp_type(I, states[i]), &v);
    if (!st) st = imp_define(&S, in_name(body, i), (imp_val){.v = v, .has_v = true});
  }
  if (!st) st = imp_capture_free(&S, body);
  size_t nc = S.n_captures;
  for (size_t j = 0; !st && j < nx; j++) {
    rlx_type t = *imp_type(I, xs[j]);
    t.rank--;
    memmove(t.dims, t.dims + 1, sizeof(int64_t) * (size_t)t.rank);
    st = rlx_graph_add_input(g, in_name(body, ns + j), &t, &v);
    if (!st) st = imp_define(&S, in_name(body, ns + j), (imp_val){.v = v, .has_v = true});
  }
  if (!st) st = imp_body(&S, body);
  if (!st && S.n_captures != nc) st = RLX_ERR(INTERNAL, "the body captured a value late");
  for (size_t i = 0; !st && i < body->n_output; i++) st = imp_value(&S, out_name(body, i), &outs[i]);
  if (!st) st = rlx_graph_set_outputs(g, body->n_output, outs);
  rlx_value *in = st ? NULL : malloc((ns + nc + nx) * sizeof *in);
  if (!st && !in) st = RLX_OOM();
  if (!st) {
    memcpy(in, states, ns * sizeof *in);
    for (size_t i = 0; !st && i < nc; i++) st = imp_value(I, S.captures[i], &in[ns + i]);
    memcpy(in + ns + nc, xs, nx * sizeof *in);
  }
  if (!st) {
    rlx_attr a[4] = {RLX_ATTR_G("body", g), RLX_ATTR_I("length", len), RLX_ATTR_I("num_bcast", (int64_t)nc),
                     RLX_ATTR_I("num_xs", (int64_t)nx)};
    st = imp_addn(I, n, RLX_OP_SCAN, ns + nc + nx, in, 4, a, body->n_output, outs, NULL);
    if (!st) g = NULL; /* moved into the node */
  }
  free(in);
  imp_scope_free(&S);
  rlx_graph_free(g);
  return st;
}

static int64_t attr_at(const int64_t *v, size_t cnt, size_t i) { return i < cnt ? v[i] : 0; }

/* Scan-9+: N states, then num_scan_inputs scan inputs (scan_input_axes/directions); scan outputs
 * accumulate along scan_output_axes in scan_output_directions. */
static rlx_status *map_scan(rlx_imp *I, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *body = graph_attr(n, "body");
  int64_t m = imp_attr_i(n, "num_scan_inputs", -1);
  if (!body || m < 1 || (size_t)m > n->n_input) IMP_FAIL(INVALID_ARGUMENT, "Scan needs a body and num_scan_inputs in [1, %zu]", n->n_input);
  size_t nx = (size_t)m, ns = n->n_input - nx, nia, nid, noa, nod;
  const int64_t *ia = imp_attr_ints(n, "scan_input_axes", &nia), *id = imp_attr_ints(n, "scan_input_directions", &nid);
  const int64_t *oa = imp_attr_ints(n, "scan_output_axes", &noa), *od = imp_attr_ints(n, "scan_output_directions", &nod);
  if (n->n_input > 256) IMP_FAIL(UNIMPLEMENTED, "Scan with %zu inputs", n->n_input);
  rlx_value in[256];
  for (size_t i = 0; i < n->n_input; i++) RLX_TRY(imp_in(I, n, i, &in[i]));
  for (size_t j = 0; j < nx; j++) {
    int64_t r = imp_type(I, in[ns + j])->rank, a = attr_at(ia, nia, j);
    if (a < -r || a >= r) IMP_FAIL(INVALID_ARGUMENT, "scan_input_axes[%zu] = %lld for rank %lld", j, (long long)a, (long long)r);
    RLX_TRY(move_axis(I, n, in[ns + j], (int)(a < 0 ? a + r : a), 0, &in[ns + j]));
    if (attr_at(id, nid, j)) RLX_TRY(reverse0(I, n, in[ns + j], &in[ns + j]));
  }
  rlx_value *outs = malloc(sizeof(rlx_value) * (body->n_output ? body->n_output : 1));
  if (!outs) return RLX_OOM();
  rlx_status *st = scan_core(I, n, body, ns, in, nx, in + ns, outs);
  for (size_t k = 0; !st && k + ns < body->n_output; k++) {
    rlx_value y = outs[ns + k];
    int64_t r = imp_type(I, y)->rank, b = attr_at(oa, noa, k);
    if (b < -r || b >= r) st = RLX_ERR(INVALID_ARGUMENT, "scan_output_axes[%zu] = %lld for rank %lld", k, (long long)b, (long long)r);
    if (!st && attr_at(od, nod, k)) st = reverse0(I, n, y, &y);
    if (!st) st = move_axis(I, n, y, 0, (int)(b < 0 ? b + r : b), &outs[ns + k]);
  }
  for (size_t i = 0; !st && i < body->n_output; i++) st = imp_out(I, n, i, outs[i]);
  free(outs);
  return st;
}

/* Scan-8: a leading batch axis on every input (scan inputs scan axis 1) and per-input
 * directions; each batch element runs its own scan and the outputs are stacked. sequence_lens is
 * UNIMPLEMENTED. */
static rlx_status *map_scan8(rlx_imp *I, const Onnx__NodeProto *n) {
  const Onnx__GraphProto *body = graph_attr(n, "body");
  int64_t m = imp_attr_i(n, "num_scan_inputs", -1);
  if (!body || m < 1 || (size_t)m + 1 > n->n_input) IMP_FAIL(INVALID_ARGUMENT, "Scan needs a body and num_scan_inputs in [1, %zu]", n->n_input - 1);
  if (imp_has(n, 0)) IMP_FAIL(UNIMPLEMENTED, "Scan-8 with sequence_lens");
  size_t nx = (size_t)m, ns = n->n_input - 1 - nx, nd, nout = body->n_output;
  const int64_t *dirs = imp_attr_ints(n, "directions", &nd);
  if (n->n_input > 256) IMP_FAIL(UNIMPLEMENTED, "Scan with %zu inputs", n->n_input);
  rlx_value in[256];
  for (size_t i = 1; i < n->n_input; i++) RLX_TRY(imp_in(I, n, i, &in[i - 1]));
  int64_t batch = imp_type(I, in[0])->rank < 1 ? -1 : imp_type(I, in[0])->dims[0];
  if (batch < 1 || batch > RLX_ONNX_MAX_UNROLL)
    IMP_FAIL(UNIMPLEMENTED, "Scan-8 needs a static batch dim (input 1 is %s)", RLX_TYPE_STR(imp_type(I, in[0])));
  rlx_value *res = malloc(sizeof(rlx_value) * (size_t)batch * (nout ? nout : 1)), *outs = malloc(sizeof(rlx_value) * (nout ? nout : 1));
  rlx_status *st = res && outs ? NULL : RLX_OOM();
  for (int64_t b = 0; !st && b < batch; b++) {
    rlx_value per[256];
    for (size_t i = 0; !st && i < ns + nx; i++) { /* element b of every input, batch axis dropped */
      rlx_type t = *imp_type(I, in[i]);
      rlx_attr a[3] = {RLX_ATTR_IS("starts", 1, &b), RLX_ATTR_IS("ends", 1, ((int64_t[]){b + 1})), RLX_ATTR_IS("axes", 1, ((int64_t[]){0}))};
      st = t.rank < 1 || t.dims[0] != batch ? RLX_ERR(INVALID_ARGUMENT, "input %zu is %s, batch %lld expected", i + 1, RLX_TYPE_STR(&t), (long long)batch)
                                            : imp_add(I, n, RLX_OP_SLICE, 1, &in[i], 3, a, &per[i]);
      if (!st) st = imp_reshape(I, n, per[i], t.rank - 1, t.dims + 1, &per[i]);
      if (!st && i >= ns && attr_at(dirs, nd, i - ns)) st = reverse0(I, n, per[i], &per[i]);
    }
    if (!st) st = scan_core(I, n, body, ns, per, nx, per + ns, outs);
    for (size_t k = 0; !st && k < nout; k++) res[k * (size_t)batch + (size_t)b] = outs[k];
  }
  for (size_t k = 0; !st && k < nout; k++) {
    st = stack(I, n, res + k * (size_t)batch, (size_t)batch, &outs[k]);
    if (!st) st = imp_out(I, n, k, outs[k]);
  }
  free(res);
  free(outs);
  return st;
}

const rlx_onnx_op rlx_onnx_control_ops[] = {
    {"If", 0, map_if, true},
    {"Loop", 0, map_loop, true},
    {"Scan", 8, map_scan8, true},
    {"Scan", 9, map_scan, true},
};
const size_t rlx_onnx_control_ops_len = RLX_ARRAY_LEN(rlx_onnx_control_ops);
