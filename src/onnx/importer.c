/* importer.c: ONNX model -> rlx graph: options, the model object, scopes, folding, graph inputs
 * and outputs. The mappings' helpers are in import_helpers.c, rlx_onnx_describe in describe.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/importer.h"
#include "opt/rewrite.h"
#include "rlx/executable.h"
#include "rlx/optimize.h"

/* ---- options ---- */

typedef struct shape_fix {
  char *name;
  int32_t rank;
  int64_t dims[RLX_MAX_RANK];
  const rlx_tensor *value; /* set_input_value */
} shape_fix;

struct rlx_onnx_options {
  rlx_strmap dims; /* dim_param -> (size + 1) stored in the pointer */
  shape_fix *shapes;
  size_t n_shapes, cap_shapes;
  char *optimize; /* rlx_graph_optimize spec; NULL: the default */
};

rlx_status *rlx_onnx_options_create(rlx_onnx_options **out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "out is NULL");
  rlx_onnx_options *o = calloc(1, sizeof *o);
  if (!o) return RLX_OOM();
  *out = o;
  return NULL;
}

void rlx_onnx_options_free(rlx_onnx_options *o) {
  if (!o) return;
  rlx_strmap_clear(&o->dims);
  for (size_t i = 0; i < o->n_shapes; i++) free(o->shapes[i].name);
  free(o->shapes);
  free(o->optimize);
  free(o);
}

rlx_status *rlx_onnx_options_set_dim(rlx_onnx_options *o, const char *dim_param, int64_t size) {
  if (!o || !dim_param || !*dim_param) return RLX_ERR(INVALID_ARGUMENT, "set_dim: NULL or empty argument");
  if (size < 0) return RLX_ERR(INVALID_ARGUMENT, "dim '%s': size %lld is negative", dim_param, (long long)size);
  return rlx_strmap_put(&o->dims, dim_param, (void *)(intptr_t)(size + 1)) ? NULL : RLX_OOM();
}

static shape_fix *find_fix(const rlx_onnx_options *o, const char *name) {
  for (size_t i = 0; o && i < o->n_shapes; i++)
    if (strcmp(o->shapes[i].name, name) == 0) return &o->shapes[i];
  return NULL;
}

rlx_status *rlx_onnx_options_set_input_value(rlx_onnx_options *o, const char *input, const rlx_tensor *value) {
  if (!o || !input || !value) return RLX_ERR(INVALID_ARGUMENT, "set_input_value: NULL argument");
  RLX_TRY(rlx_onnx_options_set_shape(o, input, rlx_tensor_rank(value), rlx_tensor_dims(value)));
  find_fix(o, input)->value = value;
  return NULL;
}

rlx_status *rlx_onnx_options_set_optimize(rlx_onnx_options *o, const char *spec) {
  if (!o || !spec) return RLX_ERR(INVALID_ARGUMENT, "set_optimize: NULL argument");
  RLX_TRY(rlx_optimize_check(spec));
  char *c = rlx_strdup(spec);
  if (!c) return RLX_OOM();
  free(o->optimize);
  o->optimize = c;
  return NULL;
}

rlx_status *rlx_onnx_options_set_shape(rlx_onnx_options *o, const char *input, int32_t rank, const int64_t *dims) {
  if (!o || !input || (rank && !dims)) return RLX_ERR(INVALID_ARGUMENT, "set_shape: NULL argument");
  if (rank < 0 || rank > RLX_MAX_RANK) return RLX_ERR(INVALID_ARGUMENT, "input '%s': rank %d", input, (int)rank);
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0) return RLX_ERR(INVALID_ARGUMENT, "input '%s': dim %d is negative", input, i);
  shape_fix *f = find_fix(o, input);
  if (!f) {
    if (!rlx_grow((void **)&o->shapes, &o->cap_shapes, o->n_shapes + 1, sizeof(shape_fix))) return RLX_OOM();
    f = &o->shapes[o->n_shapes];
    memset(f, 0, sizeof *f);
    if (!(f->name = rlx_strdup(input))) return RLX_OOM();
    o->n_shapes++;
  }
  f->rank = rank;
  f->value = NULL;
  if (rank) memcpy(f->dims, dims, sizeof(int64_t) * (size_t)rank);
  return NULL;
}

/* ---- model ---- */

