/* exec_layout.c: weights kept in the layout a kernel wants, made once from constants and params
 * and kept as leaves of every run (dropped when their param is set):
 * - with the channels-last lowering (lower_layout.c, RLX_LAYOUT), the channels-last forms of the
 *   convolution weights (a transposing copy of each weight per run otherwise: 16 of ResNet-50's
 *   kernel launches on a GPU), and the conv epilogue function of lazy runs (rlx_l_epilogue: 103
 *   launches of ResNet-50's 160 elementwise ones at batch 8 on a GPU);
 * - on the CPU, the GEMM panels (rlx_mx_pack_rhs) of the float32 right operands of MatMul and
 *   FusedMatMulBiasAct that are constants or params, or their transposes (BERT: OpenBLAS packed
 *   them at every call, 14-19% of its CPU time);
 * - on the CPU, the rows8 form (rlx_mx_matvec_rows8) of the packed GGUF weights of DequantMatMul
 *   nodes with activations "q8_0" (an LLM's decode step: 8 rows of W per integer dot-product
 *   instruction). It takes the packed weights' memory again; the packed rows stay for prefill's
 *   tiles and the embedding's rows;
 * - on the CPU, the Winograd transforms (rlx_mx_winograd_weights, 16/9 of the filters' memory) of
 *   the 3x3 Conv weights that kernel_winograd.cpp may use (transformed at every run they took 29%
 *   of a ResNet-50 run). */
#include <stdlib.h>
#include <string.h>

#include "mlx/conv_ops.h"
#include "mlx/exec.h"

rlx_status *rlx_exec_resolve_layout(rlx_device device, bool *out) {
  const char *env = getenv("RLX_LAYOUT");
  if (!env || !*env) return *out = device == RLX_DEVICE_GPU, NULL;
  bool last = !strcmp(env, "channels_last");
  if (last || !strcmp(env, "channels_first")) return *out = last, NULL;
  return RLX_ERR(INVALID_ARGUMENT, "environment variable RLX_LAYOUT: '%s' (expected channels_first or channels_last)", env);
}

/* Registers weight value v, made from leaf `leaf` as `kind`, once. */
static void add_weight(rlx_executable *ex, rlx_value v, size_t leaf, unsigned char kind) {
  for (size_t j = 0; j < ex->n_wl; j++)
    if (ex->wl_val[j] == v && ex->wl_kind[j] == kind) return;
  ex->wl_val[ex->n_wl] = v;
  ex->wl_leaf[ex->n_wl] = leaf;
  ex->wl_kind[ex->n_wl++] = kind;
}

static bool f32_matrix(const rlx_type *t) { return t->rank == 2 && t->dtype == RLX_DTYPE_F32; }

/* The packed right operand of a MatMul / FusedMatMulBiasAct node n, when its left operand is
 * float32 and the right one a float32 matrix held by a leaf, or the transpose of one (then not for
 * a MatMul whose left operand has at most 4 rows: those take the matvec kernel, which reads the
 * weight as stored, lower_matmul.c). */
static void add_packed(rlx_executable *ex, const rlx_node *n) {
  const rlx_graph *g = ex->g;
  const rlx_type *ta = &g->types[n->in[0]], *tb = &g->types[n->in[1]];
  if (ta->dtype != RLX_DTYPE_F32 || ta->rank < 1 || !f32_matrix(tb)) return;
  size_t leaf = rlx_exec_leaf_of(ex, n->in[1]);
  if (leaf != SIZE_MAX) return add_weight(ex, n->in[1], leaf, RLX_WL_PACK);
  int64_t rows = 1;
  for (int i = 0; i + 1 < ta->rank; i++) rows = RLX_DIM_IS_STATIC(ta->dims[i]) && rows >= 0 ? rows * ta->dims[i] : -1;
  if (n->op == RLX_OP_MATMUL && rows >= 0 && rows <= 4) return;
  const rlx_node *p = rlx_value_node(g, n->in[1]);
  size_t np = 0;
  const int64_t *perm = p->op == RLX_OP_TRANSPOSE ? rlx_node_is(p, "perm", &np) : NULL;
  if (!perm || np != 2 || perm[0] != 1 || perm[1] != 0 || !f32_matrix(&g->types[p->in[0]])) return;
  leaf = rlx_exec_leaf_of(ex, p->in[0]);
  if (leaf != SIZE_MAX) add_weight(ex, n->in[1], leaf, RLX_WL_PACK_T);
}

