/* executable.c: rlx_executable: params, input binding, modes (lazy, eager, compiled), outputs. */
#include "rlx/executable.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mlx/lower.h"

/* A param of the graph or of any of its sub-graphs (sub-graph params resolve by name). */
typedef struct exec_param {
  const char *name;
  rlx_type type;
  rlx_mx_arr *val; /* kept; NULL until set */
} exec_param;

struct rlx_executable {
  const rlx_graph *g;
  rlx_device device;
  rlx_mode mode;
  exec_param *params;
  size_t n_params;
  rlx_mx_arr **cur;     /* per param: the arrays the current lowering uses (values or trace leaves) */
  rlx_mx_arr **consts;  /* per value; kept constant arrays, made on first use */
  rlx_type *types;      /* bound types of every value */
  int64_t *syms;        /* current symbol binding (g->n_symbols entries) */
  bool bound;
  rlx_mx_fn *compiled;
  pthread_mutex_t mu;
  /* per run (valid while mu is held) */
  rlx_mx_arr **vals;
};

const char *rlx_mode_name(rlx_mode m) {
  switch (m) {
    case RLX_MODE_LAZY: return "lazy";
    case RLX_MODE_EAGER: return "eager";
    case RLX_MODE_COMPILED: return "compiled";
    default: return "default";
  }
}

rlx_status *rlx_mode_from_name(const char *s, rlx_mode *out) {
  static const rlx_mode modes[] = {RLX_MODE_LAZY, RLX_MODE_EAGER, RLX_MODE_COMPILED, RLX_MODE_DEFAULT};
  for (size_t i = 0; s && i < RLX_ARRAY_LEN(modes); i++)
    if (strcasecmp(s, rlx_mode_name(modes[i])) == 0) return *out = modes[i], NULL;
  return RLX_ERR(INVALID_ARGUMENT, "unknown mode '%s' (expected eager, lazy or compiled)", s ? s : "(null)");
}

const char *rlx_device_name(rlx_device d) { return d == RLX_DEVICE_GPU ? "gpu" : "cpu"; }

rlx_status *rlx_device_from_name(const char *s, rlx_device *out) {
  if (s && strcasecmp(s, "cpu") == 0) return *out = RLX_DEVICE_CPU, NULL;
  if (s && strcasecmp(s, "gpu") == 0) return *out = RLX_DEVICE_GPU, NULL;
  return RLX_ERR(INVALID_ARGUMENT, "unknown device '%s' (expected cpu or gpu)", s ? s : "(null)");
}

bool rlx_gpu_available(void) { return rlx_mx_gpu_available(); }
const char *rlx_mlx_version(void) { return rlx_mx_version(); }

static rlx_status *resolve_mode(rlx_mode m, rlx_mode *out) {
  if (m != RLX_MODE_DEFAULT) {
    if (m < RLX_MODE_LAZY || m > RLX_MODE_COMPILED) return RLX_ERR(INVALID_ARGUMENT, "invalid mode %d", (int)m);
    return *out = m, NULL;
  }
  const char *env = getenv("RLX_MLX_MODE");
  if (!env || !*env) return *out = RLX_MODE_LAZY, NULL;
  rlx_status *st = rlx_mode_from_name(env, out);
  if (!st && *out == RLX_MODE_DEFAULT) st = RLX_ERR(INVALID_ARGUMENT, "unknown mode 'default'");
  return rlx_status_annotate(st, "environment variable RLX_MLX_MODE");
}