struct rlx_onnx_model {
  rlx_graph *g;
  char **pnames;
  rlx_tensor **pvals;
  size_t np, capn, capv;
  int64_t opset;
};

void rlx_onnx_model_free(rlx_onnx_model *m) {
  if (!m) return;
  rlx_graph_free(m->g);
  for (size_t i = 0; i < m->np; i++) {
    free(m->pnames[i]);
    rlx_tensor_free(m->pvals[i]);
  }
  free(m->pnames);
  free(m->pvals);
  free(m);
}

const rlx_graph *rlx_onnx_model_graph(const rlx_onnx_model *m) { return m->g; }
size_t rlx_onnx_model_num_params(const rlx_onnx_model *m) { return m->np; }
const char *rlx_onnx_model_param_name(const rlx_onnx_model *m, size_t i) { return m && i < m->np ? m->pnames[i] : NULL; }
const rlx_tensor *rlx_onnx_model_param_value(const rlx_onnx_model *m, size_t i) { return m && i < m->np ? m->pvals[i] : NULL; }
int64_t rlx_onnx_model_opset(const rlx_onnx_model *m) { return m->opset; }

/* Appends param `name` with value t (the model takes t on success). */
static rlx_status *model_add_param(rlx_onnx_model *m, const char *name, rlx_tensor *t) {
  if (!rlx_grow((void **)&m->pnames, &m->capn, m->np + 1, sizeof(char *)) ||
      !rlx_grow((void **)&m->pvals, &m->capv, m->np + 1, sizeof(rlx_tensor *)))
    return RLX_OOM();
  if (!(m->pnames[m->np] = rlx_strdup(name))) return RLX_OOM();
  m->pvals[m->np++] = t;
  return NULL;
}

