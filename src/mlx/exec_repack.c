/* exec_repack.c: the quantized_matmul operands of DequantMatMul / DequantGroupedMatMul nodes whose
 * weight inputs are constants or params: the int and GGUF Q4_0/Q4_1/Q8_0/Q4_K schemes' codes
 * repacked into MLX's affine layout, with their scales and biases (lower_dequant.c,
 * rlx_l_dequant_repack), made once and kept as leaves of every run, and made again after
 * rlx_executable_set_param sets one of their params. In the graph that repack runs at every run:
 * at each decode step of an LLM, every weight. The kept operands take about the packed weights'
 * memory again (Q8_0: 40 bytes per 32 weights with float32 scales and biases, beside its 34;
 * Q4_K: 192 per 256, beside 144); the packed params stay for the other lowering paths. */
#include <stdlib.h>
#include <string.h>

#include "mlx/exec.h"

/* Whether DequantMatMul nodes a and b of g read the same weights the same way. */
static bool same_weights(const rlx_graph *g, const rlx_node *a, const rlx_node *b) {
  if (a->op != b->op || a->n_in != b->n_in || strcmp(rlx_node_s(a, "scheme"), rlx_node_s(b, "scheme")) ||
      g->types[a->in[0]].dtype != g->types[b->in[0]].dtype)
    return false;
  for (uint32_t i = 1; i < a->n_in; i++)
    if (a->in[i] != b->in[i]) return false;
  return true;
}

/* The number of weight inputs of DequantMatMul node n (after x; the expert indices are none). */
static uint32_t n_weights(const rlx_node *n) { return n->n_in - 1 - (n->op == RLX_OP_DEQUANT_GROUPED_MATMUL); }

rlx_status *rlx_exec_repack_init(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  ex->rp_node = calloc(g->n_nodes + 1, sizeof *ex->rp_node);
  ex->rp_leaf = calloc(g->n_nodes + 1, sizeof *ex->rp_leaf);
  ex->rp_arr = calloc(g->n_nodes + 1, sizeof *ex->rp_arr);
  ex->rp_at = malloc((g->n_nodes + 1) * sizeof *ex->rp_at);
  if (!ex->rp_node || !ex->rp_leaf || !ex->rp_arr || !ex->rp_at) return RLX_OOM();
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    ex->rp_at[k] = SIZE_MAX;
    if (!rlx_l_dequant_repacks(g, n, ex->device == RLX_DEVICE_GPU)) continue;
    uint32_t nw = n_weights(n);
    size_t leaf[3] = {0};
    bool kept = nw <= 3;
    for (uint32_t i = 0; kept && i < nw; i++) kept = (leaf[i] = rlx_exec_leaf_of(ex, n->in[1 + i])) != SIZE_MAX;
    if (!kept) continue;
    size_t j = 0;
    while (j < ex->n_rp && !same_weights(g, ex->rp_node[j], n)) j++;
    if (j == ex->n_rp) {
      ex->rp_node[j] = n;
      memcpy(ex->rp_leaf[j], leaf, sizeof leaf);
      ex->n_rp++;
    }
    ex->rp_at[k] = j;
  }
  if (ex->n_rp && !(ex->qmm = calloc(g->n_vals, sizeof *ex->qmm))) return RLX_OOM();
  return NULL;
}

static void drop(rlx_l_qmm *q) {
  rlx_mx_release(q->w);
  rlx_mx_release(q->scales);
  rlx_mx_release(q->biases);
  *q = (rlx_l_qmm){0};
}

void rlx_exec_repack_free(rlx_executable *ex) {
  for (size_t j = 0; ex->rp_arr && j < ex->n_rp; j++) drop(&ex->rp_arr[j]);
  free(ex->rp_node);
  free(ex->rp_leaf);
  free(ex->rp_arr);
  free(ex->rp_at);
  free(ex->qmm);
}

void rlx_exec_repack_param_set(rlx_executable *ex, size_t k) {
  size_t leaf = ex->g->n_inputs + ex->n_consts + k;
  for (size_t j = 0; j < ex->n_rp; j++) {
    for (uint32_t i = 0; i < n_weights(ex->rp_node[j]); i++)
      if (ex->rp_leaf[j][i] == leaf) drop(&ex->rp_arr[j]);
  }
}

void rlx_exec_repack_leaves(rlx_executable *ex, rlx_mx *c, rlx_mx_arr **out) {
  for (size_t j = 0; j < ex->n_rp; j++) {
    rlx_l_qmm *q = &ex->rp_arr[j];
    if (!q->w) {
      const rlx_node *n = ex->rp_node[j];
      rlx_mx_arr *in[4] = {NULL};
      for (uint32_t i = 0; i < n_weights(n); i++) in[1 + i] = ex->leaves[ex->rp_leaf[j][i]];
      rlx_lower L = {.mx = c, .g = ex->g, .types = ex->g->types};
      rlx_l_qmm m;
      rlx_l_dequant_repack(&L, n, in, &m);
      rlx_mx_arr *a[3] = {rlx_mx_contiguous(c, m.w), rlx_mx_contiguous(c, m.scales), rlx_mx_contiguous(c, m.biases)};
      rlx_mx_eval(c, a, 3);
      if (rlx_mx_failed(c)) return;
      *q = (rlx_l_qmm){.w = rlx_mx_keep(c, a[0]), .scales = rlx_mx_keep(c, a[1]), .biases = rlx_mx_keep(c, a[2])};
    }
    out[3 * j] = q->w;
    out[3 * j + 1] = q->scales;
    out[3 * j + 2] = q->biases;
  }
}

void rlx_exec_repack_bind(rlx_executable *ex, rlx_mx_arr *const *leaves) {
  if (!ex->qmm) return;
  memset(ex->qmm, 0, sizeof *ex->qmm * ex->g->n_vals);
  for (size_t k = 0; k < ex->g->n_nodes; k++)
    if (ex->rp_at[k] != SIZE_MAX) {
      rlx_mx_arr *const *l = leaves + 3 * ex->rp_at[k];
      ex->qmm[ex->g->nodes[k].out0] = (rlx_l_qmm){.w = l[0], .scales = l[1], .biases = l[2]};
    }
}
