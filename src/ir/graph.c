/* graph.c: the IR graph builder: leaves, nodes with inference and verification, outputs. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

rlx_status *rlx_graph_create(rlx_graph **out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_create: out is NULL");
  rlx_graph *g = calloc(1, sizeof *g);
  if (!g) return RLX_OOM();
  atomic_init(&g->refs, 1);
  *out = g;
  return NULL;
}

/* A Constant's payload: the bytes after a reference count, shared by the graphs that copy the
 * Constant (rlx_graph_add_constant_of: each optimization pass writes a new graph, and a model's
 * weights were copied by every pass of every round). Never written after it is filled. */
typedef struct blob {
  _Atomic size_t refs;
  _Alignas(max_align_t) unsigned char bytes[];
} blob;

static blob *blob_of(void *data) { return (blob *)((unsigned char *)data - offsetof(blob, bytes)); }

static void blob_unref(void *data) {
  if (data && atomic_fetch_sub(&blob_of(data)->refs, 1) == 1) free(blob_of(data));
}

static void node_clear(rlx_node *n) {
  free(n->name);
  free(n->in);
  rlx_attrs_free(n->attrs, n->n_attrs, true);
  blob_unref(n->data);
}

void rlx_graph_ref(const rlx_graph *g) { atomic_fetch_add(&((rlx_graph *)g)->refs, 1); }

bool rlx_graph_input_symbol(const rlx_graph *g, int64_t id) {
  for (size_t i = 0; id < g->n_symbols && i < g->n_inputs; i++) {
    const rlx_type *t = &g->types[g->nodes[g->inputs[i]].out0];
    for (int d = 0; d < t->rank; d++)
      if (t->dims[d] < -1 && RLX_DIM_SYMBOL_ID(t->dims[d]) == id) return true;
  }
  return false;
}

rlx_status *rlx_graph_check_mutable(const rlx_graph *g, const char *what) {
  size_t r = atomic_load(&((rlx_graph *)g)->refs);
  if (r > 1) return RLX_ERR(FAILED_PRECONDITION, "%s: the graph is used by an executable and cannot change", what);
  return NULL;
}

void rlx_graph_free(rlx_graph *g) { rlx_graph_unref(g); }

void rlx_graph_unref(const rlx_graph *cg) {
  rlx_graph *g = (rlx_graph *)cg;
  if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
  for (size_t i = 0; i < g->n_nodes; i++) node_clear(&g->nodes[i]);
  for (size_t i = 0; i < g->n_outputs; i++) free(g->output_names[i]);
  free(g->nodes);
  free(g->types);
  free(g->val_node);
  free(g->inputs);
  free(g->params);
  free(g->outputs);
  free(g->output_names);
  free(g);
}

/* "node 12 (Conv 'conv1')", or "node 12 (Conv)" without a name. */
static const char *format_label(size_t idx, rlx_op op, const char *name, char *buf, size_t cap) {
  if (name && *name) snprintf(buf, cap, "node %zu (%s '%s')", idx, rlx_op_name(op), name);
  else snprintf(buf, cap, "node %zu (%s)", idx, rlx_op_name(op));
  return buf;
}

const char *rlx_node_label(const rlx_graph *g, const rlx_node *n, char *buf, size_t cap) {
  return format_label((size_t)(n - g->nodes), n->op, n->name, buf, cap);
}

/* Reserves room for one more node and `nv` more values. */
static rlx_status *reserve(rlx_graph *g, size_t nv) {
  size_t cv = g->cap_vals;
  if (!rlx_grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(rlx_node))) return RLX_OOM();
  if (!rlx_grow((void **)&g->types, &cv, g->n_vals + nv, sizeof(rlx_type))) return RLX_OOM();
  cv = g->cap_vals;
  if (!rlx_grow((void **)&g->val_node, &cv, g->n_vals + nv, sizeof(uint32_t))) return RLX_OOM();
  g->cap_vals = cv;
  return NULL;
}

/* Appends a node whose fields are already owned (n moves into the graph) with output types. */
static void append(rlx_graph *g, rlx_node *n, const rlx_type *types, uint32_t n_out, rlx_value *out) {
  n->out0 = (rlx_value)g->n_vals;
  n->n_out = n_out;
  for (uint32_t i = 0; i < n_out; i++) {
    g->types[g->n_vals] = types[i];
    g->val_node[g->n_vals] = (uint32_t)g->n_nodes;
    if (out) out[i] = (rlx_value)g->n_vals;
    g->n_vals++;
  }
  g->nodes[g->n_nodes++] = *n;
}