rlx_status *rlx_onnx_model_set_params(const rlx_onnx_model *m, rlx_executable *ex) {
  if (!m || !ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_model_set_params: NULL argument");
  for (size_t i = 0; i < m->np; i++) RLX_TRY(rlx_executable_set_param(ex, m->pnames[i], m->pvals[i]));
  return NULL;
}

/* ---- scopes ---- */

static void vals_free(rlx_strmap *m) {
  for (size_t i = 0; i < m->cap; i++) {
    imp_val *v = m->keys[i] ? m->vals[i] : NULL;
    if (!v) continue;
    if (v->owns_data) rlx_tensor_free(v->data);
    free(v);
  }
  rlx_strmap_clear(m);
}

/* The entry of `name` in the nearest scope defining it (*owner: that scope); NULL when undefined. */
static imp_val *lookup_in(rlx_imp *I, const char *name, rlx_imp **owner) {
  for (rlx_imp *s = I; s; s = s->parent) {
    imp_val *v = rlx_strmap_get(&s->vals, name);
    if (v) {
      if (owner) *owner = s;
      return v;
    }
  }
  return NULL;
}

static imp_val *lookup(rlx_imp *I, const char *name) { return lookup_in(I, name, NULL); }

const imp_val *imp_lookup(rlx_imp *I, const char *name) { return lookup(I, name); }

const rlx_type *imp_name_type(rlx_imp *I, const char *name) {
  rlx_imp *owner;
  const imp_val *v = lookup_in(I, name, &owner);
  if (!v) return NULL;
  return v->has_v ? rlx_graph_value_type(owner->g, v->v) : v->data ? rlx_tensor_type(v->data) : NULL;
}

static rlx_status *define(rlx_imp *I, const char *name, imp_val val) {
  imp_val *v = rlx_strmap_get(&I->vals, name);
  if (v) {
    if (v->owns_data) rlx_tensor_free(v->data);
  } else {
    if (!(v = malloc(sizeof *v))) return RLX_OOM();
    if (!rlx_strmap_put(&I->vals, name, v)) {
      free(v);
      return RLX_OOM();
    }
  }
  *v = val;
  return NULL;
}

rlx_status *imp_define(rlx_imp *I, const char *name, imp_val v) { return define(I, name, v); }

void imp_scope_init(rlx_imp *S, rlx_imp *P, rlx_graph *g) {
  *S = (rlx_imp){.g = g, .opset = P->opset, .opts = P->opts, .dir = P->dir, .model = P->model, .parent = P};
}

void imp_scope_free(rlx_imp *S) {
  vals_free(&S->vals);
  rlx_strmap_clear(&S->symbols);
  for (size_t i = 0; i < S->n_captures; i++) free(S->captures[i]);
  free(S->captures);
  S->captures = NULL;
  S->n_captures = S->cap_captures = 0;
}

/* The scope that owns I's graph (inline scopes share their parent's graph). */
static rlx_imp *graph_root(rlx_imp *I) {
  while (I->parent && I->parent->g == I->g) I = I->parent;
  return I;
}

/* Makes initializer `v` a param named `name` of I->g. The first time an initializer becomes a
 * param the model takes its tensor (unused or folded-away initializers are never params and are
 * freed with their scope). */
static rlx_status *add_param(rlx_imp *I, const char *name, imp_val *v, rlx_value *out) {
  RLX_TRY(rlx_graph_add_param(I->g, name, rlx_tensor_type(v->data), out));
  if (v->owns_data) {
    RLX_TRY(model_add_param(I->model, name, v->data));
    v->owns_data = false;
  }
  return NULL;
}

/* Makes the outer graph value `name` an Input of the sub-graph rooted at R (its operand comes
 * from R's parent scope, capturing there in turn when needed). */
static rlx_status *capture(rlx_imp *R, const char *name, const imp_val *outer, rlx_value *out) {
  if (!R->parent) return RLX_ERR(INTERNAL, "value '%s' belongs to another graph", name);
  rlx_value pv, iv;
  RLX_TRY(imp_value(R->parent, name, &pv));
  RLX_TRY(rlx_graph_add_input(R->g, name, rlx_graph_value_type(R->parent->g, pv), &iv));
  if (!rlx_grow((void **)&R->captures, &R->cap_captures, R->n_captures + 1, sizeof(char *))) return RLX_OOM();
  if (!(R->captures[R->n_captures] = rlx_strdup(name))) return RLX_OOM();
  R->n_captures++;
  /* known data of a provided input stays visible to imp_const, as in the outer scope */
  RLX_TRY(define(R, name, (imp_val){.v = iv, .has_v = true, .data = outer->data, .is_input = outer->is_input}));
  *out = iv;
  return NULL;
}

static rlx_status *materialize(rlx_imp *I, const char *name, rlx_value *out) {
  rlx_imp *owner;
  imp_val *v = lookup_in(I, name, &owner);
  if (!v) return RLX_ERR(INVALID_ARGUMENT, "value '%s' is not defined (not an input, initializer or earlier output)", name);
  if (owner->g != I->g) {
    /* An outer value used in a sub-graph: a param (initializer), a constant copy (known data) or a
     * capture, defined in the sub-graph's root scope so that later uses share it. */
    rlx_imp *R = graph_root(I);
    if (!(v->data && !v->is_input)) return capture(R, name, v, out);
    rlx_value lv;
    RLX_TRY(v->is_init && I->model ? add_param(R, name, v, &lv) : imp_tensor_const(R, v->data, &lv));
    RLX_TRY(define(R, name, (imp_val){.v = lv, .has_v = true, .data = v->data, .is_init = v->is_init}));
    *out = lv;
    return NULL;
  }
  if (!v->has_v) {
    if (!v->data) return RLX_ERR(INTERNAL, "value '%s' has neither a graph value nor data", name);
    RLX_TRY(v->is_init && I->model ? add_param(I, name, v, &v->v) : imp_tensor_const(I, v->data, &v->v));
    v->has_v = true;
  }
  *out = v->v;
  return NULL;
}

rlx_status *imp_value(rlx_imp *I, const char *name, rlx_value *out) { return materialize(I, name, out); }

/* ---- folding: run a node whose inputs are all constants on MLX, keep its outputs as data ----
 * Values computed from provided input values (is_input) are not constants: a node reading one is
 * mapped as usual, and its value is computed only when a consumer needs it (imp_eval). */

static bool foldable(rlx_imp *I, const Onnx__NodeProto *n, const rlx_onnx_op *op) {
  if (op->no_fold) return false;
  for (size_t k = 0; k < n->n_input; k++) {
    if (!n->input[k][0]) continue;
    imp_val *v = lookup(I, n->input[k]);
    if (!v || !v->data || v->is_input) return false;
  }
  return true;
}

static rlx_status *fold(rlx_imp *I, const Onnx__NodeProto *n, const rlx_onnx_op *op) {
  rlx_imp T = {.opset = I->opset, .opts = I->opts, .dir = I->dir};
  rlx_status *st = rlx_graph_create(&T.g);
  for (size_t k = 0; !st && k < n->n_input; k++) {
    if (!n->input[k][0]) continue;
    st = define(&T, n->input[k], (imp_val){.data = lookup(I, n->input[k])->data});
  }
  if (!st) st = op->fn(&T, n);
  /* Outputs that are graph values run on MLX; outputs already known (Constant) move over. */
  rlx_value outs[64];
  size_t idx[64], nrun = 0;
  for (size_t k = 0; !st && k < n->n_output && k < 64; k++) {
    if (!n->output[k][0]) continue;
    imp_val *v = rlx_strmap_get(&T.vals, n->output[k]);
    if (!v) {
      st = RLX_ERR(INTERNAL, "output %zu was not produced", k);
    } else if (v->has_v) {
      outs[nrun] = v->v;
      idx[nrun++] = k;
    } else {
      st = define(I, n->output[k], (imp_val){.data = v->data, .owns_data = v->owns_data});
      v->owns_data = false;
    }
  }
  if (!st && nrun) {
    rlx_executable *ex = NULL;
    rlx_tensor *res[64] = {0};
    st = rlx_graph_set_outputs(T.g, nrun, outs);
    for (size_t i = 0; !st && i < nrun; i++) {
      const rlx_type *t = rlx_graph_value_type(T.g, outs[i]);
      size_t nb = 0;
      rlx_status *big = rlx_type_nbytes(t, &nb);
      if (big || nb > (size_t)RLX_ONNX_MAX_FOLD_BYTES)
        st = RLX_ERR(RESOURCE_EXHAUSTED, "output %zu would be %s, more than the %lld bytes a value computed while importing may take",
                     idx[i], RLX_TYPE_STR(t), (long long)RLX_ONNX_MAX_FOLD_BYTES);
      rlx_status_free(big);
    }
    if (!st) st = rlx_executable_create(T.g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex);
    if (!st) st = rlx_executable_run(ex, 0, NULL, NULL, nrun, res);
    for (size_t i = 0; i < nrun; i++) {
      if (st) rlx_tensor_free(res[i]);
      else st = define(I, n->output[idx[i]], (imp_val){.data = res[i], .owns_data = true});
    }
    rlx_executable_free(ex);
    if (st) st = rlx_status_annotate(st, "folding");
  }
  vals_free(&T.vals);
  rlx_graph_free(T.g);
  return st;
}

/* ---- values computed on demand from provided input values ---- */

static bool is_capture(const rlx_imp *R, const char *name) {
  for (size_t i = 0; i < R->n_captures; i++)
    if (!strcmp(R->captures[i], name)) return true;
  return false;
}

/* The value of graph input `name` of the graph rooted at R: the provided value of a top-level
 * input, or the outer value a sub-graph captured (computed in turn). NULL when it has none. */
static rlx_status *input_value(rlx_imp *I, rlx_imp *R, const char *name, const rlx_tensor **out) {
  *out = NULL;
  if (!R->parent) {
    const shape_fix *f = find_fix(I->opts, name);
    *out = f ? f->value : NULL;
    return NULL;
  }
  return is_capture(R, name) ? imp_eval(R->parent, name, out) : NULL;
}

/* Runs the part of `owner`'s graph that value v depends on (and nothing else), with graph inputs
 * from input_value and params from the model. *out is a new tensor. */
static rlx_status *eval_slice(rlx_imp *I, rlx_imp *owner, const char *name, rlx_value v, rlx_tensor **out) {
  const rlx_graph *g = owner->g;
  rlx_imp *R = graph_root(owner);
  bool *live = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *live);
  const char **names = calloc(g->n_inputs + 1, sizeof *names);
  const rlx_tensor **vals = calloc(g->n_inputs + 1, sizeof *vals);
  size_t ni = 0;
  rlx_rw rw = {0};
  rlx_executable *ex = NULL;
  rlx_status *st = live && names && vals ? rlx_rw_init(&rw, g) : RLX_OOM();
  if (!st) rlx_graph_mark_live(g, 1, &v, live);
  for (size_t k = 0; !st && k < g->n_nodes; k++) {
    const rlx_node *nd = &g->nodes[k];
    if (!live[k]) continue;
    if (nd->op == RLX_OP_INPUT) {
      st = input_value(I, R, nd->name, &vals[ni]);
      if (!st && !vals[ni])
        st = RLX_ERR(UNIMPLEMENTED, "'%s' must be known at import time but depends on input '%s', which has no value (give it "
                                    "one: rlx_onnx_options_set_input_value, or rlx run --input)", name, nd->name);
      names[ni++] = nd->name;
    }
    if (!st) st = rlx_rw_copy(&rw, nd);
  }
  rlx_value ov = st ? 0 : rw.map[v];
  if (!st) st = rlx_graph_set_outputs(rw.dst, 1, &ov);
  if (!st) st = rlx_executable_create(rw.dst, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex);
  for (size_t p = 0; !st && p < rlx_executable_num_params(ex); p++) {
    const char *pn = rlx_executable_param_name(ex, p);
    size_t k = 0;
    while (I->model && k < I->model->np && strcmp(I->model->pnames[k], pn)) k++;
    st = I->model && k < I->model->np ? rlx_executable_set_param(ex, pn, I->model->pvals[k])
                                      : RLX_ERR(INTERNAL, "param '%s' has no value", pn);
  }
  if (!st) st = rlx_executable_run(ex, ni, names, (rlx_tensor *const *)vals, 1, out); /* only read */
  rlx_executable_free(ex);
  rlx_rw_free(&rw);
  free(live);
  free(names);
  free(vals);
  return st;
}

