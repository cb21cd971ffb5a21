/* executable.c: rlx_executable: creation, modes, params, runs, commits and syncs, the active
 * extent. The run pipeline lives in exec_pipeline.c, handles in exec_handles.c, the slot arena in
 * exec_slots.c, the per-node capability rules in exec_caps.c. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dist/dist_impl.h"
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
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_mode_from_name: out is NULL");
  for (size_t i = 0; s && i < RLX_ARRAY_LEN(modes); i++)
    if (strcasecmp(s, rlx_mode_name(modes[i])) == 0) return *out = modes[i], NULL;
  return RLX_ERR(INVALID_ARGUMENT, "unknown mode '%s' (expected eager, lazy or compiled)", s ? s : "(null)");
}

const char *rlx_device_name(rlx_device d) { return d == RLX_DEVICE_GPU ? "gpu" : "cpu"; }

rlx_status *rlx_device_from_name(const char *s, rlx_device *out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_device_from_name: out is NULL");
  if (s && strcasecmp(s, "cpu") == 0) return *out = RLX_DEVICE_CPU, NULL;
  if (s && strcasecmp(s, "gpu") == 0) return *out = RLX_DEVICE_GPU, NULL;
  return RLX_ERR(INVALID_ARGUMENT, "unknown device '%s' (expected cpu or gpu)", s ? s : "(null)");
}

bool rlx_gpu_available(void) { return rlx_mx_gpu_available(); }
const char *rlx_mlx_version(void) { return rlx_mx_version(); }
size_t rlx_mlx_peak_memory(void) { return rlx_mx_peak_memory(); }
void rlx_device_describe(rlx_device device, char *buf, size_t cap) {
  if (buf && cap) rlx_mx_device_name(device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU, buf, cap);
}

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

size_t rlx_exec_param_index(const rlx_executable *ex, const char *name) {
  size_t k = 0;
  while (k < ex->n_params && strcmp(ex->params[k].name, name)) k++;
  return k;
}

size_t rlx_exec_leaf_of(const rlx_executable *ex, rlx_value v) {
  const rlx_graph *g = ex->g;
  for (size_t j = 0; j < ex->n_consts; j++)
    if (ex->consts[j] == v) return g->n_inputs + j;
  for (size_t i = 0; i < g->n_params; i++)
    if (g->nodes[g->params[i]].out0 == v) return g->n_inputs + ex->n_consts + ex->gparam[i];
  return SIZE_MAX;
}

size_t rlx_exec_num_leaves(const rlx_executable *ex) {
  return ex->g->n_inputs + ex->n_consts + ex->n_params + ex->rng.n + ex->n_wl + 3 * ex->n_rp;
}

/* Gathers the params of g and of its sub-graphs (recursively), one entry per name. */
static rlx_status *collect_params(rlx_executable *ex, const rlx_graph *g) {
  for (size_t i = 0; i < g->n_params; i++) {
    const rlx_node *n = &g->nodes[g->params[i]];
    const rlx_type *t = &g->types[n->out0];
    size_t k = rlx_exec_param_index(ex, n->name);
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
  RLX_TRY(rlx_exec_rng_init(ex));
  if (ex->rng.n > RLX_EXEC_MAX_RNG)
    return RLX_ERR(UNIMPLEMENTED, "the graph has %zu Sample nodes; executables support at most %d", ex->rng.n, RLX_EXEC_MAX_RNG);
  for (size_t k = 0; k < g->n_nodes; k++) ex->n_consts += g->nodes[k].op == RLX_OP_CONSTANT;
  size_t nv = g->n_vals ? g->n_vals : 1, ni = g->n_inputs, no = g->n_outputs, np = ex->n_params, nc = ex->n_consts;
  ex->gparam = calloc(g->n_params + 1, sizeof *ex->gparam);
  ex->in = calloc(ni + 1, sizeof *ex->in);
  ex->consts = calloc(nc + 1, sizeof *ex->consts);
  ex->const_arr = calloc(nc + 1, sizeof *ex->const_arr);
  ex->types = calloc(nv, sizeof *ex->types);
  ex->ext_types = calloc(nv, sizeof *ex->ext_types);
  ex->vals = calloc(nv, sizeof *ex->vals);
  ex->cl = calloc(nv, sizeof *ex->cl);
  ex->cur = calloc(np + 1, sizeof *ex->cur);
  ex->outs = calloc(no + 1, sizeof *ex->outs);
  ex->readback = calloc(no, sizeof *ex->readback);
  ex->unwanted = calloc(no + 1, sizeof *ex->unwanted);
  ex->pending = calloc((RLX_MAX_PENDING + 1) * no, sizeof *ex->pending);
  ex->pending_types = calloc((RLX_MAX_PENDING + 1) * no, sizeof *ex->pending_types);
  ex->max_pending = 1;
  ex->out_types = calloc(no, sizeof *ex->out_types);
  ex->res = calloc(no, sizeof *ex->res);
  ex->slot_off = calloc(no, sizeof *ex->slot_off);
  ex->slot_nbytes = calloc(no, sizeof *ex->slot_nbytes);
  if (!ex->gparam || !ex->in || !ex->consts || !ex->const_arr || !ex->types || !ex->ext_types || !ex->vals || !ex->cl || !ex->cur ||
      !ex->outs || !ex->readback || !ex->unwanted || !ex->pending || !ex->pending_types || !ex->out_types || !ex->res || !ex->slot_off || !ex->slot_nbytes)
    return RLX_OOM();
  for (size_t i = 0; i < g->n_params; i++) ex->gparam[i] = rlx_exec_param_index(ex, g->nodes[g->params[i]].name);
  for (size_t i = 0; i < ni; i++) {
    const rlx_node *n = &g->nodes[g->inputs[i]];
    ex->in[i] = (exec_input){.name = n->name, .val = n->out0, .decl = &g->types[n->out0], .feed = RLX_NO_FEED};
  }
  size_t c = 0;
  for (size_t k = 0; k < g->n_nodes; k++)
    if (g->nodes[k].op == RLX_OP_CONSTANT) ex->consts[c++] = g->nodes[k].out0;
  for (size_t i = 0; i < no; i++) ex->readback[i] = -1;
  ex->n_syms = g->n_symbols < RLX_EXEC_MAX_SYMBOLS ? g->n_symbols : RLX_EXEC_MAX_SYMBOLS;
  if (g->n_symbols > RLX_EXEC_MAX_SYMBOLS)
    return RLX_ERR(UNIMPLEMENTED, "the graph uses %lld symbols; executables support at most %d", (long long)g->n_symbols,
                   RLX_EXEC_MAX_SYMBOLS);
  ex->rt = ex->types;
  RLX_TRY(rlx_exec_layout_init(ex));
  RLX_TRY(rlx_exec_repack_init(ex));
  RLX_TRY(rlx_exec_inplace_init(ex));
  if (!(ex->leaves = calloc(rlx_exec_num_leaves(ex) + 1, sizeof *ex->leaves))) return RLX_OOM();
  RLX_TRY(layout_slots(ex));
  RLX_TRY(rlx_exec_default_max_allocation(ex->device, &ex->max_alloc));
  RLX_TRY(rlx_mx_create(ex->device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU, &ex->ctx));
  rlx_mx_set_max_allocation(ex->ctx, ex->max_alloc);
  return NULL;
}

rlx_status *rlx_executable_create(const rlx_graph *g, rlx_device device, rlx_mode mode, rlx_executable **out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_create: NULL argument");
  if (g->n_outputs == 0) return RLX_ERR(INVALID_ARGUMENT, "the graph has no outputs (rlx_graph_set_outputs)");
  if (device != RLX_DEVICE_CPU && device != RLX_DEVICE_GPU) return RLX_ERR(INVALID_ARGUMENT, "invalid device %d", (int)device);
  rlx_mode m;
  bool cl = false;
  RLX_TRY(resolve_mode(mode, &m));
  RLX_TRY(rlx_exec_resolve_layout(device, &cl));
  if (device == RLX_DEVICE_GPU && !rlx_mx_gpu_available())
    return RLX_ERR(UNAVAILABLE, "no GPU: MLX %s in this process has no usable GPU backend or device (install mlx-cuda-13 on a CUDA machine)",
                   rlx_mx_version());
  if (device == RLX_DEVICE_GPU) rlx_mx_cuda_home(); /* for compiled mode's NVRTC, see rlx_executable_create */
  rlx_executable *ex = calloc(1, sizeof *ex);
  if (!ex) return RLX_OOM();
  rlx_graph_ref(g);
  ex->g = g;
  ex->device = device;
  ex->mode = m;
  ex->channels_last = cl;
  ex->collective = rlx_exec_has_collective(g);
  ex->precision = rlx_exec_default_precision();
  pthread_mutex_init(&ex->mu, NULL);
  rlx_status *st = init(ex);
  if (st) {
    rlx_executable_free(ex);
    return st;
  }
  *out = ex;
  return NULL;
}

/* Lets go of the oldest pending run's results. */
static void pop_pending(rlx_executable *ex) {
  size_t no = ex->g->n_outputs;
  for (size_t i = 0; i < no; i++) rlx_mx_release(ex->pending[i]);
  ex->n_pending--;
  memmove(ex->pending, ex->pending + no, ex->n_pending * no * sizeof *ex->pending);
  memmove(ex->pending_types, ex->pending_types + no, ex->n_pending * no * sizeof *ex->pending_types);
  memmove(ex->pending_seq, ex->pending_seq + 1, ex->n_pending * sizeof *ex->pending_seq);
  memset(ex->pending + ex->n_pending * no, 0, no * sizeof *ex->pending);
}

/* Evaluates the outputs of the oldest `runs` pending runs and the check vectors of the runs
 * committed up to commit number `upto`; the first failed check among those, whose vectors are then
 * let go. Committed runs with collectives complete here: with `watch`, the wait is bounded by the
 * group's timeout like a run's (a failure aborts the group). rlx_executable_free does not watch:
 * the group may already be gone. */
static rlx_status *finish_pending(rlx_executable *ex, size_t runs, uint64_t upto, bool watch) {
  rlx_dist_group *grp = watch && ex->collective ? rlx_exec_group(ex) : NULL;
  size_t n = 0;
  while (n < ex->n_pending_checks && ex->pending_checks[n].seq <= upto) n++;
  size_t k = 0;
  rlx_mx_arr **kept = malloc((runs * ex->g->n_outputs + n + 1) * sizeof *kept); /* the runs' kept outputs, then the checks */
  if (!kept) return RLX_OOM();
  for (size_t i = 0; i < runs * ex->g->n_outputs; i++)
    if (ex->pending[i]) kept[k++] = ex->pending[i];
  for (size_t i = 0; i < n; i++) kept[k++] = ex->pending_checks[i].vec;
  rlx_mx_reset(ex->ctx);
  if (grp) rlx_dist_watch_begin(grp);
  rlx_mx_eval(ex->ctx, kept, k);
  free(kept);
  rlx_status *st = rlx_mx_take_error(ex->ctx);
  if (grp) st = rlx_dist_watch_end(grp, st);
  for (size_t i = 0; !st && i < n; i++)
    st = rlx_status_annotate(rlx_l_checks_read(&ex->checks, ex->ctx, ex->pending_checks[i].vec), "committed run");
  for (size_t i = 0; i < n; i++) rlx_mx_release(ex->pending_checks[i].vec);
  ex->n_pending_checks -= n;
  if (n && ex->n_pending_checks) /* the later runs' checks, kept for their syncs */
    memmove(ex->pending_checks, ex->pending_checks + n, ex->n_pending_checks * sizeof *ex->pending_checks);
  return st;
}

void rlx_executable_free(rlx_executable *ex) {
  if (!ex) return;
  if (ex->ctx && ex->pending) rlx_status_free(finish_pending(ex, ex->n_pending, UINT64_MAX, false)); /* let committed runs finish before their inputs go */
  while (ex->n_pending) pop_pending(ex);
  free(ex->pending_checks);
  rlx_l_checks_free(&ex->checks);
  rlx_mx_fn_free(ex->compiled);
  for (size_t i = 0; i < ex->n_params; i++) rlx_mx_release(ex->params[i].val);
  for (size_t i = 0; ex->in && i < ex->g->n_inputs; i++) {
    rlx_tensor_free(ex->in[i].host);
    rlx_mx_release(ex->in[i].dev);
  }
  for (size_t i = 0; ex->const_arr && i < ex->n_consts; i++) rlx_mx_release(ex->const_arr[i]);
  rlx_exec_rng_free(ex);
  rlx_exec_layout_free(ex);
  rlx_exec_repack_free(ex);
  rlx_mx_free(ex->ctx);
  free(ex->params);
  free(ex->gparam);
  free(ex->in);
  free(ex->consts);
  free(ex->const_arr);
  free(ex->types);
  free(ex->ext_types);
  free(ex->vals);
  free(ex->cl);
  free(ex->cur);
  free(ex->leaves);
  free(ex->outs);
  free(ex->readback);
  free(ex->inplace);
  free(ex->unwanted);
  free(ex->pending);
  free(ex->pending_types);
  free(ex->out_types);
  free(ex->res);
  free(ex->slot_off);
  free(ex->slot_nbytes);
  free(ex->arena);
  free(ex->ext_reason);
  pthread_mutex_destroy(&ex->mu);
  rlx_graph_unref(ex->g);
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

void rlx_exec_drop_compiled(rlx_executable *ex) {
  rlx_mx_fn_free(ex->compiled);
  ex->compiled = NULL;
  ex->checks.traced = false;
}

rlx_status *rlx_executable_set_mode(rlx_executable *ex, rlx_mode mode) {
  rlx_mode m;
  RLX_TRY(resolve_mode(mode, &m));
  lock(ex);
  ex->mode = m;
  rlx_exec_drop_compiled(ex);
  unlock(ex);
  return NULL;
}

rlx_status *rlx_executable_set_shapeless(rlx_executable *ex, bool shapeless) {
  if (shapeless) RLX_TRY(rlx_exec_check_shapeless(ex->g));
  lock(ex);
  if (ex->shapeless != shapeless) rlx_exec_drop_compiled(ex);
  ex->shapeless = shapeless;
  unlock(ex);
  return NULL;
}

rlx_status *rlx_executable_set_param(rlx_executable *ex, const char *name, const rlx_tensor *value) {
  if (!ex || !name || !value) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_param: NULL argument");
  size_t k = rlx_exec_param_index(ex, name);
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
  if (!st) rlx_exec_layout_param_set(ex, k), rlx_exec_repack_param_set(ex, k);
  unlock(ex);
  return rlx_status_annotate(st, "param '%s'", name);
}

rlx_status *rlx_executable_set_output_readback(rlx_executable *ex, size_t i, bool readback) {
  if (i >= ex->g->n_outputs) return RLX_ERR(OUT_OF_RANGE, "output %zu: the graph has %zu outputs", i, ex->g->n_outputs);
  lock(ex);
  ex->readback[i] = readback;
  unlock(ex);
  return NULL;
}

rlx_status *rlx_executable_set_index_checks(rlx_executable *ex, bool on) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_index_checks: NULL executable");
  lock(ex);
  if (ex->no_index_checks == on) rlx_exec_drop_compiled(ex);
  ex->no_index_checks = !on;
  unlock(ex);
  return NULL;
}

rlx_status *rlx_executable_set_output_wanted(rlx_executable *ex, size_t i, bool wanted) {
  if (i >= ex->g->n_outputs) return RLX_ERR(OUT_OF_RANGE, "output %zu: the graph has %zu outputs", i, ex->g->n_outputs);
  lock(ex);
  ex->unwanted[i] = !wanted;
  unlock(ex);
  return NULL;
}

/* Whether output i feeds an input's device handle. */
static bool fed(const rlx_executable *ex, size_t i) {
  for (size_t k = 0; k < ex->g->n_inputs; k++)
    if (ex->in[k].feed == i) return true;
  return false;
}

bool rlx_exec_reads_back(const rlx_executable *ex, size_t i) {
  if (ex->unwanted[i]) return false;
  return ex->readback[i] >= 0 ? ex->readback[i] : !fed(ex, i);
}

bool rlx_exec_output_seen(const rlx_executable *ex, size_t i) { return !ex->unwanted[i] || fed(ex, i); }

/* Host tensors for the outputs arrs[i] whose readback is on (ex->res; NULL elsewhere). */
static rlx_status *alloc_outputs(rlx_executable *ex, const rlx_type *types, rlx_mx_arr *const *arrs) {
  size_t n = ex->g->n_outputs;
  memset(ex->res, 0, n * sizeof *ex->res);
  for (size_t i = 0; i < n; i++) {
    if (!rlx_exec_reads_back(ex, i) || !arrs[i]) continue;
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
static rlx_status *execute_named(rlx_executable *ex, size_t n, const char *const *names, rlx_tensor *const *values, bool async) {
  rlx_exec_clear_sources(ex);
  RLX_TRY(rlx_exec_source_named(ex, n, names, values));
  return rlx_exec_execute(ex, async);
}

rlx_status *rlx_executable_run(rlx_executable *ex, size_t n_inputs, const char *const *names,
                               rlx_tensor *const *values, size_t n_outputs, rlx_tensor **outputs) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_run: NULL executable");
  RLX_TRY(check_outputs_arg(ex, n_outputs, outputs));
  lock(ex);
  rlx_status *st = execute_named(ex, n_inputs, names, values, false);
  if (!st) st = rlx_exec_apply_feeds(ex);
  if (!st) output_types(ex, ex->out_types), st = alloc_outputs(ex, ex->out_types, ex->outs);
  if (!st) st = fill_outputs(ex, ex->outs, outputs);
  discard_outputs(ex);
  rlx_mx_reset(ex->ctx);
  unlock(ex);
  return st;
}

rlx_status *rlx_executable_warmup(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  rlx_tensor *const *values) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_warmup: NULL argument");
  lock(ex);
  ex->rng_frozen = true;
  rlx_status *st = execute_named(ex, n_inputs, names, values, false);
  ex->rng_frozen = false;
  rlx_mx_reset(ex->ctx);
  unlock(ex);
  return st;
}

/* ---- asynchronous runs ---- */

rlx_status *rlx_executable_commit(rlx_executable *ex, size_t n_inputs, const char *const *names,
                                  rlx_tensor *const *values) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_commit: NULL executable");
  lock(ex);
  /* when many commits go unsynced, the checks of the earlier ones (long evaluated) are read here */
  rlx_status *st = ex->n_pending_checks >= RLX_EXEC_MAX_PENDING_CHECKS ? finish_pending(ex, 0, UINT64_MAX, true) : NULL;
  if (!st) st = execute_named(ex, n_inputs, names, values, true);
  if (!st) st = rlx_exec_apply_feeds(ex);
  /* the run's check vector waits for the sync of this run or a later one */
  rlx_mx_arr *chk = ex->outs[ex->g->n_outputs];
  if (!st && chk && !rlx_grow((void **)&ex->pending_checks, &ex->cap_pending_checks, ex->n_pending_checks + 1, sizeof *ex->pending_checks))
    st = RLX_OOM();
  if (!st) {
    size_t no = ex->g->n_outputs;
    if (chk) ex->pending_checks[ex->n_pending_checks].seq = ex->n_commits, ex->pending_checks[ex->n_pending_checks++].vec = rlx_mx_keep(ex->ctx, chk);
    size_t r = ex->n_pending; /* a slot past max_pending is there for it */
    /* only what the sync reads back is kept: a run committed behind this one may then update a fed
     * handle (a donated KV cache) in place */
    for (size_t i = 0; i < no; i++)
      ex->pending[r * no + i] = rlx_exec_reads_back(ex, i) ? rlx_mx_keep(ex->ctx, ex->outs[i]) : NULL;
    output_types(ex, ex->pending_types + r * no);
    ex->pending_seq[r] = ex->n_commits++;
    st = rlx_mx_take_error(ex->ctx);
    if (st) { /* nothing pending from this call; earlier results kept */
      for (size_t i = 0; i < no; i++) rlx_mx_release(ex->pending[r * no + i]), ex->pending[r * no + i] = NULL;
    } else if (++ex->n_pending > ex->max_pending) {
      pop_pending(ex); /* the oldest run's results are replaced; that run still completes */
    }
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
  if (!ex->n_pending) {
    if (outputs) st = RLX_ERR(FAILED_PRECONDITION, "no committed run to read (rlx_executable_commit)");
  } else {
    st = finish_pending(ex, 1, ex->pending_seq[0], true);
    if (!st && outputs) st = alloc_outputs(ex, ex->pending_types, ex->pending);
    if (!st && outputs) st = fill_outputs(ex, ex->pending, outputs);
    discard_outputs(ex);
    pop_pending(ex);
    rlx_mx_reset(ex->ctx);
  }
  unlock(ex);
  return st;
}

bool rlx_executable_pending(const rlx_executable *ex) {
  lock(ex);
  bool p = ex->n_pending > 0;
  unlock(ex);
  return p;
}

rlx_status *rlx_executable_set_max_pending(rlx_executable *ex, size_t depth) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_max_pending: NULL executable");
  if (depth < 1 || depth > RLX_MAX_PENDING)
    return RLX_ERR(INVALID_ARGUMENT, "max pending runs %zu: expected 1 to %d", depth, RLX_MAX_PENDING);
  lock(ex);
  rlx_status *st = NULL;
  if (ex->n_pending > depth)
    st = RLX_ERR(FAILED_PRECONDITION, "%zu committed runs are pending, more than %zu: sync them first", ex->n_pending, depth);
  else
    ex->max_pending = depth;
  unlock(ex);
  return st;
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
  rlx_exec_set_extent_reason(ex, why);
  unlock(ex);
  return NULL;
}

const char *rlx_executable_active_extent_fallback(const rlx_executable *ex) {
  lock(ex);
  const char *r = ex->ext_reason;
  unlock(ex);
  return r;
}
