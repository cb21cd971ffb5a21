/* lower.h: lowering the IR onto MLX arrays through the shim (src/mlx/lower_*.c). Internal. */
#ifndef RLX_MLX_LOWER_H
#define RLX_MLX_LOWER_H

#include "ir/ir.h"
#include "mlx/shim/shim.h"

typedef struct rlx_lower rlx_lower;

/* Resolves a sub-graph Param by name (the executable's params). */
typedef rlx_mx_arr *(*rlx_param_lookup_fn)(void *ud, const char *name);

struct rlx_lower {
  rlx_mx *mx;                 /* context of this lowering (arena + sticky error) */
  const rlx_graph *g;
  const rlx_type *types;      /* concrete (bound) type of every value */
  rlx_mx_arr **vals;          /* array of every value, leaves pre-bound by the caller */
  bool eager;                 /* eval after every node */
  rlx_param_lookup_fn param;  /* for sub-graph params */
  void *param_ud;
};

/* Lowers every non-leaf node of L->g in order (leaf values must be set in L->vals). In eager
 * mode each node's outputs are evaluated right away, so a failure names the node that failed.
 * Errors are annotated with the node label ("node 12 (Conv 'conv1'): ..."). */
rlx_status *rlx_lower_graph(rlx_lower *L);

/* Lowers a sub-graph (If/While/Scan body): its inputs bind positionally to captures[0..n) (whose
 * shapes also bind its symbols), its params resolve by name through L->param, its constants are
 * made inline; writes its outputs (sub->n_outputs arrays) to outs. */
rlx_status *rlx_lower_subgraph(rlx_lower *L, const rlx_graph *sub, rlx_mx_arr *const *captures, size_t n, rlx_mx_arr **outs);

/* One lowering function per op family: reads inputs in[0..n->n_in), writes out[0..n->n_out).
 * Errors go to the context (rlx_mx_fail or a failing shim op). */
typedef void (*rlx_lower_fn)(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out);
#define RLX_X(e, name, fam, lo, hi, spec) \
  void rlx_lower_##fam(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out);
RLX_OP_TABLE(RLX_X)
#undef RLX_X

/* ---- helpers for lowering functions ---- */
/* Concrete type of input i / output i of node n. */
static inline const rlx_type *rlx_in_type(const rlx_lower *L, const rlx_node *n, uint32_t i) {
  return &L->types[n->in[i]];
}
static inline const rlx_type *rlx_out_type(const rlx_lower *L, const rlx_node *n, uint32_t i) {
  return &L->types[n->out0 + i];
}
/* Records a lowering error on the context. */
void rlx_lower_fail(rlx_lower *L, rlx_status_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Common compositions. */
rlx_mx_arr *rlx_l_scalar_like(rlx_lower *L, double v, rlx_dtype dt);
/* The lowest (or highest) value of dt as a scalar: -inf/+inf for floats, false/true, integer limits. */
rlx_mx_arr *rlx_l_extreme(rlx_lower *L, rlx_dtype dt, bool lowest);
rlx_mx_arr *rlx_l_reshape(rlx_lower *L, rlx_mx_arr *a, const rlx_type *t);  /* to t's dims */
rlx_mx_arr *rlx_l_unary(rlx_lower *L, rlx_op op, rlx_mx_arr *x, rlx_dtype dt); /* an IR unary op */
rlx_mx_arr *rlx_l_binary(rlx_lower *L, rlx_op op, rlx_mx_arr *a, rlx_mx_arr *b, rlx_dtype dt); /* IR binary/compare */
rlx_mx_arr *rlx_l_swap(rlx_lower *L, rlx_mx_arr *a, int rank, int i, int j); /* transpose two axes */
rlx_mx_arr *rlx_l_narrow(rlx_lower *L, rlx_mx_arr *a, const rlx_type *t, int axis, int64_t start, int64_t len);

/* Attention on [B,H,S,D] operands (q dims qd, k dims kd, value head dim dv); mask_kind 0 none,
 * 1 causal, 2 sliding window, 3 custom (mask nonzero = attend), 4 bias (added). */
rlx_mx_arr *rlx_l_attention(rlx_lower *L, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, const int64_t *qd,
                            const int64_t *kd, int64_t dv, rlx_dtype dt, float scale, float softcap, int mask_kind,
                            int64_t window, rlx_mx_arr *mask, rlx_dtype mask_dt);
/* The bool "may attend" mask [Sq,Sk] of causal (window 0) or sliding-window attention. */
rlx_mx_arr *rlx_l_causal_mask(rlx_lower *L, int64_t sq, int64_t sk, int64_t window);
/* NeoX rotary embedding of x (type t) with cos/sin tables; sign -1 rotates backwards. */
rlx_mx_arr *rlx_l_rope(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, rlx_mx_arr *cs, rlx_mx_arr *sn,
                       const rlx_type *tcs, int64_t head_dim, int64_t n_rot, double sign);

#endif