rlx_status *imp_eval(rlx_imp *I, const char *name, const rlx_tensor **out) {
  rlx_imp *owner;
  imp_val *v = lookup_in(I, name, &owner);
  if (!v) return RLX_ERR(INVALID_ARGUMENT, "value '%s' is not defined", name);
  if (!v->data) {
    if (!v->has_v) return RLX_ERR(INTERNAL, "value '%s' has neither a graph value nor data", name);
    rlx_tensor *t = NULL;
    RLX_TRY(rlx_status_annotate(eval_slice(I, owner, name, v->v, &t), "computing '%s' at import time", name));
    v->data = t, v->owns_data = true, v->is_input = true;
  }
  *out = v->data;
  return NULL;
}

/* ---- graph inputs ---- */

static rlx_status *input_type(rlx_imp *I, const Onnx__ValueInfoProto *vi, rlx_type *out) {
  const char *nm = vi->name ? vi->name : "";
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
    return RLX_ERR(UNIMPLEMENTED, "input '%s' is not a tensor (sequences, maps and optionals are not supported)", nm);
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  rlx_dtype dt;
  RLX_TRY(rlx_status_annotate(rlx_onnx_dtype(tt->elem_type, &dt), "input '%s'", nm));
  const shape_fix *fix = find_fix(I->opts, nm);
  size_t rank = tt->shape ? tt->shape->n_dim : 0;
  if (!tt->shape && !fix) return RLX_ERR(UNIMPLEMENTED, "input '%s' has no shape; give it with --shape %s=d0,d1,...", nm, nm);
  if (fix && tt->shape && (size_t)fix->rank != rank)
    return RLX_ERR(INVALID_ARGUMENT, "input '%s': fixed shape has rank %d, the model says %zu", nm, fix->rank, rank);
  if (fix) rank = (size_t)fix->rank;
  if (rank > RLX_MAX_RANK) return RLX_ERR(UNIMPLEMENTED, "input '%s' has rank %zu (max %d)", nm, rank, RLX_MAX_RANK);
  rlx_type t = {.dtype = dt, .rank = (int32_t)rank};
  for (size_t i = 0; i < rank; i++) {
    if (fix) {
      t.dims[i] = fix->dims[i];
      continue;
    }
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
      t.dims[i] = d->dim_value;
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param && *d->dim_param) {
      void *fixed = I->opts ? rlx_strmap_get(&I->opts->dims, d->dim_param) : NULL;
      if (fixed) {
        t.dims[i] = (int64_t)(intptr_t)fixed - 1;
      } else {
        void *sym = rlx_strmap_get(&I->symbols, d->dim_param);
        if (!sym) {
          sym = (void *)(intptr_t)(++I->next_symbol);
          if (!rlx_strmap_put(&I->symbols, d->dim_param, sym)) return RLX_OOM();
        }
        t.dims[i] = RLX_DIM_SYMBOL((intptr_t)sym - 1);
      }
    } else {
      t.dims[i] = RLX_DIM_SYMBOL(I->next_symbol++);
    }
  }
  *out = t;
  return NULL;
}