/* Gathers the params of g and of its sub-graphs (recursively), one entry per name. */
static rlx_status *collect_params(rlx_executable *ex, const rlx_graph *g) {
  for (size_t i = 0; i < g->n_params; i++) {
    const rlx_node *n = &g->nodes[g->params[i]];
    const rlx_type *t = &g->types[n->out0];
    size_t k = 0;
    while (k < ex->n_params && strcmp(ex->params[k].name, n->name)) k++;
    if (k < ex->n_params) {
      const rlx_type *u = &ex->params[k].type;
      bool same = u->dtype == t->dtype && u->rank == t->rank && !memcmp(u->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
      if (!same)
        return RLX_ERR(INVALID_ARGUMENT, "param '%s' is declared as %s and as %s in a sub-graph", n->name, RLX_TYPE_STR(u), RLX_TYPE_STR(t));
      continue;
    }
    exec_param *p = realloc(ex->params, (ex->n_params + 1) * sizeof *p);
    if (!p) return RLX_OOM();
    ex->params = p;
    ex->params[ex->n_params++] = (exec_param){.name = n->name, .type = *t};
  }
  for (size_t k = 0; k < g->n_nodes; k++)
    for (uint32_t a = 0; a < g->nodes[k].n_attrs; a++)
      if (g->nodes[k].attrs[a].kind == RLX_ATTR_GRAPH) RLX_TRY(collect_params(ex, g->nodes[k].attrs[a].graph));
  return NULL;
}

static size_t param_index(const rlx_executable *ex, const char *name) {
  size_t k = 0;
  while (k < ex->n_params && strcmp(ex->params[k].name, name)) k++;
  return k;
}

/* Sub-graph param lookup for the lowering (rlx_param_lookup_fn). */
static rlx_mx_arr *param_lookup(void *ud, const char *name) {
  rlx_executable *ex = ud;
  size_t k = param_index(ex, name);
  return k < ex->n_params ? ex->cur[k] : NULL;
}

rlx_status *rlx_executable_create(const rlx_graph *g, rlx_device device, rlx_mode mode, rlx_executable **out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_create: NULL argument");
  if (g->n_outputs == 0) return RLX_ERR(INVALID_ARGUMENT, "the graph has no outputs (rlx_graph_set_outputs)");
  if (device != RLX_DEVICE_CPU && device != RLX_DEVICE_GPU) return RLX_ERR(INVALID_ARGUMENT, "invalid device %d", (int)device);
  rlx_mode m;
  RLX_TRY(resolve_mode(mode, &m));
  if (device == RLX_DEVICE_GPU && !rlx_mx_gpu_available())
    return RLX_ERR(UNAVAILABLE, "no GPU: MLX %s in this process has no usable GPU backend or device (install mlx-cuda-13 on a CUDA machine)",
                   rlx_mx_version());
  rlx_executable *ex = calloc(1, sizeof *ex);
  if (!ex) return RLX_OOM();
  ex->g = g;
  ex->device = device;
  ex->mode = m;
  rlx_status *st = collect_params(ex, g);
  if (st) {
    rlx_executable_free(ex);
    return st;
  }
  ex->cur = calloc(ex->n_params ? ex->n_params : 1, sizeof *ex->cur);
  ex->consts = calloc(g->n_vals, sizeof *ex->consts);
  ex->types = calloc(g->n_vals, sizeof *ex->types);
  ex->vals = calloc(g->n_vals, sizeof *ex->vals);
  ex->syms = calloc(g->n_symbols ? (size_t)g->n_symbols : 1, sizeof *ex->syms);
  if (!ex->cur || !ex->consts || !ex->types || !ex->vals || !ex->syms) {
    rlx_executable_free(ex);
    return RLX_OOM();
  }
  pthread_mutex_init(&ex->mu, NULL);
  *out = ex;
  return NULL;
}

void rlx_executable_free(rlx_executable *ex) {
  if (!ex) return;
  rlx_mx_fn_free(ex->compiled);
  for (size_t i = 0; i < ex->n_params; i++) rlx_mx_release(ex->params[i].val);
  free(ex->cur);
  for (size_t i = 0; ex->consts && i < ex->g->n_vals; i++) rlx_mx_release(ex->consts[i]);
  free(ex->params);
  free(ex->consts);
  free(ex->types);
  free(ex->vals);
  free(ex->syms);
  pthread_mutex_destroy(&ex->mu);
  free(ex);
}

rlx_mode rlx_executable_mode(const rlx_executable *ex) { return ex->mode; }
size_t rlx_executable_num_params(const rlx_executable *ex) { return ex->n_params; }
const char *rlx_executable_param_name(const rlx_executable *ex, size_t i) { return i < ex->n_params ? ex->params[i].name : NULL; }

rlx_status *rlx_executable_set_mode(rlx_executable *ex, rlx_mode mode) {
  rlx_mode m;
  RLX_TRY(resolve_mode(mode, &m));
  pthread_mutex_lock(&ex->mu);
  ex->mode = m;
  rlx_mx_fn_free(ex->compiled);
  ex->compiled = NULL;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

static rlx_status *check_tensor(const char *what, const char *name, const rlx_type *want, const rlx_tensor *t) {
  const rlx_type *got = rlx_tensor_type(t);
  bool ok = got->dtype == want->dtype && got->rank == want->rank;
  for (int i = 0; ok && i < want->rank; i++) ok = want->dims[i] < 0 || want->dims[i] == got->dims[i];
  if (!ok) return RLX_ERR(INVALID_ARGUMENT, "%s '%s': expected %s, got %s", what, name, RLX_TYPE_STR(want), RLX_TYPE_STR(got));
  return NULL;
}

static rlx_mx_device mx_device(const rlx_executable *ex) { return ex->device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU; }

rlx_status *rlx_executable_set_param(rlx_executable *ex, const char *name, const rlx_tensor *value) {
  if (!ex || !name || !value) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_param: NULL argument");
  size_t k = param_index(ex, name);
  if (k == ex->n_params) {
    char list[512] = "";
    for (size_t i = 0; i < ex->n_params && strlen(list) < 400; i++) {
      strcat(list, i ? ", " : "");
      strncat(list, ex->params[i].name, 64);
    }
    return RLX_ERR(NOT_FOUND, "no param named '%s' (params: %s)", name, ex->n_params ? list : "none");
  }
  RLX_TRY(check_tensor("param", name, &ex->params[k].type, value));
  rlx_mx *c;
  RLX_TRY(rlx_mx_create(mx_device(ex), &c));
  rlx_mx_arr *a = rlx_mx_from_bytes(c, rlx_tensor_cdata(value), rlx_tensor_type(value));
  rlx_mx_eval(c, &a, 1);
  rlx_mx_arr *kept = rlx_mx_keep(c, a);
  rlx_status *st = rlx_mx_take_error(c);
  rlx_mx_free(c);
  if (st) return rlx_status_annotate(st, "param '%s'", name);
  pthread_mutex_lock(&ex->mu);
  rlx_mx_release(ex->params[k].val);
  ex->params[k].val = kept;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

/* Matches the named inputs to the graph inputs and binds symbols; fills order[i] = the tensor
 * for graph input i. */
static rlx_status *bind_inputs(rlx_executable *ex, size_t n, const char *const *names, const rlx_tensor *const *values,
                               const rlx_tensor **order) {
  const rlx_graph *g = ex->g;
  if (n && (!names || !values)) return RLX_ERR(INVALID_ARGUMENT, "input names or values are NULL");
  for (size_t i = 0; i < g->n_inputs; i++) order[i] = NULL;
  for (size_t j = 0; j < n; j++) {
    size_t k = g->n_inputs;
    for (size_t i = 0; i < g->n_inputs && names[j]; i++)
      if (strcmp(g->nodes[g->inputs[i]].name, names[j]) == 0) k = i;
    if (k == g->n_inputs) {
      char list[512] = "";
      for (size_t i = 0; i < g->n_inputs && strlen(list) < 400; i++) {
        strcat(list, i ? ", " : "");
        strncat(list, g->nodes[g->inputs[i]].name, 64);
      }
      return RLX_ERR(NOT_FOUND, "no input named '%s' (inputs: %s)", names[j] ? names[j] : "(null)", g->n_inputs ? list : "none");
    }
    if (order[k]) return RLX_ERR(INVALID_ARGUMENT, "input '%s' given twice", names[j]);
    if (!values[j]) return RLX_ERR(INVALID_ARGUMENT, "input '%s': value is NULL", names[j]);
    order[k] = values[j];
  }
  int64_t syms[64];
  int64_t ns = g->n_symbols < 64 ? g->n_symbols : 64;
  for (int64_t s = 0; s < ns; s++) syms[s] = -1;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const rlx_node *nd = &g->nodes[g->inputs[i]];
    if (!order[i]) return RLX_ERR(INVALID_ARGUMENT, "input '%s' (%s) was not given", nd->name, RLX_TYPE_STR(&g->types[nd->out0]));
    const rlx_type *want = &g->types[nd->out0];
    RLX_TRY(check_tensor("input", nd->name, want, order[i]));
    for (int d = 0; d < want->rank; d++) {
      if (want->dims[d] >= -1) continue;
      int64_t s = RLX_DIM_SYMBOL_ID(want->dims[d]), got = rlx_tensor_dims(order[i])[d];
      if (s >= 64) return RLX_ERR(UNIMPLEMENTED, "symbol s%lld: at most 64 symbols", (long long)s);
      if (syms[s] >= 0 && syms[s] != got)
        return RLX_ERR(INVALID_ARGUMENT, "input '%s' dim %d binds symbol s%lld to %lld, but it is already %lld", nd->name, d,
                       (long long)s, (long long)got, (long long)syms[s]);
      syms[s] = got;
    }
  }
  bool same = ex->bound;
  for (int64_t s = 0; same && s < ns; s++) same = ex->syms[s] == syms[s];
  if (!same) {
    RLX_TRY(rlx_graph_bind(g, syms, ns, ex->types));
    memcpy(ex->syms, syms, sizeof(int64_t) * (size_t)ns);
    ex->bound = true;
  }
  return NULL;
}

/* Binds leaf values (inputs from `order`, params, constants) into vals. */
static void bind_leaves(rlx_executable *ex, rlx_mx *c, const rlx_tensor **order, rlx_mx_arr **vals) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const rlx_node *nd = &g->nodes[g->inputs[i]];
    vals[nd->out0] = rlx_mx_from_bytes(c, rlx_tensor_cdata(order[i]), rlx_tensor_type(order[i]));
  }
  for (size_t i = 0; i < g->n_params; i++) vals[g->nodes[g->params[i]].out0] = ex->cur[param_index(ex, g->nodes[g->params[i]].name)];
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *nd = &g->nodes[k];
    if (nd->op != RLX_OP_CONSTANT) continue;
    if (!ex->consts[nd->out0]) ex->consts[nd->out0] = rlx_mx_keep(c, rlx_mx_from_bytes(c, nd->data, &g->types[nd->out0]));
    vals[nd->out0] = ex->consts[nd->out0];
  }
}

