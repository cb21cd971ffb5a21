/* executable.c: rlx_executable: creation, modes, params, the run pipeline (lazy, eager,
 * compiled), runs, commits and syncs, the active extent. Handles live in exec_handles.c, the slot
 * arena in exec_slots.c, the per-node capability rules in exec_caps.c. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mlx/exec.h"
#include "mlx/exec_caps.h"

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

static void lock(const rlx_executable *ex) { pthread_mutex_lock((pthread_mutex_t *)&ex->mu); }
static void unlock(const rlx_executable *ex) { pthread_mutex_unlock((pthread_mutex_t *)&ex->mu); }

static size_t param_index(const rlx_executable *ex, const char *name) {
  size_t k = 0;
  while (k < ex->n_params && strcmp(ex->params[k].name, name)) k++;
  return k;
}

/* Gathers the params of g and of its sub-graphs (recursively), one entry per name. */
static rlx_status *collect_params(rlx_executable *ex, const rlx_graph *g) {
  for (size_t i = 0; i < g->n_params; i++) {
    const rlx_node *n = &g->nodes[g->params[i]];
    const rlx_type *t = &g->types[n->out0];
    size_t k = param_index(ex, n->name);
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

/* Lays out one 64-byte aligned slot per output when every output type is static (the arena
 * itself is allocated by its first user, exec_slots.c). */
static rlx_status *layout_slots(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  size_t off = 0;
  for (size_t i = 0; i < g->n_outputs; i++) {
    size_t nb;
    rlx_status *st = rlx_type_nbytes(&g->types[g->outputs[i]], &nb);
    if (st) { /* symbolic dims (or a size that does not fit): no arena */
      rlx_status_free(st);
      ex->no_arena = g->output_names[i];
      return NULL;
    }
    ex->slot_off[i] = off;
    ex->slot_nbytes[i] = nb;
    if (nb > SIZE_MAX - off - 64) return RLX_ERR(RESOURCE_EXHAUSTED, "slot arena size overflows");
    off += (nb + 63) / 64 * 64;
  }
  ex->arena_size = off ? off : 64;
  return NULL;
}

static rlx_status *init(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  RLX_TRY(collect_params(ex, g));
  for (size_t k = 0; k < g->n_nodes; k++) ex->n_consts += g->nodes[k].op == RLX_OP_CONSTANT;
  size_t nv = g->n_vals ? g->n_vals : 1, ni = g->n_inputs, no = g->n_outputs, np = ex->n_params, nc = ex->n_consts;
  ex->gparam = calloc(g->n_params + 1, sizeof *ex->gparam);
  ex->in = calloc(ni + 1, sizeof *ex->in);
  ex->consts = calloc(nc + 1, sizeof *ex->consts);
  ex->const_arr = calloc(nc + 1, sizeof *ex->const_arr);
  ex->types = calloc(nv, sizeof *ex->types);
  ex->ext_types = calloc(nv, sizeof *ex->ext_types);
  ex->vals = calloc(nv, sizeof *ex->vals);
  ex->cur = calloc(np + 1, sizeof *ex->cur);
  ex->leaves = calloc(ni + nc + np + 1, sizeof *ex->leaves);
  ex->outs = calloc(no, sizeof *ex->outs);
  ex->readback = calloc(no, sizeof *ex->readback);
  ex->pending = calloc(no, sizeof *ex->pending);
  ex->pending_types = calloc(no, sizeof *ex->pending_types);
  ex->out_types = calloc(no, sizeof *ex->out_types);
  ex->res = calloc(no, sizeof *ex->res);
  ex->slot_off = calloc(no, sizeof *ex->slot_off);
  ex->slot_nbytes = calloc(no, sizeof *ex->slot_nbytes);
  if (!ex->gparam || !ex->in || !ex->consts || !ex->const_arr || !ex->types || !ex->ext_types || !ex->vals || !ex->cur ||
      !ex->leaves || !ex->outs || !ex->readback || !ex->pending || !ex->pending_types || !ex->out_types || !ex->res || !ex->slot_off || !ex->slot_nbytes)
    return RLX_OOM();
  for (size_t i = 0; i < g->n_params; i++) ex->gparam[i] = param_index(ex, g->nodes[g->params[i]].name);
  for (size_t i = 0; i < ni; i++) {
    const rlx_node *n = &g->nodes[g->inputs[i]];
    ex->in[i] = (exec_input){.name = n->name, .val = n->out0, .decl = &g->types[n->out0], .feed = RLX_NO_FEED};
  }
  size_t c = 0;
  for (size_t k = 0; k < g->n_nodes; k++)
    if (g->nodes[k].op == RLX_OP_CONSTANT) ex->consts[c++] = g->nodes[k].out0;
  for (size_t i = 0; i < no; i++) ex->readback[i] = true;
  ex->n_syms = g->n_symbols < RLX_EXEC_MAX_SYMBOLS ? g->n_symbols : RLX_EXEC_MAX_SYMBOLS;
  if (g->n_symbols > RLX_EXEC_MAX_SYMBOLS)
    return RLX_ERR(UNIMPLEMENTED, "the graph uses %lld symbols; executables support at most %d", (long long)g->n_symbols,
                   RLX_EXEC_MAX_SYMBOLS);
  ex->rt = ex->types;
  RLX_TRY(layout_slots(ex));
  return rlx_mx_create(ex->device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU, &ex->ctx);
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
  pthread_mutex_init(&ex->mu, NULL);
  rlx_status *st = init(ex);
  if (st) {
    rlx_executable_free(ex);
    return st;
  }
  *out = ex;
  return NULL;
}

static void release_pending(rlx_executable *ex) {
  for (size_t i = 0; i < ex->g->n_outputs; i++) {
    rlx_mx_release(ex->pending[i]);
    ex->pending[i] = NULL;
  }
  ex->has_pending = false;
}

void rlx_executable_free(rlx_executable *ex) {
  if (!ex) return;
  if (ex->has_pending && ex->ctx) { /* let the committed run finish before its inputs go */
    rlx_mx_reset(ex->ctx);
    rlx_mx_eval(ex->ctx, ex->pending, ex->g->n_outputs);
  }
  if (ex->pending) release_pending(ex);
  rlx_mx_fn_free(ex->compiled);
  for (size_t i = 0; i < ex->n_params; i++) rlx_mx_release(ex->params[i].val);
  for (size_t i = 0; ex->in && i < ex->g->n_inputs; i++) {
    rlx_tensor_free(ex->in[i].host);
    rlx_mx_release(ex->in[i].dev);
  }
  for (size_t i = 0; ex->const_arr && i < ex->n_consts; i++) rlx_mx_release(ex->const_arr[i]);
  rlx_mx_free(ex->ctx);
  free(ex->params);
  free(ex->gparam);
  free(ex->in);
  free(ex->consts);
  free(ex->const_arr);
  free(ex->types);
  free(ex->ext_types);
  free(ex->vals);
  free(ex->cur);
  free(ex->leaves);
  free(ex->outs);
  free(ex->readback);
  free(ex->pending);
  free(ex->pending_types);
  free(ex->out_types);
  free(ex->res);
  free(ex->slot_off);
  free(ex->slot_nbytes);
  free(ex->arena);
  free(ex->ext_reason);
  pthread_mutex_destroy(&ex->mu);
  free(ex);
}

const rlx_graph *rlx_executable_graph(const rlx_executable *ex) { return ex->g; }
size_t rlx_executable_num_params(const rlx_executable *ex) { return ex->n_params; }
const char *rlx_executable_param_name(const rlx_executable *ex, size_t i) { return i < ex->n_params ? ex->params[i].name : NULL; }

rlx_mode rlx_executable_mode(const rlx_executable *ex) {
  lock(ex);
  rlx_mode m = ex->mode;
  unlock(ex);
  return m;
}

size_t rlx_executable_num_traces(const rlx_executable *ex) {
  lock(ex);
  size_t n = ex->n_traces;
  unlock(ex);
  return n;
}

bool rlx_executable_shapeless(const rlx_executable *ex) {
  lock(ex);
  bool s = ex->shapeless;
  unlock(ex);
  return s;
}

static void drop_compiled(rlx_executable *ex) {
  rlx_mx_fn_free(ex->compiled);
  ex->compiled = NULL;
}

rlx_status *rlx_executable_set_mode(rlx_executable *ex, rlx_mode mode) {
  rlx_mode m;
  RLX_TRY(resolve_mode(mode, &m));
  lock(ex);
  ex->mode = m;
  drop_compiled(ex);
  unlock(ex);
  return NULL;
}

rlx_status *rlx_executable_set_shapeless(rlx_executable *ex, bool shapeless) {
  if (shapeless) RLX_TRY(rlx_exec_check_shapeless(ex->g));
  lock(ex);
  if (ex->shapeless != shapeless) drop_compiled(ex);
  ex->shapeless = shapeless;
  unlock(ex);
  return NULL;
}

rlx_status *rlx_exec_check_type(const char *what, const char *name, const rlx_type *want, const rlx_type *got) {
  bool ok = got->dtype == want->dtype && got->rank == want->rank;
  for (int i = 0; ok && i < want->rank; i++) ok = want->dims[i] < 0 || want->dims[i] == got->dims[i];
  if (!ok) return RLX_ERR(INVALID_ARGUMENT, "%s '%s': expected %s, got %s", what, name, RLX_TYPE_STR(want), RLX_TYPE_STR(got));
  return NULL;
}

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
  RLX_TRY(rlx_exec_check_type("param", name, &ex->params[k].type, rlx_tensor_type(value)));
  lock(ex);
  rlx_status *st = rlx_exec_upload(ex, value, &ex->params[k].val);
  unlock(ex);
  return rlx_status_annotate(st, "param '%s'", name);
}

rlx_status *rlx_exec_upload(rlx_executable *ex, const rlx_tensor *value, rlx_mx_arr **slot) {
  rlx_mx *c = ex->ctx;
  rlx_mx_reset(c);
  rlx_mx_arr *a = rlx_mx_from_bytes(c, rlx_tensor_cdata(value), rlx_tensor_type(value));
  rlx_mx_eval(c, &a, 1);
  rlx_mx_arr *kept = rlx_mx_keep(c, a);
  rlx_status *st = rlx_mx_take_error(c);
  if (!st) {
    rlx_mx_release(*slot);
    *slot = kept;
  }
  rlx_mx_reset(c);
  return st;
}

rlx_status *rlx_executable_set_output_readback(rlx_executable *ex, size_t i, bool readback) {
  if (i >= ex->g->n_outputs) return RLX_ERR(OUT_OF_RANGE, "output %zu: the graph has %zu outputs", i, ex->g->n_outputs);
  lock(ex);
  ex->readback[i] = readback;
  unlock(ex);
  return NULL;
}

/* ---- the run pipeline ---- */

rlx_status *rlx_exec_find_input(const rlx_executable *ex, const char *name, size_t *out) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; name && i < g->n_inputs; i++)
    if (strcmp(ex->in[i].name, name) == 0) return *out = i, NULL;
  char list[512] = "";
  for (size_t i = 0; i < g->n_inputs && strlen(list) < 400; i++) {
    strcat(list, i ? ", " : "");
    strncat(list, ex->in[i].name, 64);
  }
  return RLX_ERR(NOT_FOUND, "no input named '%s' (inputs: %s)", name ? name : "(null)", g->n_inputs ? list : "none");
}