/* ---- the import ---- */

int64_t rlx_onnx_default_opset(const Onnx__ModelProto *mp) {
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const char *d = mp->opset_import[i]->domain;
    if (!d || !*d || !strcmp(d, "ai.onnx")) return mp->opset_import[i]->version;
  }
  return 1;
}

static rlx_status *map_node(rlx_imp *I, const Onnx__NodeProto *n) {
  if (!n->op_type || !*n->op_type) return RLX_ERR(INVALID_ARGUMENT, "ONNX node '%s' has no op_type", n->name ? n->name : "");
  const rlx_onnx_op *op = rlx_onnx_find_op(n->domain, n->op_type, I->opset);
  rlx_status *st;
  if (!op) {
    st = RLX_ERR(UNIMPLEMENTED, "op %s%s%s is not supported by rlx at opset %lld", n->domain && *n->domain ? n->domain : "",
                 n->domain && *n->domain ? "." : "", n->op_type, (long long)I->opset);
  } else {
    st = foldable(I, n, op) ? fold(I, n, op) : op->fn(I, n);
  }
  if (st) st = rlx_status_annotate(st, "ONNX node '%s' (%s, opset %lld)", imp_node_label(n), n->op_type, (long long)I->opset);
  return st;
}

/* ---- sub-graph bodies ---- */