/* The Winograd transform (rlx_mx_winograd_weights) of a Conv node's float32 filters [Co, C, kh, kw]
 * held by a leaf, where they fit the CPU's F(2x2, 3x3) kernel (rlx_mx_winograd_fits; the
 * output's size is checked by the kernel). */
static void add_winograd(rlx_executable *ex, const rlx_node *n) {
  const rlx_graph *g = ex->g;
  const rlx_type *tw = &g->types[n->in[1]], *tx = &g->types[n->in[0]];
  if (tw->rank != 4 || tw->dtype != RLX_DTYPE_F32 || tx->dtype != RLX_DTYPE_F32) return;
  rlx_conv_geom gm;
  rlx_conv_geom_read(n, 2, &gm);
  if (!rlx_mx_winograd_fits(tw->dims[1] * gm.group, tw->dims[0], gm.group, tw->dims[2], tw->dims[3], gm.s, gm.d)) return;
  size_t leaf = rlx_exec_leaf_of(ex, n->in[1]);
  if (leaf != SIZE_MAX) add_weight(ex, n->in[1], leaf, RLX_WL_WINOGRAD);
}

/* Drops the rows8 forms of a value that nodes read as two different schemes (w_packed holds one
 * array per value): the kernel reads the packed rows there. Marked first (the top bit of the
 * kind), then removed. */
static void drop_rows8_conflicts(rlx_executable *ex) {
  for (size_t i = 0; i < ex->n_wl; i++)
    for (size_t j = i + 1; j < ex->n_wl; j++)
      if (ex->wl_val[i] == ex->wl_val[j] && (ex->wl_kind[i] & 0x7f) >= RLX_WL_ROWS8 && (ex->wl_kind[j] & 0x7f) >= RLX_WL_ROWS8)
        ex->wl_kind[i] |= 0x80, ex->wl_kind[j] |= 0x80;
  size_t k = 0;
  for (size_t i = 0; i < ex->n_wl; i++)
    if (!(ex->wl_kind[i] & 0x80)) ex->wl_val[k] = ex->wl_val[i], ex->wl_leaf[k] = ex->wl_leaf[i], ex->wl_kind[k++] = ex->wl_kind[i];
  ex->n_wl = k;
}

