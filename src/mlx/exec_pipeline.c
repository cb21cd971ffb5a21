/* exec_pipeline.c: the run pipeline of executables (exec.h): sources, type and symbol binding,
 * the active extent's types, leaves, lowering or the compiled function and its trace, outputs. */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "mlx/exec.h"

rlx_status *rlx_exec_check_type(const char *what, const char *name, const rlx_type *want, const rlx_type *got) {
  bool ok = got->dtype == want->dtype && got->rank == want->rank;
  for (int i = 0; ok && i < want->rank; i++) ok = want->dims[i] < 0 || want->dims[i] == got->dims[i];
  if (!ok) return RLX_ERR(INVALID_ARGUMENT, "%s '%s': expected %s, got %s", what, name, RLX_TYPE_STR(want), RLX_TYPE_STR(got));
  return NULL;
}

rlx_status *rlx_exec_upload(rlx_executable *ex, const rlx_tensor *value, rlx_mx_arr **slot) {
  rlx_mx *c = ex->ctx;
  rlx_mx_reset(c);
  rlx_mx_arr *a = rlx_mx_from_bytes_resident(c, rlx_tensor_cdata(value), rlx_tensor_type(value));
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

rlx_status *rlx_exec_source_named(rlx_executable *ex, size_t n, const char *const *names, rlx_tensor *const *values) {
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

void rlx_exec_set_extent_reason(rlx_executable *ex, rlx_status *why) {
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
    rlx_exec_set_extent_reason(ex, rlx_status_annotate(st, "active extent %lld of %lld", (long long)ex->ext_actual, (long long)ex->ext_upper));
  }
  if (ex->ext_cached_ok) ex->rt = ex->ext_types;
  return NULL;
}

/* The compiled function's trace (rlx_mx_trace_fn): leaves are inputs, constants, params, random
 * keys, weights in a kernel's layout (exec_layout.c), repacked DequantMatMul weights. */
static rlx_mx_arr *param_lookup(void *ud, const char *name) {
  rlx_executable *ex = ud;
  size_t k = rlx_exec_param_index(ex, name);
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
  for (size_t r = 0; r < ex->rng.n; r++) ex->rng.keys[r] = leaves[ni + nc + ex->n_params + r];
  rlx_exec_layout_bind(ex, leaves + ni + nc + ex->n_params + ex->rng.n);
  rlx_exec_repack_bind(ex, leaves + ni + nc + ex->n_params + ex->rng.n + ex->n_wl);
}

/* Lowers the graph: out receives the outputs, then the advanced random keys, then the index check
 * vector (lower.h; NULL when the lowering made no check, unless `always`: the compiled function's
 * outputs are fixed). */
static rlx_status *lower_outputs(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out, bool eager, bool always) {
  rlx_l_checks_begin(&ex->checks);
  if (ex->channels_last) memset(ex->cl, 0, sizeof *ex->cl * (ex->g->n_vals ? ex->g->n_vals : 1));
  rlx_lower L = {.mx = c, .g = ex->g, .types = ex->rt, .vals = ex->vals, .eager = eager, .param = param_lookup, .param_ud = ex,
                 .group = rlx_exec_group(ex),
                 .rng = &ex->rng,
                 .checks = &ex->checks,
                 .unchecked_indices = ex->no_index_checks,
                 .cl = ex->channels_last ? ex->cl : NULL,
                 .w_last = ex->w_last,
                 .w_packed = ex->w_packed,
                 .uses = ex->uses,
                 .inplace = ex->inplace,
                 .epilogue = ex->epi.fn && ex->mode == RLX_MODE_LAZY ? &ex->epi : NULL,
                 .qmm = ex->qmm};
  RLX_TRY(rlx_lower_graph(&L));
  size_t no = ex->g->n_outputs;
  for (size_t i = 0; i < no; i++) out[i] = ex->vals[ex->g->outputs[i]];
  for (size_t r = 0; r < ex->rng.n; r++) out[no + r] = ex->rng.keys[r];
  out[no + ex->rng.n] = rlx_l_checks_end(&ex->checks, c, always);
  return rlx_mx_take_error(c);
}

static rlx_status *trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  rlx_executable *ex = ud;
  size_t want = rlx_exec_num_leaves(ex), want_out = ex->g->n_outputs + ex->rng.n + 1;
  if (n_in != want || n_out != want_out)
    return RLX_ERR(INTERNAL, "compiled function called with %zu leaves and %zu outputs, expected %zu and %zu", n_in, n_out, want,
                   want_out);
  ex->n_traces++;
  bind_leaf_vals(ex, in);
  return lower_outputs(ex, c, out, false, true);
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
      ex->const_arr[j] = rlx_mx_keep(c, rlx_mx_from_bytes_resident(c, n->data, &g->types[ex->consts[j]]));
    }
    ex->leaves[ni + j] = ex->const_arr[j];
  }
  for (size_t k = 0; k < ex->n_params; k++) ex->leaves[ni + nc + k] = ex->params[k].val;
  rlx_exec_rng_leaves(ex, c, ex->leaves + ni + nc + ex->n_params);
  rlx_exec_layout_leaves(ex, c, ex->leaves + ni + nc + ex->n_params + ex->rng.n);
  rlx_exec_repack_leaves(ex, c, ex->leaves + ni + nc + ex->n_params + ex->rng.n + ex->n_wl);
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