typedef struct name_list {
  const char **names; /* borrowed from the model proto */
  size_t n, cap;
  rlx_strmap seen;
} name_list;

static rlx_status *list_add(name_list *l, const char *name) {
  if (rlx_strmap_get(&l->seen, name)) return NULL;
  if (!rlx_strmap_put(&l->seen, name, (void *)1) || !rlx_grow((void **)&l->names, &l->cap, l->n + 1, sizeof(char *))) return RLX_OOM();
  l->names[l->n++] = name;
  return NULL;
}

static void list_free(name_list *l) {
  free(l->names);
  rlx_strmap_clear(&l->seen);
}

/* Appends to `out` the names gp reads without defining them (nested graphs included), in
 * first-use order. */
static rlx_status *free_names(const Onnx__GraphProto *gp, name_list *out) {
  rlx_strmap def = {0};
  rlx_status *st = NULL;
  for (size_t i = 0; !st && i < gp->n_input; i++)
    if (!rlx_strmap_put(&def, gp->input[i]->name ? gp->input[i]->name : "", (void *)1)) st = RLX_OOM();
  for (size_t i = 0; !st && i < gp->n_initializer; i++)
    if (!rlx_strmap_put(&def, gp->initializer[i]->name ? gp->initializer[i]->name : "", (void *)1)) st = RLX_OOM();
  for (size_t k = 0; !st && k < gp->n_node; k++) {
    const Onnx__NodeProto *n = gp->node[k];
    name_list inner = {0};
    for (size_t i = 0; !st && i < n->n_input; i++)
      if (n->input[i][0]) st = list_add(&inner, n->input[i]);
    for (size_t a = 0; !st && a < n->n_attribute; a++) {
      if (n->attribute[a]->g) st = free_names(n->attribute[a]->g, &inner);
      for (size_t j = 0; !st && j < n->attribute[a]->n_graphs; j++) st = free_names(n->attribute[a]->graphs[j], &inner);
    }
    for (size_t i = 0; !st && i < inner.n; i++)
      if (!rlx_strmap_get(&def, inner.names[i])) st = list_add(out, inner.names[i]);
    list_free(&inner);
    for (size_t i = 0; !st && i < n->n_output; i++)
      if (n->output[i][0] && !rlx_strmap_put(&def, n->output[i], (void *)1)) st = RLX_OOM();
  }
  rlx_strmap_clear(&def);
  return st;
}

rlx_status *imp_capture_free(rlx_imp *I, const Onnx__GraphProto *gp) {
  name_list l = {0};
  rlx_status *st = free_names(gp, &l);
  for (size_t i = 0; !st && i < l.n; i++) {
    rlx_imp *owner;
    imp_val *v = lookup_in(I, l.names[i], &owner);
    rlx_value x;
    if (v && owner->g != I->g && !(v->data && !v->is_input)) st = capture(graph_root(I), l.names[i], v, &x);
  }
  list_free(&l);
  return st;
}