rlx_status *rlx_exec_layout_init(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  bool pack = ex->device == RLX_DEVICE_CPU;
  if (!ex->channels_last && !pack) return NULL;
  size_t nv = g->n_vals ? g->n_vals : 1;
  ex->wl_val = calloc(g->n_nodes + 1, sizeof *ex->wl_val);
  ex->wl_leaf = calloc(g->n_nodes + 1, sizeof *ex->wl_leaf);
  ex->wl_arr = calloc(g->n_nodes + 1, sizeof *ex->wl_arr);
  ex->wl_kind = calloc(g->n_nodes + 1, sizeof *ex->wl_kind);
  if (!ex->wl_val || !ex->wl_leaf || !ex->wl_arr || !ex->wl_kind) return RLX_OOM();
  ex->uses = calloc(nv, sizeof *ex->uses);
  if (!ex->uses) return RLX_OOM();
  for (size_t k = 0; k < g->n_nodes; k++)
    for (uint32_t i = 0; i < g->nodes[k].n_in; i++) ex->uses[g->nodes[k].in[i]]++;
  for (size_t i = 0; i < g->n_outputs; i++) ex->uses[g->outputs[i]]++;
  if (pack) {
    ex->w_packed = calloc(nv, sizeof *ex->w_packed);
    if (!ex->w_packed) return RLX_OOM();
    for (size_t k = 0; k < g->n_nodes; k++) {
      const rlx_node *n = &g->nodes[k];
      if ((n->op == RLX_OP_MATMUL || n->op == RLX_OP_FUSED_MATMUL_BIAS_ACT) && n->n_in >= 2) add_packed(ex, n);
      if (n->op == RLX_OP_CONV && n->n_in >= 2) add_winograd(ex, n);
      int s = rlx_l_dequant_rows8(g, n);
      size_t leaf = s >= 0 ? rlx_exec_leaf_of(ex, n->in[1]) : SIZE_MAX;
      if (leaf != SIZE_MAX) add_weight(ex, n->in[1], leaf, (unsigned char)(RLX_WL_ROWS8 + s));
    }
    drop_rows8_conflicts(ex);
  }
  if (!ex->channels_last) return NULL;
  ex->w_last = calloc(nv, sizeof *ex->w_last);
  ex->epi.pre = calloc(nv, sizeof *ex->epi.pre);
  if (!ex->w_last || !ex->epi.pre) return RLX_OOM();
  RLX_TRY(rlx_mx_compile(rlx_l_epilogue_trace, NULL, false, &ex->epi.fn));
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    if (n->op != RLX_OP_CONV || n->n_in < 2) continue;
    rlx_value w = n->in[1];
    const rlx_type *t = &g->types[w];
    if (t->rank < 3 || t->rank > 5 || !rlx_dtype_is_float(t->dtype) || rlx_dtype_is_lowp(t->dtype)) continue;
    size_t leaf = rlx_exec_leaf_of(ex, w);
    if (leaf != SIZE_MAX) add_weight(ex, w, leaf, RLX_WL_LAST);
  }
  return NULL;
}

void rlx_exec_layout_free(rlx_executable *ex) {
  for (size_t j = 0; ex->wl_arr && j < ex->n_wl; j++) rlx_mx_release(ex->wl_arr[j]);
  free(ex->wl_val);
  free(ex->wl_leaf);
  free(ex->wl_arr);
  free(ex->wl_kind);
  free(ex->w_last);
  free(ex->w_packed);
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
      rlx_mx_arr *w = ex->leaves[ex->wl_leaf[j]], *a;
      if (ex->wl_kind[j] == RLX_WL_LAST) {
        rlx_lower L = {.mx = c};
        a = rlx_mx_contiguous(c, rlx_l_to_last(&L, w, ex->g->types[ex->wl_val[j]].rank));
      } else if (ex->wl_kind[j] == RLX_WL_WINOGRAD) {
        a = rlx_mx_winograd_weights(c, w);
      } else if (ex->wl_kind[j] >= RLX_WL_ROWS8) {
        a = rlx_mx_matvec_rows8(c, w, ex->wl_kind[j] - RLX_WL_ROWS8);
      } else {
        a = rlx_mx_pack_rhs(c, w, ex->wl_kind[j] == RLX_WL_PACK_T);
      }
      rlx_mx_eval(c, &a, 1);
      if (rlx_mx_failed(c)) return;
      ex->wl_arr[j] = rlx_mx_keep(c, a);
    }
    out[j] = ex->wl_arr[j];
  }
}

void rlx_exec_layout_bind(rlx_executable *ex, rlx_mx_arr *const *leaves) {
  size_t nv = ex->g->n_vals ? ex->g->n_vals : 1;
  if (ex->w_last) {
    memset(ex->w_last, 0, sizeof *ex->w_last * nv);
    memset(ex->epi.pre, 0, sizeof *ex->epi.pre * nv);
  }
  if (ex->w_packed) memset(ex->w_packed, 0, sizeof *ex->w_packed * nv);
  for (size_t j = 0; j < ex->n_wl; j++) {
    if (ex->wl_kind[j] == RLX_WL_LAST)
      ex->w_last[ex->wl_val[j]] = leaves[j];
    else
      ex->w_packed[ex->wl_val[j]] = leaves[j];
  }
}
