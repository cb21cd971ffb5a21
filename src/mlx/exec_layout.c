/* exec_layout.c: the channels-last lowering of executables (lower_layout.c): whether it is on
 * (RLX_LAYOUT), and the channels-last forms of the convolution weights that are constants or
 * params, made once and kept as leaves of every run (a transposing copy of each weight per run
 * otherwise: 16 of ResNet-50's kernel launches on a GPU), and the conv epilogue function of lazy
 * runs (rlx_l_epilogue: 103 launches of ResNet-50's 160 elementwise ones at batch 8 on a GPU). */
#include <stdlib.h>
#include <string.h>

#include "mlx/exec.h"

rlx_status *rlx_exec_resolve_layout(rlx_device device, bool *out) {
  const char *env = getenv("RLX_LAYOUT");
  if (!env || !*env) return *out = device == RLX_DEVICE_GPU, NULL;
  bool last = !strcmp(env, "channels_last");
  if (last || !strcmp(env, "channels_first")) return *out = last, NULL;
  return RLX_ERR(INVALID_ARGUMENT, "environment variable RLX_LAYOUT: '%s' (expected channels_first or channels_last)", env);
}

rlx_status *rlx_exec_layout_init(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  if (!ex->channels_last) return NULL;
  ex->wl_val = calloc(g->n_nodes + 1, sizeof *ex->wl_val);
  ex->wl_leaf = calloc(g->n_nodes + 1, sizeof *ex->wl_leaf);
  ex->wl_arr = calloc(g->n_nodes + 1, sizeof *ex->wl_arr);
  ex->w_last = calloc(g->n_vals ? g->n_vals : 1, sizeof *ex->w_last);
  ex->uses = calloc(g->n_vals ? g->n_vals : 1, sizeof *ex->uses);
  ex->epi.pre = calloc(g->n_vals ? g->n_vals : 1, sizeof *ex->epi.pre);
  if (!ex->wl_val || !ex->wl_leaf || !ex->wl_arr || !ex->w_last || !ex->uses || !ex->epi.pre) return RLX_OOM();
  for (size_t k = 0; k < g->n_nodes; k++)
    for (uint32_t i = 0; i < g->nodes[k].n_in; i++) ex->uses[g->nodes[k].in[i]]++;
  for (size_t i = 0; i < g->n_outputs; i++) ex->uses[g->outputs[i]]++;
  ex->epi.uses = ex->uses;
  RLX_TRY(rlx_mx_compile(rlx_l_epilogue_trace, NULL, false, &ex->epi.fn));
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op != RLX_OP_CONV || n->n_in < 2) continue;
    rlx_value w = n->in[1];
    const rlx_type *t = &g->types[w];
    bool seen = false;
    for (size_t j = 0; j < ex->n_wl; j++) seen |= ex->wl_val[j] == w;
    if (seen || t->rank < 3 || t->rank > 5 || !rlx_dtype_is_float(t->dtype) || rlx_dtype_is_lowp(t->dtype)) continue;
    size_t leaf = rlx_exec_leaf_of(ex, w);
    if (leaf == SIZE_MAX) continue;
    ex->wl_val[ex->n_wl] = w;
    ex->wl_leaf[ex->n_wl++] = leaf;
  }
  return NULL;
}

void rlx_exec_layout_free(rlx_executable *ex) {
  for (size_t j = 0; ex->wl_arr && j < ex->n_wl; j++) rlx_mx_release(ex->wl_arr[j]);
  free(ex->wl_val);
  free(ex->wl_leaf);
  free(ex->wl_arr);
  free(ex->w_last);
  rlx_mx_fn_free(ex->epi.fn);
  free(ex->epi.pre);
  free(ex->uses);
}

void rlx_exec_layout_param_set(rlx_executable *ex, size_t k) {
  size_t leaf = ex->g->n_inputs + ex->n_consts + k;
  for (size_t j = 0; j < ex->n_wl; j++)
    if (ex->wl_leaf[j] == leaf) {
      rlx_mx_release(ex->wl_arr[j]);
      ex->wl_arr[j] = NULL;
    }
}

void rlx_exec_layout_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out) {
  for (size_t j = 0; j < ex->n_wl; j++) {
    if (!ex->wl_arr[j]) {
      rlx_lower L = {.mx = c};
      rlx_mx_arr *a = rlx_mx_contiguous(c, rlx_l_to_last(&L, ex->leaves[ex->wl_leaf[j]], ex->g->types[ex->wl_val[j]].rank));
      rlx_mx_eval(c, &a, 1);
      if (rlx_mx_failed(c)) return;
      ex->wl_arr[j] = rlx_mx_keep(c, a);
    }
    out[j] = ex->wl_arr[j];
  }
}

void rlx_exec_layout_bind(rlx_executable *ex, rlx_mx_arr *const *leaves) {
  if (!ex->w_last) return;
  size_t nv = ex->g->n_vals ? ex->g->n_vals : 1;
  memset(ex->w_last, 0, sizeof *ex->w_last * nv);
  memset(ex->epi.pre, 0, sizeof *ex->epi.pre * nv);
  for (size_t j = 0; j < ex->n_wl; j++) ex->w_last[ex->wl_val[j]] = leaves[j];
}