/* Defines gp's initializers in scope I as known data (is_init: they become params when used). */
static rlx_status *define_initializers(rlx_imp *I, const Onnx__GraphProto *gp, bool is_init) {
  if (gp->n_sparse_initializer) return RLX_ERR(UNIMPLEMENTED, "sparse initializers are not supported");
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *tp = gp->initializer[i];
    rlx_tensor *t;
    RLX_TRY(rlx_onnx_tensor_from_proto(tp, I->dir, &t));
    rlx_status *st = define(I, tp->name ? tp->name : "", (imp_val){.data = t, .owns_data = true, .is_init = is_init});
    if (st) {
      rlx_tensor_free(t);
      return st;
    }
  }
  return NULL;
}

rlx_status *imp_body(rlx_imp *I, const Onnx__GraphProto *gp) {
  RLX_TRY(define_initializers(I, gp, false));
  for (size_t i = 0; i < gp->n_node; i++) RLX_TRY(map_node(I, gp->node[i]));
  return NULL;
}

/* The model's inputs, "a, b, c" (truncated), for messages. */
static void input_list(const Onnx__GraphProto *gp, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < gp->n_input && o + 1 < cap; i++) {
    int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", gp->input[i]->name ? gp->input[i]->name : "");
    o += w > 0 ? (size_t)w : 0;
  }
  if (!gp->n_input) snprintf(buf, cap, "none");
}

/* Checks one fixed input against its declaration: dtype (of a given value), rank, the dims the
 * model fixes, and the sizes rlx_onnx_options_set_dim gives its dim_params. (Two inputs may give
 * one dim_param different sizes: exporters name unrelated dims alike, "?" say.) */
static rlx_status *check_fix(const rlx_imp *I, const Onnx__ValueInfoProto *vi, const shape_fix *f) {
  const char *nm = f->name;
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) return NULL; /* reported by the import */
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  rlx_dtype dt;
  if (f->value && !rlx_onnx_dtype(tt->elem_type, &dt) && dt != rlx_tensor_dtype(f->value))
    return RLX_ERR(INVALID_ARGUMENT, "input '%s': the model declares %s, got %s", nm, rlx_dtype_name(dt), rlx_dtype_name(rlx_tensor_dtype(f->value)));
  if (!tt->shape) return NULL;
  if (tt->shape->n_dim != (size_t)f->rank)
    return RLX_ERR(INVALID_ARGUMENT, "input '%s': the model declares rank %zu, got rank %d", nm, tt->shape->n_dim, (int)f->rank);
  for (size_t i = 0; i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    int64_t got = f->dims[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0 && d->dim_value != got)
      return RLX_ERR(INVALID_ARGUMENT, "input '%s' dim %zu: the model fixes it to %lld, got %lld", nm, i, (long long)d->dim_value, (long long)got);
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM || !d->dim_param || !*d->dim_param) continue;
    void *set = I->opts ? rlx_strmap_get(&I->opts->dims, d->dim_param) : NULL;
    if (set && (int64_t)(intptr_t)set - 1 != got)
      return RLX_ERR(INVALID_ARGUMENT, "input '%s' dim %zu ('%s'): '%s' is set to %lld, got %lld", nm, i, d->dim_param, d->dim_param,
                     (long long)((intptr_t)set - 1), (long long)got);
  }
  return NULL;
}

/* Checks the options against the model's declared inputs before any import work: every fixed
 * input exists (NOT_FOUND listing the model's inputs) and fits its declaration. */
static rlx_status *check_options(const rlx_imp *I, const Onnx__GraphProto *gp) {
  rlx_status *st = NULL;
  for (size_t k = 0; !st && I->opts && k < I->opts->n_shapes; k++) {
    const shape_fix *f = &I->opts->shapes[k];
    const Onnx__ValueInfoProto *vi = NULL;
    for (size_t i = 0; !vi && i < gp->n_input; i++)
      if (gp->input[i]->name && !strcmp(gp->input[i]->name, f->name)) vi = gp->input[i];
    if (!vi) {
      char list[512];
      input_list(gp, list, sizeof list);
      st = RLX_ERR(NOT_FOUND, "the model has no input named '%s' (inputs: %s)", f->name, list);
    } else {
      st = check_fix(I, vi, f);
    }
  }
  return st;
}