static bool name_taken(const rlx_graph *g, const char *name) {
  for (size_t i = 0; i < g->n_inputs; i++)
    if (strcmp(g->nodes[g->inputs[i]].name, name) == 0) return true;
  for (size_t i = 0; i < g->n_params; i++)
    if (strcmp(g->nodes[g->params[i]].name, name) == 0) return true;
  return false;
}

static rlx_status *add_named_leaf(rlx_graph *g, rlx_op op, const char *name, const rlx_type *type,
                                  rlx_value *out) {
  const char *what = op == RLX_OP_INPUT ? "input" : "param";
  if (!g || !type || !out) return RLX_ERR(INVALID_ARGUMENT, "add %s: NULL argument", what);
  if (!name || !*name) return RLX_ERR(INVALID_ARGUMENT, "add %s: empty name", what);
  RLX_TRY(rlx_graph_check_mutable(g, what));
  rlx_type t;
  RLX_TRY(rlx_type_make(type->dtype, type->rank, type->dims, &t));
  if (op == RLX_OP_PARAM && !rlx_type_is_static(&t))
    return RLX_ERR(INVALID_ARGUMENT, "param '%s': type %s has a symbolic dim; params need static shapes", name, RLX_TYPE_STR(&t));
  if (name_taken(g, name)) return RLX_ERR(ALREADY_EXISTS, "%s '%s': an input or param of that name exists", what, name);
  uint32_t **list = op == RLX_OP_INPUT ? &g->inputs : &g->params;
  size_t *cnt = op == RLX_OP_INPUT ? &g->n_inputs : &g->n_params;
  size_t *cap = op == RLX_OP_INPUT ? &g->cap_inputs : &g->cap_params;
  if (!rlx_grow((void **)list, cap, *cnt + 1, sizeof(uint32_t))) return RLX_OOM();
  RLX_TRY(reserve(g, 1));
  rlx_node n = {.op = op, .name = rlx_strdup(name)};
  if (!n.name) return RLX_OOM();
  for (int i = 0; i < t.rank; i++)
    if (t.dims[i] <= -2 && RLX_DIM_SYMBOL_ID(t.dims[i]) + 1 > g->n_symbols) g->n_symbols = RLX_DIM_SYMBOL_ID(t.dims[i]) + 1;
  (*list)[(*cnt)++] = (uint32_t)g->n_nodes;
  append(g, &n, &t, 1, out);
  return NULL;
}

rlx_status *rlx_graph_add_input(rlx_graph *g, const char *name, const rlx_type *type, rlx_value *out) {
  return add_named_leaf(g, RLX_OP_INPUT, name, type, out);
}

rlx_status *rlx_graph_add_param(rlx_graph *g, const char *name, const rlx_type *type, rlx_value *out) {
  return add_named_leaf(g, RLX_OP_PARAM, name, type, out);
}

rlx_status *rlx_graph_add_constant(rlx_graph *g, const rlx_type *type, const void *data, size_t nbytes,
                                   rlx_value *out) {
  if (!g || !type || !out) return RLX_ERR(INVALID_ARGUMENT, "add constant: NULL argument");
  RLX_TRY(rlx_graph_check_mutable(g, "add constant"));
  rlx_type t;
  RLX_TRY(rlx_type_make(type->dtype, type->rank, type->dims, &t));
  if (!rlx_type_is_static(&t)) return RLX_ERR(INVALID_ARGUMENT, "constant of type %s: constants need static shapes", RLX_TYPE_STR(&t));
  size_t need;
  RLX_TRY(rlx_type_nbytes(&t, &need));
  if (need != nbytes)
    return RLX_ERR(INVALID_ARGUMENT, "constant of type %s needs %zu bytes, got %zu", RLX_TYPE_STR(&t), need, nbytes);
  if (need && !data) return RLX_ERR(INVALID_ARGUMENT, "constant data is NULL");
  RLX_TRY(reserve(g, 1));
  rlx_node n = {.op = RLX_OP_CONSTANT, .nbytes = need};
  if (need) {
    blob *b = malloc(sizeof *b + need);
    if (!b) return RLX_OOM();
    atomic_init(&b->refs, 1);
    memcpy(b->bytes, data, need);
    n.data = b->bytes;
  }
  append(g, &n, &t, 1, out);
  return NULL;
}