/* The compiled function's leaves: inputs (declaration order), then constants (node order), then
 * the params of the graph and its sub-graphs (rlx_executable_param_name order). Returns the count
 * of input and constant leaves written to `leaves` (the params follow them). */
static size_t leaf_values(const rlx_graph *g, rlx_value *leaves) {
  size_t n = 0;
  for (size_t i = 0; i < g->n_inputs; i++) leaves[n++] = g->nodes[g->inputs[i]].out0;
  for (size_t k = 0; k < g->n_nodes; k++)
    if (g->nodes[k].op == RLX_OP_CONSTANT) leaves[n++] = g->nodes[k].out0;
  return n;
}

static rlx_status *trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  rlx_executable *ex = ud;
  const rlx_graph *g = ex->g;
  rlx_mx_arr **vals = calloc(g->n_vals, sizeof *vals);
  rlx_value *leaves = malloc(sizeof(rlx_value) * (g->n_nodes + 1));
  if (!vals || !leaves) {
    free(vals);
    free(leaves);
    return RLX_OOM();
  }
  size_t nl = leaf_values(g, leaves);
  rlx_status *st = NULL;
  if (nl + ex->n_params != n_in) st = RLX_ERR(INTERNAL, "compiled function got %zu leaves, expected %zu", n_in, nl + ex->n_params);
  for (size_t i = 0; !st && i < nl; i++) vals[leaves[i]] = in[i];
  for (size_t i = 0; !st && i < ex->n_params; i++) ex->cur[i] = in[nl + i];
  for (size_t i = 0; !st && i < g->n_params; i++) vals[g->nodes[g->params[i]].out0] = ex->cur[param_index(ex, g->nodes[g->params[i]].name)];
  rlx_lower L = {.mx = c, .g = g, .types = ex->types, .vals = vals, .param = param_lookup, .param_ud = ex};
  if (!st) st = rlx_lower_graph(&L);
  for (size_t i = 0; !st && i < n_out; i++) out[i] = vals[g->outputs[i]];
  free(vals);
  free(leaves);
  return st;
}