static rlx_status *lower_and_eval(rlx_executable *ex, bool async) {
  const rlx_graph *g = ex->g;
  rlx_mx *c = ex->ctx;
  rlx_mx_reset(c);
  rlx_exec_plan_inplace(ex);
  make_leaves(ex, c);
  rlx_exec_inplace_leaves(ex, c);
  RLX_TRY(rlx_mx_take_error(c));
  size_t no = g->n_outputs, nr = ex->rng.n, nl = rlx_exec_num_leaves(ex);
  rlx_mx_arr **all = ex->rng_call_outs; /* the outputs, then the advanced random keys, then the check */
  /* A binding where some node output has no elements runs lazily: MLX fuses elementwise ops into
   * kernels that CUDA launches with a grid of 0 (SIGFPE on an H100), and a shapeless trace made at
   * other sizes holds no empty-array guard of the shim (a CPU reduction of an empty array loops). */
  if (ex->mode == RLX_MODE_COMPILED && !ex->empty_outputs) {
    if (!ex->compiled) RLX_TRY(rlx_mx_compile(trace, ex, ex->shapeless, &ex->compiled));
    if (!rlx_mx_call(c, ex->compiled, ex->leaves, nl, all, no + nr + 1)) return rlx_mx_take_error(c);
    if (!ex->checks.traced) all[no + nr] = NULL; /* no trace of this function made a check: nothing to read */
  } else {
    bind_leaf_vals(ex, ex->leaves);
    RLX_TRY(lower_outputs(ex, c, all, ex->mode == RLX_MODE_EAGER, false));
  }
  memcpy(ex->outs, all, no * sizeof *all);
  RLX_TRY(conform_outputs(ex, c));
  memcpy(all, ex->outs, no * sizeof *all);
  /* Only the outputs (keys, check) stay referenced from here: MLX frees intermediates while it
   * evaluates. The run's value and leaf handles are dead after this (both are rebuilt by the next
   * run). */
  size_t nall = no + nr + (all[no + nr] != NULL);
  rlx_mx_retain_only(c, all, nall);
  memcpy(ex->outs, all, no * sizeof *all);
  ex->outs[no] = nall > no + nr ? all[no + nr] : NULL;
  memcpy(ex->rng.keys, all + no, nr * sizeof *all);
  if (ex->mode != RLX_MODE_EAGER) rlx_exec_donate_handles(ex);
  /* an unwanted output (rlx_executable_set_output_wanted) that feeds no handle is not evaluated:
   * an LLM step's logits of every row when the caller wants the next token only */
  size_t ne = 0;
  for (size_t i = 0; i < nall; i++)
    if (i >= no || rlx_exec_output_seen(ex, i)) all[ne++] = all[i];
  if (async) rlx_mx_async_eval(c, all, ne);
  else rlx_mx_eval(c, all, ne);
  RLX_TRY(rlx_mx_take_error(c));
  /* a commit leaves reading the check to the sync; a run that fails it keeps its random streams */
  if (!async) RLX_TRY(rlx_l_checks_read(&ex->checks, c, ex->outs[no]));
  return nr && !ex->rng_frozen ? rlx_exec_rng_commit(ex, c) : NULL;
}

rlx_status *rlx_exec_execute(rlx_executable *ex, bool async) {
  if (ex->device == RLX_DEVICE_GPU) RLX_TRY(rlx_exec_claim_gpu_precision(ex->precision));
  RLX_TRY(bind_types(ex));
  RLX_TRY(extent_types(ex));
  RLX_TRY(rlx_exec_check_allocations(ex));
  for (size_t k = 0; k < ex->n_params; k++)
    if (!ex->params[k].val) return RLX_ERR(FAILED_PRECONDITION, "param '%s' was not set (rlx_executable_set_param)", ex->params[k].name);
  /* A graph with collectives runs under its group's timeout; a failure aborts the group, so the
   * other ranks, blocked in the same collectives, fail too instead of waiting forever. A group
   * that failed earlier fails the run before MLX is called (a compiled trace skips the lowering's
   * check). */
  rlx_dist_group *grp = ex->collective ? rlx_exec_group(ex) : NULL;
  if (!grp) return lower_and_eval(ex, async);
  RLX_TRY(rlx_dist_check_failed(grp));
  rlx_dist_watch_begin(grp);
  return rlx_dist_watch_end(grp, lower_and_eval(ex, async));
}
