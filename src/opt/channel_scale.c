/* channel_scale.c: a per-input-channel scale moved from a Conv's input into its weights
 * (rlx/optimize.h). Conv(x * s, W, b) with s one value per channel of x (shape [1, C, 1, ..], a
 * run-time value: a squeeze-and-excitation gate) and a group-1 Conv whose input x * s has no other
 * reader is Conv(x, W * s, b): input channel c of every filter scaled by s[c], since
 * sum_c W[o, c] (s[c] x[c]) = sum_c (W[o, c] s[c]) x[c] at every tap (padding reads zeros either
 * way). Only where W has fewer elements than x: the scale then touches the smaller tensor, and
 * MLX's compile no longer fuses the gate's activation into a strided single-threaded broadcast
 * multiply over x (MobileNetV3's blocks in PP-OCR cls). */
#include <string.h>

#include "opt/opt.h"

/* w has fewer elements than x, both static. */
static bool fewer_elements(const rlx_type *w, const rlx_type *x) {
  int64_t nw = 0, nx = 0;
  if (!rlx_type_is_static(w) || !rlx_type_is_static(x)) return false;
  rlx_status *st = rlx_type_numel(w, &nw);
  if (!st) st = rlx_type_numel(x, &nx);
  bool ok = !st; /* else an overflow: no rewrite */
  rlx_status_free(st);
  return ok && nw < nx;
}

/* s is one float value per channel (axis 1) of x: [1, C, 1, ..] of x's rank and dtype. */
static bool per_input_channel(const rlx_type *ts, const rlx_type *tx) {
  if (ts->dtype != tx->dtype || !rlx_dtype_is_float(ts->dtype) || ts->rank != tx->rank || tx->rank < 3) return false;
  for (int i = 0; i < ts->rank; i++)
    if (ts->dims[i] != (i == 1 ? tx->dims[1] : 1) || tx->dims[i] < 0) return false;
  return true;
}

static rlx_status *rule(rlx_opt_rule_ctx *r, const rlx_node *n, bool *fired) {
  if (n->op != RLX_OP_CONV || rlx_node_i(n, "group") != 1 || r->uses[n->in[0]] != 1) return NULL;
  rlx_graph *d = r->rw->dst;
  const rlx_node *m = rlx_opt_def(d, rlx_opt_mapped(r, n->in[0]), RLX_OP_MUL);
  if (!m) return NULL;
  const rlx_type *tw = &d->types[rlx_opt_mapped(r, n->in[1])], *ty = &d->types[m->out0];
  for (int side = 0; side < 2; side++) {
    rlx_value x = m->in[side], s = m->in[1 - side];
    if (!rlx_type_same(&d->types[x], ty) || !per_input_channel(&d->types[s], ty) || tw->dtype != ty->dtype || tw->rank != ty->rank ||
        !fewer_elements(tw, ty))
      continue;
    rlx_value ws, in[3] = {x, 0, n->n_in > 2 ? rlx_opt_mapped(r, n->in[2]) : 0}, y;
    RLX_TRY(rlx_graph_add1(d, RLX_OP_MUL, n->name, 2, (rlx_value[]){rlx_opt_mapped(r, n->in[1]), s}, 0, NULL, &ws));
    in[1] = ws;
    RLX_TRY(rlx_rw_add_like(d, n, n->n_in, in, &y));
    rlx_opt_replace(r, n, 0, y);
    *fired = true;
    return NULL;
  }
  return NULL;
}

rlx_status *rlx_pass_channel_scale(const rlx_graph *g, const rlx_opt_ctx *cx, rlx_graph **out, bool *changed) {
  return rlx_opt_run_rule(g, cx, rule, NULL, out, changed);
}