/* Copies output arrays to new host tensors (cast to the declared dtype if MLX differs). */
static rlx_status *read_outputs(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **arrs, rlx_tensor **outputs) {
  const rlx_graph *g = ex->g;
  size_t n = g->n_outputs;
  rlx_tensor **res = calloc(n, sizeof *res);
  if (!res) return RLX_OOM();
  rlx_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++) {
    const rlx_type *t = &ex->types[g->outputs[i]];
    rlx_type at;
    rlx_mx_arr *a = arrs[i];
    if (rlx_mx_type(a, &at) && at.dtype != t->dtype) a = rlx_mx_astype(c, a, t->dtype);
    st = rlx_tensor_create(t->dtype, t->rank, t->dims, NULL, 0, &res[i]);
    if (!st && !rlx_mx_to_host(c, a, rlx_tensor_data(res[i]), rlx_tensor_nbytes(res[i]))) st = rlx_mx_take_error(c);
    if (st) st = rlx_status_annotate(st, "output %zu ('%s')", i, g->output_names[i]);
  }
  if (st) {
    for (size_t i = 0; i < n; i++) rlx_tensor_free(res[i]);
  } else {
    memcpy(outputs, res, n * sizeof *res);
  }
  free(res);
  return st;
}

static rlx_status *run_locked(rlx_executable *ex, size_t n_inputs, const char *const *names, const rlx_tensor *const *values,
                              rlx_tensor **outputs) {
  const rlx_graph *g = ex->g;
  const rlx_tensor **order = calloc(g->n_inputs ? g->n_inputs : 1, sizeof *order);
  if (!order) return RLX_OOM();
  rlx_status *st = bind_inputs(ex, n_inputs, names, values, order);
  for (size_t i = 0; !st && i < ex->n_params; i++) {
    if (!ex->params[i].val) st = RLX_ERR(FAILED_PRECONDITION, "param '%s' was not set (rlx_executable_set_param)", ex->params[i].name);
    ex->cur[i] = ex->params[i].val;
  }
  rlx_mx *c = NULL;
  if (!st) st = rlx_mx_create(mx_device(ex), &c);
  rlx_mx_arr **outs = NULL;
  if (!st && !(outs = calloc(g->n_outputs, sizeof *outs))) st = RLX_OOM();
  if (!st) {
    memset(ex->vals, 0, sizeof(rlx_mx_arr *) * g->n_vals);
    bind_leaves(ex, c, order, ex->vals);
    st = rlx_mx_take_error(c);
  }
  if (!st && ex->mode == RLX_MODE_COMPILED) {
    if (!ex->compiled) st = rlx_mx_compile(trace, ex, false, &ex->compiled);
    rlx_value *leaves = st ? NULL : malloc(sizeof(rlx_value) * (g->n_nodes + 1));
    rlx_mx_arr **lv = st ? NULL : malloc(sizeof(rlx_mx_arr *) * (g->n_nodes + ex->n_params + 1));
    if (!st && (!leaves || !lv)) st = RLX_OOM();
    if (!st) {
      size_t nl = leaf_values(g, leaves);
      for (size_t i = 0; i < nl; i++) lv[i] = ex->vals[leaves[i]];
      for (size_t i = 0; i < ex->n_params; i++) lv[nl + i] = ex->params[i].val;
      if (!rlx_mx_call(c, ex->compiled, lv, nl + ex->n_params, outs, g->n_outputs)) st = rlx_mx_take_error(c);
      for (size_t i = 0; i < ex->n_params; i++) ex->cur[i] = ex->params[i].val;
    }
    free(leaves);
    free(lv);
  } else if (!st) {
    rlx_lower L = {.mx = c, .g = g, .types = ex->types, .vals = ex->vals, .eager = ex->mode == RLX_MODE_EAGER,
                   .param = param_lookup, .param_ud = ex};
    st = rlx_lower_graph(&L);
    for (size_t i = 0; !st && i < g->n_outputs; i++) outs[i] = ex->vals[g->outputs[i]];
  }
  if (!st) {
    rlx_mx_eval(c, outs, g->n_outputs);
    st = rlx_mx_take_error(c);
  }
  if (!st && outputs) st = read_outputs(ex, c, outs, outputs);
  free(outs);
  rlx_mx_free(c);
  free(order);
  return st;
}

rlx_status *rlx_executable_run(rlx_executable *ex, size_t n_inputs, const char *const *names,
                               const rlx_tensor *const *values, size_t n_outputs, rlx_tensor **outputs) {
  if (!ex || !outputs) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_run: NULL argument");
  if (n_outputs != ex->g->n_outputs)
    return RLX_ERR(INVALID_ARGUMENT, "n_outputs is %zu but the graph has %zu outputs", n_outputs, ex->g->n_outputs);
  pthread_mutex_lock(&ex->mu);
  rlx_status *st = run_locked(ex, n_inputs, names, values, outputs);
  pthread_mutex_unlock(&ex->mu);
  return st;
}

rlx_status *rlx_executable_warmup(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  const rlx_tensor *const *values) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_warmup: NULL argument");
  pthread_mutex_lock(&ex->mu);
  rlx_status *st = run_locked(ex, n_inputs, names, values, NULL);
  pthread_mutex_unlock(&ex->mu);
  return st;
}