void rlx_exec_clear_sources(rlx_executable *ex) {
  for (size_t i = 0; i < ex->g->n_inputs; i++) ex->in[i].given = false, ex->in[i].data = NULL, ex->in[i].arr = NULL;
}

rlx_status *rlx_exec_source_handles(rlx_executable *ex) {
  for (size_t i = 0; i < ex->g->n_inputs; i++) {
    exec_input *in = &ex->in[i];
    if (in->given) continue;
    in->given = true;
    if (in->dev) {
      in->arr = in->dev;
      if (!rlx_mx_type(in->arr, &in->type)) return RLX_ERR(INTERNAL, "input '%s': device handle has no type", in->name);
    } else if (in->host) {
      in->data = rlx_tensor_cdata(in->host);
      in->type = *rlx_tensor_type(in->host);
    } else {
      in->given = false;
      return RLX_ERR(INVALID_ARGUMENT, "input '%s' (%s) was not given and has no handle", in->name, RLX_TYPE_STR(in->decl));
    }
  }
  return NULL;
}

/* Passed tensors become the sources of their inputs. */
static rlx_status *source_named(rlx_executable *ex, size_t n, const char *const *names, const rlx_tensor *const *values) {
  if (n && (!names || !values)) return RLX_ERR(INVALID_ARGUMENT, "input names or values are NULL");
  for (size_t j = 0; j < n; j++) {
    size_t k = j; /* names usually come in declaration order */
    if (!(j < ex->g->n_inputs && names[j] && strcmp(ex->in[j].name, names[j]) == 0)) RLX_TRY(rlx_exec_find_input(ex, names[j], &k));
    exec_input *in = &ex->in[k];
    if (in->given) return RLX_ERR(INVALID_ARGUMENT, "input '%s' given twice", names[j]);
    if (!values[j]) return RLX_ERR(INVALID_ARGUMENT, "input '%s': value is NULL", names[j]);
    in->given = true;
    in->data = rlx_tensor_cdata(values[j]);
    in->type = *rlx_tensor_type(values[j]);
  }
  return rlx_exec_source_handles(ex);
}