rlx_status *rlx_graph_add_constant_of(rlx_graph *g, const rlx_graph *src, const rlx_node *c, rlx_value *out) {
  if (!g || !src || !c || !out || c->op != RLX_OP_CONSTANT) return RLX_ERR(INVALID_ARGUMENT, "add constant: not a Constant node");
  RLX_TRY(rlx_graph_check_mutable(g, "add constant"));
  RLX_TRY(reserve(g, 1));
  rlx_node n = {.op = RLX_OP_CONSTANT, .nbytes = c->nbytes, .data = c->data};
  if (n.data) atomic_fetch_add(&blob_of(n.data)->refs, 1);
  append(g, &n, &src->types[c->out0], 1, out);
  return NULL;
}

/* RESOURCE_EXHAUSTED when an inferred output's static dims make more than INT64_MAX bytes (a
 * shape arithmetic overflow or an absurd size: no buffer of that type can exist). */
static rlx_status *sizes_fit(const rlx_type *t, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    int64_t bytes = (int64_t)rlx_dtype_size(t[i].dtype);
    for (int d = 0; d < t[i].rank; d++)
      if (t[i].dims[d] >= 0 && !rlx_mul_i64(bytes, t[i].dims[d], &bytes))
        return RLX_ERR(RESOURCE_EXHAUSTED, "output %u: %s holds more than 2^63 bytes", i, RLX_TYPE_STR(&t[i]));
  }
  return NULL;
}

rlx_status *rlx_graph_add(rlx_graph *g, rlx_op op, const char *name, size_t n_inputs,
                          const rlx_value *inputs, size_t n_attrs, const rlx_attr *attrs,
                          size_t out_cap, rlx_value *out, size_t *out_n) {
  if (!g) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_add: graph is NULL");
  RLX_TRY(rlx_graph_check_mutable(g, rlx_op_name(op)));
  if ((unsigned)op >= RLX_OP_COUNT) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_add: invalid op %d", (int)op);
  const rlx_op_info *info = rlx_op_info_get(op);
  char lbl[160];
  format_label(g->n_nodes, op, name, lbl, sizeof lbl);
  if (op == RLX_OP_INPUT || op == RLX_OP_PARAM || op == RLX_OP_CONSTANT)
    return RLX_ERR(INVALID_ARGUMENT, "%s: leaves are added with rlx_graph_add_input/_param/_constant", lbl);
  if ((int64_t)n_inputs < info->min_in || (int64_t)n_inputs > info->max_in) {
    if (info->min_in == info->max_in)
      return RLX_ERR(INVALID_ARGUMENT, "%s: expected %d inputs, got %zu", lbl, info->min_in, n_inputs);
    return RLX_ERR(INVALID_ARGUMENT, "%s: expected %d to %d inputs, got %zu", lbl, info->min_in, info->max_in, n_inputs);
  }
  if (n_inputs && !inputs) return RLX_ERR(INVALID_ARGUMENT, "%s: inputs is NULL", lbl);
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "%s: out is NULL", lbl);
  rlx_type in_types[256];
  for (size_t i = 0; i < n_inputs; i++) {
    if (inputs[i] >= g->n_vals) return RLX_ERR(NOT_FOUND, "%s: input %zu is value %u, which is not in this graph", lbl, i, inputs[i]);
    in_types[i] = g->types[inputs[i]];
  }
  rlx_node n = {.op = op, .n_in = (uint32_t)n_inputs};
  rlx_status *st = rlx_attrs_build(op, n_attrs, attrs, &n.attrs, &n.n_attrs);
  if (st) return rlx_status_annotate(st, "%s", lbl);
  rlx_type outs[RLX_MAX_NODE_OUTPUTS];
  rlx_infer_ctx c = {.g = g, .n = &n, .in = in_types, .out = outs, .n_out = 1};
  n.in = (rlx_value *)inputs; /* borrowed during inference */
  st = rlx_infer_fn_of(op)(&c);
  if (!st) st = sizes_fit(outs, c.n_out);
  n.in = NULL;
  if (!st && c.n_out > out_cap)
    st = RLX_ERR(INVALID_ARGUMENT, "op has %u outputs but out_cap is %zu", c.n_out, out_cap);
  if (!st) st = reserve(g, c.n_out);
  if (!st && n_inputs && !(n.in = malloc(n_inputs * sizeof(rlx_value)))) st = RLX_OOM();
  if (!st && name && !(n.name = rlx_strdup(name))) st = RLX_OOM();
  if (st) {
    free(n.in);
    rlx_attrs_free(n.attrs, n.n_attrs, false); /* graphs stay with the caller */
    return rlx_status_annotate(st, "%s", lbl);
  }
  if (n_inputs) memcpy(n.in, inputs, n_inputs * sizeof(rlx_value));
  append(g, &n, outs, c.n_out, out);
  if (out_n) *out_n = c.n_out;
  return NULL;
}

