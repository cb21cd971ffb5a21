/* exec_handles.c: host and device handles (inputs kept across runs) and output feeds. */
#include <stdlib.h>
#include <string.h>

#include "mlx/exec.h"

/* Finds input `name` and checks `value` against its declared type. */
static rlx_status *handle_input(rlx_executable *ex, const char *name, const rlx_tensor *value, size_t *out) {
  if (!ex || !name || !value) return RLX_ERR(INVALID_ARGUMENT, "handle: NULL argument");
  RLX_TRY(rlx_exec_find_input(ex, name, out));
  return rlx_exec_check_type("handle of input", name, ex->in[*out].decl, rlx_tensor_type(value));
}

rlx_status *rlx_executable_bind_host_handle(rlx_executable *ex, const char *name, const rlx_tensor *value) {
  size_t i;
  RLX_TRY(handle_input(ex, name, value, &i));
  rlx_tensor *copy;
  RLX_TRY(rlx_tensor_copy(value, &copy));
  pthread_mutex_lock(&ex->mu);
  rlx_tensor_free(ex->in[i].host);
  ex->in[i].host = copy;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

rlx_status *rlx_executable_bind_device_handle(rlx_executable *ex, const char *name, const rlx_tensor *value) {
  size_t i;
  RLX_TRY(handle_input(ex, name, value, &i));
  pthread_mutex_lock(&ex->mu);
  rlx_status *st = rlx_exec_upload(ex, value, &ex->in[i].dev);
  pthread_mutex_unlock(&ex->mu);
  return rlx_status_annotate(st, "device handle of input '%s'", name);
}

rlx_status *rlx_executable_set_handle_feed(rlx_executable *ex, const char *name, size_t output_index) {
  if (!ex || !name) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_handle_feed: NULL argument");
  size_t i;
  RLX_TRY(rlx_exec_find_input(ex, name, &i));
  const rlx_graph *g = ex->g;
  if (output_index != RLX_NO_FEED) {
    if (output_index >= g->n_outputs)
      return RLX_ERR(OUT_OF_RANGE, "feed of input '%s': output %zu, but the graph has %zu outputs", name, output_index, g->n_outputs);
    const rlx_type *want = ex->in[i].decl, *got = &g->types[g->outputs[output_index]];
    bool ok = want->dtype == got->dtype && want->rank == got->rank;
    for (int d = 0; ok && d < want->rank; d++) ok = want->dims[d] < 0 || got->dims[d] < 0 || want->dims[d] == got->dims[d];
    if (!ok)
      return RLX_ERR(INVALID_ARGUMENT, "feed of input '%s' (%s) from output %zu ('%s', %s): types differ", name, RLX_TYPE_STR(want),
                     output_index, g->output_names[output_index], RLX_TYPE_STR(got));
  }
  pthread_mutex_lock(&ex->mu);
  ex->in[i].feed = output_index;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

rlx_status *rlx_executable_set_handle_donation(rlx_executable *ex, const char *name, bool donate) {
  if (!ex || !name) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_handle_donation: NULL argument");
  size_t i;
  RLX_TRY(rlx_exec_find_input(ex, name, &i));
  pthread_mutex_lock(&ex->mu);
  ex->in[i].donate = donate;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

void rlx_exec_donate_handles(rlx_executable *ex) {
  for (size_t i = 0; i < ex->g->n_inputs; i++) {
    exec_input *in = &ex->in[i];
    if (!in->donate || in->feed == RLX_NO_FEED || !in->dev || in->arr != in->dev) continue;
    ex->leaves[i] = NULL;
    ex->vals[in->val] = NULL;
    rlx_mx_release(in->dev);
    in->dev = in->arr = NULL;
  }
}

rlx_status *rlx_exec_inplace_init(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  if (!(ex->inplace = calloc(g->n_vals ? g->n_vals : 1, sizeof *ex->inplace))) return RLX_OOM();
  for (size_t i = 0; i < g->n_inputs; i++) {
    rlx_value v = ex->in[i].val;
    const rlx_node *reader = NULL;
    size_t reads = 0;
    for (size_t k = 0; k < g->n_nodes; k++)
      for (uint32_t j = 0; j < g->nodes[k].n_in; j++)
        if (g->nodes[k].in[j] == v) reads++, reader = &g->nodes[k];
    for (size_t j = 0; j < g->n_outputs; j++) reads += g->outputs[j] == v;
    const char *red = reader ? rlx_node_s(reader, "reduction") : NULL;
    ex->in[i].scatter_only = reads == 1 && reader && reader->op == RLX_OP_SCATTER_ELEMENTS && reader->in[0] == v &&
                             (!red || !strcmp(red, "none"));
    /* read by Attentions as their k or v, heads first ([B, Hkv, C, D]: rank 4, and then so is every
     * reading Attention's q): a cache of packed heads ([B, C, Hkv * D]) reaches rlx's GPU attention
     * kernel as a transposed view, which MLX copies inside the kernel's evaluation
     * (ensure_row_contiguous) in a CUDA graph node of its own that reads no marker, so on an H100
     * that copy ran before the write (every decode row wrong; unit.test_executable_async
     * test_inplace_kv_pair, fine with MLX_USE_CUDA_GRAPHS=0) */
    bool att = ex->in[i].scatter_only && g->types[v].rank == 4;
    for (size_t k = 0; att && k < g->n_nodes; k++)
      for (uint32_t j = 0; j < g->nodes[k].n_in; j++)
        att &= g->nodes[k].in[j] != reader->out0 || (g->nodes[k].op == RLX_OP_ATTENTION && (j == 1 || j == 2));
    ex->in[i].attention_reads = att;
  }
  return NULL;
}

static bool inplace_ok(const rlx_executable *ex, size_t i) {
  const exec_input *in = &ex->in[i];
  const rlx_graph *g = ex->g;
  /* On a GPU only for a cache read by Attentions, heads first (rlx_exec_inplace_init): MLX's CUDA
   * graph orders a reader after the write only if it reads the write's marker, which rlx's attention
   * lowering passes (shim.h, rlx_mx_put_along_axis_inplace) */
  if ((ex->device != RLX_DEVICE_CPU && !in->attention_reads) || ex->mode == RLX_MODE_EAGER || !in->scatter_only || !in->donate ||
      in->feed == RLX_NO_FEED || rlx_exec_reads_back(ex, in->feed))
    return false;
  for (size_t j = 0; j < g->n_outputs; j++)
    if (j != in->feed && g->outputs[j] == g->outputs[in->feed]) return false;
  for (size_t k = 0; k < g->n_inputs; k++)
    if (k != i && ex->in[k].feed == in->feed) return false;
  return true;
}

void rlx_exec_plan_inplace(rlx_executable *ex) {
  bool changed = false;
  for (size_t i = 0; i < ex->g->n_inputs; i++) {
    bool ok = inplace_ok(ex, i), *plan = &ex->inplace[ex->in[i].val];
    changed |= ok != *plan;
    *plan = ok;
  }
  if (changed) rlx_exec_drop_compiled(ex);
}

void rlx_exec_inplace_leaves(rlx_executable *ex, rlx_mx *c) {
  size_t no = ex->g->n_outputs;
  for (size_t i = 0; i < ex->g->n_inputs; i++) {
    if (!ex->inplace[ex->in[i].val] || !ex->in[i].arr) continue; /* host bytes become a new array at every run */
    rlx_mx_arr *leaf = ex->leaves[i];
    bool own = rlx_mx_row_contiguous(leaf);
    for (size_t k = 0; own && k < ex->n_pending * no; k++) own = !rlx_mx_shares_memory(leaf, ex->pending[k]);
    if (!own) ex->leaves[i] = rlx_mx_copy_fresh(c, leaf);
  }
}

rlx_status *rlx_exec_apply_feeds(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const exec_input *in = &ex->in[i];
    if (in->feed == RLX_NO_FEED) continue;
    rlx_type t;
    if (!rlx_mx_type(ex->outs[in->feed], &t)) return RLX_ERR(INTERNAL, "feed of input '%s': output has no type", in->name);
    RLX_TRY(rlx_status_annotate(rlx_exec_check_type("input", in->name, in->decl, &t), "feed from output %zu ('%s')", in->feed,
                                g->output_names[in->feed]));
  }
  for (size_t i = 0; i < g->n_inputs; i++) {
    exec_input *in = &ex->in[i];
    if (in->feed == RLX_NO_FEED) continue;
    rlx_mx_arr *kept = rlx_mx_keep(ex->ctx, ex->outs[in->feed]);
    if (!kept) return rlx_status_annotate(rlx_mx_take_error(ex->ctx), "feed of input '%s'", in->name);
    rlx_mx_release(in->dev);
    in->dev = kept;
  }
  return NULL;
}

rlx_status *rlx_executable_clear_handle(rlx_executable *ex, const char *name) {
  if (!ex || !name) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_clear_handle: NULL argument");
  size_t i;
  RLX_TRY(rlx_exec_find_input(ex, name, &i));
  pthread_mutex_lock(&ex->mu);
  exec_input *in = &ex->in[i];
  rlx_tensor_free(in->host);
  rlx_mx_release(in->dev);
  in->host = NULL;
  in->dev = NULL;
  in->feed = RLX_NO_FEED;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

rlx_status *rlx_executable_read_handle(rlx_executable *ex, const char *name, rlx_tensor **out) {
  if (!ex || !name || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_read_handle: NULL argument");
  size_t i;
  RLX_TRY(rlx_exec_find_input(ex, name, &i));
  pthread_mutex_lock(&ex->mu);
  exec_input *in = &ex->in[i];
  rlx_status *st = NULL;
  rlx_tensor *t = NULL;
  if (in->dev) {
    rlx_type ty;
    rlx_mx *c = ex->ctx;
    rlx_mx_reset(c);
    if (!rlx_mx_type(in->dev, &ty)) st = RLX_ERR(INTERNAL, "device handle has no type");
    if (!st) st = rlx_tensor_create(ty.dtype, ty.rank, ty.dims, NULL, 0, &t);
    if (!st && !rlx_mx_to_host(c, in->dev, rlx_tensor_data(t), rlx_tensor_nbytes(t))) st = rlx_mx_take_error(c);
    rlx_mx_reset(c);
  } else if (in->host) {
    st = rlx_tensor_copy(in->host, &t);
  } else {
    st = RLX_ERR(FAILED_PRECONDITION, "input '%s' has no handle", name);
  }
  pthread_mutex_unlock(&ex->mu);
  if (st) {
    rlx_tensor_free(t);
    return rlx_status_annotate(st, "handle of input '%s'", name);
  }
  *out = t;
  return NULL;
}