/* Checks the sources against the declared types and binds the symbols; re-infers the types when
 * a symbol changed size. */
static rlx_status *bind_types(rlx_executable *ex) {
  int64_t syms[RLX_EXEC_MAX_SYMBOLS];
  for (int64_t s = 0; s < ex->n_syms; s++) syms[s] = -1;
  for (size_t i = 0; i < ex->g->n_inputs; i++) {
    const exec_input *in = &ex->in[i];
    RLX_TRY(rlx_exec_check_type("input", in->name, in->decl, &in->type));
    for (int d = 0; d < in->decl->rank; d++) {
      if (in->decl->dims[d] >= -1) continue;
      int64_t s = RLX_DIM_SYMBOL_ID(in->decl->dims[d]), got = in->type.dims[d];
      if (syms[s] >= 0 && syms[s] != got)
        return RLX_ERR(INVALID_ARGUMENT, "input '%s' dim %d binds symbol s%lld to %lld, but it is already %lld", in->name, d,
                       (long long)s, (long long)got, (long long)syms[s]);
      syms[s] = got;
    }
  }
  if (ex->bound && !memcmp(syms, ex->syms, sizeof(int64_t) * (size_t)ex->n_syms)) return NULL;
  ex->bound = false;
  RLX_TRY(rlx_graph_bind(ex->g, syms, ex->n_syms, ex->types));
  memcpy(ex->syms, syms, sizeof(int64_t) * (size_t)ex->n_syms);
  ex->bound = true;
  ex->bind_gen++;
  return NULL;
}