rlx_status *rlx_graph_add1(rlx_graph *g, rlx_op op, const char *name, size_t n_inputs,
                           const rlx_value *inputs, size_t n_attrs, const rlx_attr *attrs, rlx_value *out) {
  return rlx_graph_add(g, op, name, n_inputs, inputs, n_attrs, attrs, 1, out, NULL);
}

rlx_status *rlx_graph_set_outputs(rlx_graph *g, size_t n, const rlx_value *values) {
  if (!g || (n && !values)) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_set_outputs: NULL argument");
  if (n == 0) return RLX_ERR(INVALID_ARGUMENT, "a graph needs at least one output");
  RLX_TRY(rlx_graph_check_mutable(g, "rlx_graph_set_outputs"));
  for (size_t i = 0; i < n; i++)
    if (values[i] >= g->n_vals) return RLX_ERR(NOT_FOUND, "output %zu: value %u is not in this graph", i, values[i]);
  rlx_value *o = malloc(n * sizeof *o);
  char **names = calloc(n, sizeof *names);
  if (!o || !names) {
    free(o);
    free(names);
    return RLX_OOM();
  }
  for (size_t i = 0; i < n; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "out%zu", i);
    names[i] = rlx_strdup(buf);
    if (!names[i]) {
      for (size_t j = 0; j < i; j++) free(names[j]);
      free(o);
      free(names);
      return RLX_OOM();
    }
  }
  memcpy(o, values, n * sizeof *o);
  for (size_t i = 0; i < g->n_outputs; i++) free(g->output_names[i]);
  free(g->outputs);
  free(g->output_names);
  g->outputs = o;
  g->output_names = names;
  g->n_outputs = n;
  return NULL;
}

rlx_status *rlx_graph_set_output_name(rlx_graph *g, size_t i, const char *name) {
  if (!g) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_set_output_name: graph is NULL");
  if (i >= g->n_outputs) return RLX_ERR(OUT_OF_RANGE, "output index %zu, graph has %zu outputs", i, g->n_outputs);
  if (!name || !*name) return RLX_ERR(INVALID_ARGUMENT, "output %zu: empty name", i);
  for (size_t j = 0; j < g->n_outputs; j++)
    if (j != i && strcmp(g->output_names[j], name) == 0)
      return RLX_ERR(ALREADY_EXISTS, "output %zu: output %zu is already named '%s'", i, j, name);
  RLX_TRY(rlx_graph_check_mutable(g, "rlx_graph_set_output_name"));
  char *s = rlx_strdup(name);
  if (!s) return RLX_OOM();
  free(g->output_names[i]);
  g->output_names[i] = s;
  return NULL;
}

rlx_status *rlx_graph_output_index(const rlx_graph *g, const char *name, size_t *out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_output_index: NULL argument");
  for (size_t i = 0; name && i < g->n_outputs; i++)
    if (strcmp(g->output_names[i], name) == 0) return *out = i, NULL;
  char list[256] = "";
  for (size_t i = 0; i < g->n_outputs && strlen(list) < 200; i++) {
    strcat(list, i ? ", " : "");
    strncat(list, g->output_names[i], 48);
  }
  return RLX_ERR(NOT_FOUND, "no output named '%s' (outputs: %s)", name ? name : "(null)", g->n_outputs ? list : "none");
}

size_t rlx_graph_num_values(const rlx_graph *g) { return g ? g->n_vals : 0; }
size_t rlx_graph_num_nodes(const rlx_graph *g) { return g ? g->n_nodes : 0; }
const rlx_type *rlx_graph_value_type(const rlx_graph *g, rlx_value v) { return g && v < g->n_vals ? &g->types[v] : NULL; }
size_t rlx_graph_num_inputs(const rlx_graph *g) { return g ? g->n_inputs : 0; }
rlx_value rlx_graph_input_value(const rlx_graph *g, size_t i) { return g && i < g->n_inputs ? g->nodes[g->inputs[i]].out0 : RLX_NO_VALUE; }
const char *rlx_graph_input_name(const rlx_graph *g, size_t i) { return g && i < g->n_inputs ? g->nodes[g->inputs[i]].name : NULL; }
size_t rlx_graph_num_params(const rlx_graph *g) { return g ? g->n_params : 0; }
rlx_value rlx_graph_param_value(const rlx_graph *g, size_t i) { return g && i < g->n_params ? g->nodes[g->params[i]].out0 : RLX_NO_VALUE; }
const char *rlx_graph_param_name(const rlx_graph *g, size_t i) { return g && i < g->n_params ? g->nodes[g->params[i]].name : NULL; }
size_t rlx_graph_num_outputs(const rlx_graph *g) { return g ? g->n_outputs : 0; }
rlx_value rlx_graph_output_value(const rlx_graph *g, size_t i) { return g && i < g->n_outputs ? g->outputs[i] : RLX_NO_VALUE; }
const char *rlx_graph_output_name(const rlx_graph *g, size_t i) { return g && i < g->n_outputs ? g->output_names[i] : NULL; }
rlx_op rlx_graph_value_op(const rlx_graph *g, rlx_value v) { return g && v < g->n_vals ? rlx_value_node(g, v)->op : RLX_OP_COUNT; }