static rlx_status *import_graph(rlx_imp *I, const Onnx__GraphProto *gp) {
  RLX_TRY(check_options(I, gp));
  RLX_TRY(define_initializers(I, gp, true));
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name || rlx_strmap_get(&I->vals, vi->name)) continue; /* initializer listed as an input */
    rlx_type t;
    rlx_value v;
    RLX_TRY(input_type(I, vi, &t));
    RLX_TRY(rlx_graph_add_input(I->g, vi->name, &t, &v));
    RLX_TRY(define(I, vi->name, (imp_val){.v = v, .has_v = true}));
  }
  for (size_t i = 0; i < gp->n_node; i++) RLX_TRY(map_node(I, gp->node[i]));
  if (!gp->n_output) return RLX_ERR(INVALID_ARGUMENT, "the graph has no outputs");
  rlx_value *outs = malloc(gp->n_output * sizeof *outs);
  if (!outs) return RLX_OOM();
  rlx_status *st = NULL;
  for (size_t i = 0; !st && i < gp->n_output; i++) st = materialize(I, gp->output[i]->name ? gp->output[i]->name : "", &outs[i]);
  if (!st) st = rlx_graph_set_outputs(I->g, gp->n_output, outs);
  for (size_t i = 0; !st && i < gp->n_output; i++) st = rlx_graph_set_output_name(I->g, i, gp->output[i]->name);
  free(outs);
  return st;
}

/* Runs the optimization pipeline on the imported graph *g with the model's params, then drops the
 * params the new graph no longer reads (folded into constants). */
static rlx_status *optimize(rlx_graph **g, rlx_onnx_model *m, const char *spec) {
  if (!strcmp(spec, "none")) return NULL;
  rlx_graph *o;
  RLX_TRY(rlx_graph_optimize(*g, spec, m->np, (const char *const *)m->pnames, (const rlx_tensor *const *)m->pvals, &o));
  rlx_graph_free(*g);
  *g = o;
  size_t k = 0;
  for (size_t i = 0; i < m->np; i++) {
    if (rlx_graph_reads_param(o, m->pnames[i])) {
      m->pnames[k] = m->pnames[i], m->pvals[k++] = m->pvals[i];
      continue;
    }
    free(m->pnames[i]);
    rlx_tensor_free(m->pvals[i]);
  }
  m->np = k;
  return NULL;
}

rlx_status *rlx_onnx_import_bytes(const void *bytes, size_t nbytes, const char *dir, const rlx_onnx_options *opts,
                                  rlx_onnx_model **out) {
  if (!bytes || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_import_bytes: NULL argument");
  RLX_TRY(rlx_onnx_check_wire(bytes, nbytes, "the model"));
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, nbytes, bytes);
  if (!mp) return RLX_ERR(DATA_LOSS, "not a serialized ONNX ModelProto");
  rlx_onnx_model *m = calloc(1, sizeof *m);
  rlx_status *st = m ? NULL : RLX_OOM();
  rlx_imp I = {.opts = opts, .dir = dir, .model = m, .opset = rlx_onnx_default_opset(mp)};
  if (!st) {
    m->opset = I.opset;
    st = rlx_graph_create(&I.g);
  }
  if (!st && !mp->graph) st = RLX_ERR(INVALID_ARGUMENT, "the model has no graph");
  if (!st) st = import_graph(&I, mp->graph);
  if (!st) st = optimize(&I.g, m, opts && opts->optimize ? opts->optimize : RLX_ONNX_DEFAULT_OPTIMIZE);
  vals_free(&I.vals);
  rlx_strmap_clear(&I.symbols);
  onnx__model_proto__free_unpacked(mp, NULL);
  if (st) {
    rlx_graph_free(I.g);
    rlx_onnx_model_free(m);
    return st;
  }
  m->g = I.g;
  *out = m;
  return NULL;
}

rlx_status *rlx_onnx_import(const char *path, const rlx_onnx_options *opts, rlx_onnx_model **out) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_import: NULL argument");
  unsigned char *buf;
  size_t len;
  RLX_TRY(rlx_read_file(path, &buf, &len));
  char dir[4096];
  rlx_onnx_dir_of(path, dir, sizeof dir);
  rlx_status *st = rlx_onnx_import_bytes(buf, len, dir, opts, out);
  free(buf);
  return rlx_status_annotate(st, "%s", path);
}