static bool cut_rows(const rlx_executable *ex, const exec_input *in) {
  return in->decl->rank >= 1 && in->decl->dims[0] == ex->ext_upper;
}

static void set_ext_reason(rlx_executable *ex, rlx_status *why) {
  free(ex->ext_reason);
  ex->ext_reason = why ? rlx_strdup(rlx_status_message(why)) : NULL;
  rlx_status_free(why);
}

/* Points ex->rt at the types of this run: with the active extent when it applies. */
static rlx_status *extent_types(rlx_executable *ex) {
  ex->rt = ex->types;
  if (!ex->ext_upper || !ex->ext_graph_ok) return NULL;
  if (ex->ext_cached_gen != ex->bind_gen || ex->ext_cached_actual != ex->ext_actual) {
    const rlx_graph *g = ex->g;
    memcpy(ex->ext_types, ex->types, sizeof(rlx_type) * g->n_vals);
    for (size_t i = 0; i < g->n_inputs; i++)
      if (cut_rows(ex, &ex->in[i])) ex->ext_types[ex->in[i].val].dims[0] = ex->ext_actual;
    rlx_status *st = rlx_graph_infer_nodes(g, ex->syms, ex->n_syms, ex->ext_types);
    ex->ext_cached_ok = !st;
    ex->ext_cached_gen = ex->bind_gen;
    ex->ext_cached_actual = ex->ext_actual;
    set_ext_reason(ex, rlx_status_annotate(st, "active extent %lld of %lld", (long long)ex->ext_actual, (long long)ex->ext_upper));
  }
  if (ex->ext_cached_ok) ex->rt = ex->ext_types;
  return NULL;
}