rlx_status *rlx_graph_find(const rlx_graph *g, const char *name, rlx_value *out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_find: NULL argument");
  for (size_t i = 0; name && i < g->n_inputs; i++)
    if (strcmp(g->nodes[g->inputs[i]].name, name) == 0) return *out = g->nodes[g->inputs[i]].out0, NULL;
  for (size_t i = 0; name && i < g->n_params; i++)
    if (strcmp(g->nodes[g->params[i]].name, name) == 0) return *out = g->nodes[g->params[i]].out0, NULL;
  return RLX_ERR(NOT_FOUND, "no input or param named '%s'", name ? name : "(null)");
}

/* ---- binding symbols: re-infer every node ---- */

rlx_status *rlx_graph_bind(const rlx_graph *g, const int64_t *sym, int64_t n_sym, rlx_type *types) {
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM && n->op != RLX_OP_CONSTANT) continue;
    rlx_type t = g->types[n->out0];
    for (int i = 0; i < t.rank; i++) {
      int64_t d = t.dims[i];
      if (d < -1 && RLX_DIM_SYMBOL_ID(d) < n_sym && sym[RLX_DIM_SYMBOL_ID(d)] >= 0) t.dims[i] = sym[RLX_DIM_SYMBOL_ID(d)];
      if (t.dims[i] < 0)
        return RLX_ERR(INVALID_ARGUMENT, "input '%s': dim %d (symbol s%lld) is not bound", n->name, i,
                       (long long)RLX_DIM_SYMBOL_ID(d));
    }
    types[n->out0] = t;
  }
  return rlx_graph_infer_nodes(g, sym, n_sym, types);
}

rlx_status *rlx_graph_infer_nodes(const rlx_graph *g, const int64_t *sym, int64_t n_sym, rlx_type *types) {
  rlx_type in_types[256];
  char label[160];
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM || n->op == RLX_OP_CONSTANT) continue;
    for (uint32_t i = 0; i < n->n_in; i++) in_types[i] = types[n->in[i]];
    rlx_infer_ctx c = {.g = g, .n = n, .in = in_types, .out = &types[n->out0], .n_out = 1, .sym = sym, .n_sym = n_sym};
    rlx_status *st = rlx_infer_fn_of(n->op)(&c);
    if (!st) st = sizes_fit(c.out, c.n_out);
    if (st) return rlx_status_annotate(st, "%s", rlx_node_label(g, n, label, sizeof label));
  }
  return NULL;
}

/* ---- dims ---- */

int64_t rlx_infer_dim(const rlx_infer_ctx *c, int64_t d) {
  if (d < -1 && c->sym && RLX_DIM_SYMBOL_ID(d) < c->n_sym && c->sym[RLX_DIM_SYMBOL_ID(d)] >= 0)
    return c->sym[RLX_DIM_SYMBOL_ID(d)];
  return d;
}

bool rlx_dim_broadcast(int64_t a, int64_t b, int64_t *out) {
  if (a == b) return *out = a, true;
  if (a == 1) return *out = b, true;
  if (b == 1) return *out = a, true;
  if (a < 0 && b >= 0) return *out = b, true; /* the symbol must bind to b (checked when bound) */
  if (b < 0 && a >= 0) return *out = a, true;
  if (a < 0 && b < 0) return *out = RLX_DIM_DYNAMIC, true;
  return false;
}

bool rlx_dim_compatible(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

rlx_status *rlx_shape_broadcast(const rlx_type *a, const rlx_type *b, rlx_type *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  int64_t dims[RLX_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (!rlx_dim_broadcast(da, db, &dims[i]))
      return RLX_ERR(INVALID_ARGUMENT, "shapes %s and %s do not broadcast (dim %d: %lld vs %lld)", RLX_TYPE_STR(a),
                     RLX_TYPE_STR(b), i, (long long)da, (long long)db);
  }
  out->rank = r;
  memcpy(out->dims, dims, sizeof(int64_t) * (size_t)r);
  return NULL;
}