/* The compiled function's trace (rlx_mx_trace_fn): leaves are inputs, constants, params. */
static rlx_mx_arr *param_lookup(void *ud, const char *name) {
  rlx_executable *ex = ud;
  size_t k = param_index(ex, name);
  return k < ex->n_params ? ex->cur[k] : NULL;
}

static void bind_leaf_vals(rlx_executable *ex, rlx_mx_arr *const *leaves) {
  const rlx_graph *g = ex->g;
  size_t ni = g->n_inputs, nc = ex->n_consts;
  memset(ex->vals, 0, sizeof(rlx_mx_arr *) * g->n_vals);
  for (size_t i = 0; i < ni; i++) ex->vals[ex->in[i].val] = leaves[i];
  for (size_t j = 0; j < nc; j++) ex->vals[ex->consts[j]] = leaves[ni + j];
  for (size_t k = 0; k < ex->n_params; k++) ex->cur[k] = leaves[ni + nc + k];
  for (size_t i = 0; i < g->n_params; i++) ex->vals[g->nodes[g->params[i]].out0] = ex->cur[ex->gparam[i]];
}

static rlx_status *lower_outputs(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out, bool eager) {
  rlx_lower L = {.mx = c, .g = ex->g, .types = ex->rt, .vals = ex->vals, .eager = eager, .param = param_lookup, .param_ud = ex};
  RLX_TRY(rlx_lower_graph(&L));
  for (size_t i = 0; i < ex->g->n_outputs; i++) out[i] = ex->vals[ex->g->outputs[i]];
  return NULL;
}

static rlx_status *trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  rlx_executable *ex = ud;
  size_t want = ex->g->n_inputs + ex->n_consts + ex->n_params;
  if (n_in != want || n_out != ex->g->n_outputs)
    return RLX_ERR(INTERNAL, "compiled function called with %zu leaves and %zu outputs, expected %zu and %zu", n_in, n_out, want,
                   ex->g->n_outputs);
  ex->n_traces++;
  bind_leaf_vals(ex, in);
  return lower_outputs(ex, c, out, false);
}

/* Builds the leaves of this run in ex->leaves (inputs cut to the active extent). */
static void make_leaves(rlx_executable *ex, rlx_mx *c) {
  const rlx_graph *g = ex->g;
  size_t ni = g->n_inputs, nc = ex->n_consts;
  bool cut = ex->rt == ex->ext_types;
  for (size_t i = 0; i < ni; i++) {
    const exec_input *in = &ex->in[i];
    const rlx_type *t = &ex->rt[in->val];
    if (!in->arr) {
      ex->leaves[i] = rlx_mx_from_bytes(c, in->data, t); /* a row cut is a prefix of the bytes */
    } else if (cut && cut_rows(ex, in)) {
      int64_t lo[RLX_MAX_RANK] = {0}, hi[RLX_MAX_RANK], st[RLX_MAX_RANK];
      for (int d = 0; d < t->rank; d++) hi[d] = t->dims[d], st[d] = 1;
      ex->leaves[i] = rlx_mx_slice(c, in->arr, t->rank, lo, hi, st);
    } else {
      ex->leaves[i] = in->arr;
    }
  }
  for (size_t j = 0; j < nc; j++) {
    if (!ex->const_arr[j]) {
      const rlx_node *n = rlx_value_node(g, ex->consts[j]);
      ex->const_arr[j] = rlx_mx_keep(c, rlx_mx_from_bytes(c, n->data, &g->types[ex->consts[j]]));
    }
    ex->leaves[ni + j] = ex->const_arr[j];
  }
  for (size_t k = 0; k < ex->n_params; k++) ex->leaves[ni + nc + k] = ex->params[k].val;
}

/* Checks the outputs' shapes against the inferred types and casts them to the declared dtypes. */
static rlx_status *conform_outputs(rlx_executable *ex, rlx_mx *c) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; i < g->n_outputs; i++) {
    const rlx_type *want = &ex->rt[g->outputs[i]];
    rlx_type got;
    if (!rlx_mx_type(ex->outs[i], &got)) return RLX_ERR(INTERNAL, "output %zu ('%s') has no rlx type", i, g->output_names[i]);
    bool same = got.rank == want->rank && !memcmp(got.dims, want->dims, sizeof(int64_t) * (size_t)got.rank);
    if (!same)
      return RLX_ERR(INTERNAL, "output %zu ('%s'): MLX computed %s but the graph infers %s", i, g->output_names[i],
                     RLX_TYPE_STR(&got), RLX_TYPE_STR(want));
    if (got.dtype != want->dtype) ex->outs[i] = rlx_mx_astype(c, ex->outs[i], want->dtype);
  }
  return rlx_mx_take_error(c);
}

rlx_status *rlx_exec_execute(rlx_executable *ex, bool async) {
  const rlx_graph *g = ex->g;
  RLX_TRY(bind_types(ex));
  RLX_TRY(extent_types(ex));
  for (size_t k = 0; k < ex->n_params; k++)
    if (!ex->params[k].val) return RLX_ERR(FAILED_PRECONDITION, "param '%s' was not set (rlx_executable_set_param)", ex->params[k].name);
  rlx_mx *c = ex->ctx;
  rlx_mx_reset(c);
  make_leaves(ex, c);
  RLX_TRY(rlx_mx_take_error(c));
  size_t nl = g->n_inputs + ex->n_consts + ex->n_params;
  if (ex->mode == RLX_MODE_COMPILED) {
    if (!ex->compiled) RLX_TRY(rlx_mx_compile(trace, ex, ex->shapeless, &ex->compiled));
    if (!rlx_mx_call(c, ex->compiled, ex->leaves, nl, ex->outs, g->n_outputs)) return rlx_mx_take_error(c);
  } else {
    bind_leaf_vals(ex, ex->leaves);
    RLX_TRY(lower_outputs(ex, c, ex->outs, ex->mode == RLX_MODE_EAGER));
  }
  RLX_TRY(conform_outputs(ex, c));
  if (async) rlx_mx_async_eval(c, ex->outs, g->n_outputs);
  else rlx_mx_eval(c, ex->outs, g->n_outputs);
  return rlx_mx_take_error(c);
}

/* Host tensors for the outputs whose readback is on (ex->res; NULL elsewhere). */
static rlx_status *alloc_outputs(rlx_executable *ex, const rlx_type *types) {
  size_t n = ex->g->n_outputs;
  memset(ex->res, 0, n * sizeof *ex->res);
  for (size_t i = 0; i < n; i++) {
    if (!ex->readback[i]) continue;
    rlx_status *st = rlx_tensor_create(types[i].dtype, types[i].rank, types[i].dims, NULL, 0, &ex->res[i]);
    if (st) return st;
  }
  return NULL;
}

static void discard_outputs(rlx_executable *ex) {
  for (size_t i = 0; i < ex->g->n_outputs; i++) rlx_tensor_free(ex->res[i]), ex->res[i] = NULL;
}

/* Copies arrs into the tensors of alloc_outputs and hands them to outputs; all or nothing. */
static rlx_status *fill_outputs(rlx_executable *ex, rlx_mx_arr *const *arrs, rlx_tensor **outputs) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; i < g->n_outputs; i++) {
    rlx_tensor *t = ex->res[i];
    if (t && !rlx_mx_to_host(ex->ctx, arrs[i], rlx_tensor_data(t), rlx_tensor_nbytes(t)))
      return rlx_status_annotate(rlx_mx_take_error(ex->ctx), "output %zu ('%s')", i, g->output_names[i]);
  }
  memcpy(outputs, ex->res, g->n_outputs * sizeof *ex->res);
  memset(ex->res, 0, g->n_outputs * sizeof *ex->res);
  return NULL;
}

static void output_types(const rlx_executable *ex, rlx_type *out) {
  for (size_t i = 0; i < ex->g->n_outputs; i++) out[i] = ex->rt[ex->g->outputs[i]];
}

static rlx_status *check_outputs_arg(const rlx_executable *ex, size_t n_outputs, rlx_tensor **outputs) {
  if (!outputs) return RLX_ERR(INVALID_ARGUMENT, "outputs is NULL");
  if (n_outputs != ex->g->n_outputs)
    return RLX_ERR(INVALID_ARGUMENT, "n_outputs is %zu but the graph has %zu outputs", n_outputs, ex->g->n_outputs);
  return NULL;
}

/* The common start of named runs: sources from the call and the handles, then execution. */
static rlx_status *execute_named(rlx_executable *ex, size_t n, const char *const *names, const rlx_tensor *const *values, bool async) {
  rlx_exec_clear_sources(ex);
  RLX_TRY(source_named(ex, n, names, values));
  return rlx_exec_execute(ex, async);
}

rlx_status *rlx_executable_run(rlx_executable *ex, size_t n_inputs, const char *const *names,
                               const rlx_tensor *const *values, size_t n_outputs, rlx_tensor **outputs) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_run: NULL executable");
  RLX_TRY(check_outputs_arg(ex, n_outputs, outputs));
  lock(ex);
  rlx_status *st = execute_named(ex, n_inputs, names, values, false);
  if (!st) st = rlx_exec_apply_feeds(ex);
  if (!st) output_types(ex, ex->out_types), st = alloc_outputs(ex, ex->out_types);
  if (!st) st = fill_outputs(ex, ex->outs, outputs);
  discard_outputs(ex);
  rlx_mx_reset(ex->ctx);
  unlock(ex);
  return st;
}

rlx_status *rlx_executable_warmup(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  const rlx_tensor *const *values) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_warmup: NULL argument");
  lock(ex);
  rlx_status *st = execute_named(ex, n_inputs, names, values, false);
  rlx_mx_reset(ex->ctx);
  unlock(ex);
  return st;
}

/* ---- asynchronous runs ---- */

rlx_status *rlx_executable_commit(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  const rlx_tensor *const *values) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_commit: NULL executable");
  lock(ex);
  rlx_status *st = execute_named(ex, n_inputs, names, values, true);
  if (!st) st = rlx_exec_apply_feeds(ex);
  if (!st) {
    release_pending(ex);
    for (size_t i = 0; i < ex->g->n_outputs; i++) ex->pending[i] = rlx_mx_keep(ex->ctx, ex->outs[i]);
    output_types(ex, ex->pending_types);
    st = rlx_mx_take_error(ex->ctx);
    if (st) release_pending(ex);
    else ex->has_pending = true;
  }
  rlx_mx_reset(ex->ctx);
  unlock(ex);
  return st;
}

rlx_status *rlx_executable_sync(rlx_executable *ex, size_t n_outputs, rlx_tensor **outputs) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_sync: NULL executable");
  if (outputs) RLX_TRY(check_outputs_arg(ex, n_outputs, outputs));
  lock(ex);
  rlx_status *st = NULL;
  if (!ex->has_pending) {
    if (outputs) st = RLX_ERR(FAILED_PRECONDITION, "no committed run to read (rlx_executable_commit)");
  } else {
    rlx_mx_reset(ex->ctx);
    rlx_mx_eval(ex->ctx, ex->pending, ex->g->n_outputs);
    st = rlx_mx_take_error(ex->ctx);
    if (!st && outputs) st = alloc_outputs(ex, ex->pending_types);
    if (!st && outputs) st = fill_outputs(ex, ex->pending, outputs);
    discard_outputs(ex);
    release_pending(ex);
    rlx_mx_reset(ex->ctx);
  }
  unlock(ex);
  return st;
}

bool rlx_executable_pending(const rlx_executable *ex) {
  lock(ex);
  bool p = ex->has_pending;
  unlock(ex);
  return p;
}

/* ---- active extent ---- */

rlx_status *rlx_executable_set_active_extent(rlx_executable *ex, int64_t actual, int64_t upper) {
  bool clear = actual == 0 && upper == 0;
  if (!clear && !(actual > 0 && actual <= upper))
    return RLX_ERR(INVALID_ARGUMENT, "active extent %lld of %lld: expected 0 < actual <= upper (or 0, 0 to clear)", (long long)actual,
                   (long long)upper);
  rlx_status *why = clear ? NULL : rlx_exec_check_extent(ex->g, upper);
  lock(ex);
  ex->ext_actual = actual;
  ex->ext_upper = upper;
  ex->ext_graph_ok = !clear && !why;
  ex->ext_cached_gen = 0;
  set_ext_reason(ex, why);
  unlock(ex);
  return NULL;
}

const char *rlx_executable_active_extent_fallback(const rlx_executable *ex) {
  lock(ex);
  const char *r = ex->ext_reason;
  unlock(ex);
  return r;
}
