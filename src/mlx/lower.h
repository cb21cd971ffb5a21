/* lower.h: lowering the IR onto MLX arrays through the shim (src/mlx/lower_*.c). Internal. */
#ifndef RLX_MLX_LOWER_H
#define RLX_MLX_LOWER_H

#include "ir/ir.h"
#include "mlx/shim/shim.h"
#include "rlx/dist.h"

typedef struct rlx_lower rlx_lower;

/* The quantized_matmul operands (MLX's affine layout: uint32 words, scales, biases) that the int
 * and GGUF Q4_0/Q4_1/Q8_0/Q4_K schemes of DequantMatMul / DequantGroupedMatMul rebuild from their
 * weight inputs (lower_dequant.c). */
typedef struct rlx_l_qmm {
  rlx_mx_arr *w, *scales, *biases;
} rlx_l_qmm;

/* The random streams of a run (see exec_random.c): the key of each drawing node (Sample),
 * replaced by the next one of its stream at each draw. */
typedef struct rlx_rng {
  const rlx_node **nodes;
  rlx_mx_arr **keys;
  size_t n;
} rlx_rng;
/* Run-time index checks (lower_check.c). An index op hands MLX only in-range indices (rlx_l_index
 * wraps them into the axis) and records, in the same evaluation, the smallest and largest index
 * given: two int64 scalars (three under a guard, whose value says whether the check counts). A
 * lowering's scalars are concatenated into one int64 vector led by the id of its record, the
 * list of what each check is (site, axis size, guarded); records are kept per executable,
 * identical ones shared, so a compiled trace replayed later still finds its own. A site names where
 * a check is (the node, its input and data axis). A solve's check (rlx_l_nonsingular) is one of
 * the same kind: its count of singular systems must lie in [0, 1). */
typedef struct rlx_l_site {
  const rlx_graph *g;
  const rlx_node *n;
  uint32_t input; /* the node's input holding the indices */
  int axis;       /* the data axis they index */
  bool negative;  /* negative indices count from the end (valid range [-size, size)) */
  enum { RLX_L_SITE_INDEX, RLX_L_SITE_SINGULAR, RLX_L_SITE_ASSERT } kind; /* indices; a solve's count of singular
                                                                            systems; an Assert's cond */
} rlx_l_site;

typedef struct rlx_l_check {
  size_t site;
  int64_t size;   /* the axis size */
  bool guarded;   /* a guard scalar precedes min and max */
} rlx_l_check;

typedef struct rlx_l_record {
  rlx_l_check *checks;
  size_t n;
} rlx_l_record;

typedef struct rlx_l_checks {
  rlx_l_site *sites;
  size_t n_sites, cap_sites;
  rlx_l_record *records;
  size_t n_records, cap_records;
  /* the lowering in progress: its checks and their scalars (arena arrays of its context) */
  rlx_l_record cur;
  size_t cap_cur;
  rlx_mx_arr **vals;
  size_t n_vals, cap_vals;
  /* some trace of the current compiled function recorded a check (its check vector is read back
   * after each run); cleared when the executable drops the function */
  bool traced;
} rlx_l_checks;

/* Records that `count` (an int64 scalar: the number of systems of node n's solve with a zero
 * pivot) must be 0, else the run fails with INVALID_ARGUMENT "singular matrix" naming the node. */
void rlx_l_nonsingular(rlx_lower *L, const rlx_node *n, rlx_mx_arr *count);
/* Records that every element of `cond` (bool, node n an Assert) must be true, else the run fails
 * with INVALID_ARGUMENT naming the node and its message. */
void rlx_l_assert(rlx_lower *L, const rlx_node *n, rlx_mx_arr *cond);
/* Starts collecting the checks of a lowering. */
void rlx_l_checks_begin(rlx_l_checks *k);
/* Ends it: the int64 check vector {record id, scalars...} in context c; NULL when the lowering made
 * no check, unless `always` (then {record id} alone). */
rlx_mx_arr *rlx_l_checks_end(rlx_l_checks *k, rlx_mx *c, bool always);
/* Reads back an evaluated check vector: the OUT_OF_RANGE status of the first check that failed
 * (naming the node, input, index and axis size), or NULL. */
rlx_status *rlx_l_checks_read(const rlx_l_checks *k, rlx_mx *c, rlx_mx_arr *vector);
void rlx_l_checks_free(rlx_l_checks *k);

/* Resolves a sub-graph Param by name (the executable's params). */
typedef rlx_mx_arr *(*rlx_param_lookup_fn)(void *ud, const char *name);

/* An index array rlx_l_index wrapped into an axis of size dim under a guard (see rlx_lower). */
typedef struct rlx_l_index_memo {
  rlx_mx_arr *idx, *guard, *wrapped;
  int64_t dim;
  bool negative;
} rlx_l_index_memo;

struct rlx_lower {
  rlx_mx *mx;                 /* context of this lowering (arena + sticky error) */
  const rlx_graph *g;
  const rlx_type *types;      /* concrete (bound) type of every value */
  rlx_mx_arr **vals;          /* array of every value, leaves pre-bound by the caller */
  bool eager;                 /* eval after every node */
  rlx_param_lookup_fn param;  /* for sub-graph params */
  void *param_ud;
  rlx_dist_group *group;      /* process group of the collective ops (NULL: none) */
  rlx_rng *rng;               /* NULL: Sample draws with key(seed), or MLX's global keys for seed 0 */
  /* Where index checks go (NULL: each check is evaluated at once and fails the lowering, as in
   * eager mode), and the bool scalar under which this lowering's results count (NULL: always;
   * set inside If branches and While bodies, whose untaken paths are computed too). */
  rlx_l_checks *checks;
  rlx_mx_arr *guard;
  /* rlx_executable_set_index_checks(ex, false): rlx_l_index wraps indices into range without
   * recording a check (an axis of size 0 is still checked) */
  bool unchecked_indices;
  /* The indices rlx_l_index wrapped so far in this lowering (the first RLX_L_INDEX_MEMO): the
   * same array into the same axis size under the same guard is checked and wrapped once (an LLM
   * step's 2 x layers KV-cache writes share one index array: 4 nodes each otherwise). */
  rlx_l_index_memo index_memo[8];
  int n_index_memo;
  /* NULL, or the Custom node of L->g's caller whose graph kernel is being lowered (lower_custom.c):
   * its expansion is freed after lowering, so the checks made there name this node (of
   * site_g) instead, which outlives them. */
  const rlx_graph *site_g;
  const rlx_node *site_n;
  /* Channels-last layout tracking (lower_layout.c), NULL: off (every value in its logical layout).
   * Else per value: true when vals[v] holds a logical [N, C, d1..dn] value as [N, d1..dn, C]. */
  bool *cl;
  /* With cl: per value, NULL or the channels-last [O, k.., I/group] form of a Conv weight (a kept
   * leaf, exec_layout.c), used instead of transposing the weight on every run. */
  rlx_mx_arr *const *w_last;
  /* With cl, NULL or: Conv epilogues in one kernel (lower_layout.c; lazy runs). */
  struct rlx_l_epilogue *epilogue;
  /* NULL, or per value: w NULL, or the rlx_l_qmm of the DequantMatMul / DequantGroupedMatMul with
   * that output, repacked from its constant or param weights once (kept leaves, exec_repack.c) and
   * used instead of repacking them in the graph. */
  const rlx_l_qmm *qmm;
  /* NULL, or per value (CPU): NULL or the GEMM panels (rlx_mx_pack_rhs) of a float32 MatMul /
   * FusedMatMulBiasAct right operand that is a constant or param or the transpose of one, read by
   * rlx_mx_matmul_packed instead of packing it at every call; or the rows8 form
   * (rlx_mx_matvec_rows8, rlx_l_dequant_rows8's scheme) of a DequantMatMul's packed weights, read
   * by rlx's matvec kernel (kept leaves, exec_layout.c). */
  rlx_mx_arr *const *w_packed;
  /* NULL, or per value its readers (a graph output counting as one): an Add of a CPU matvec
   * product read once, and a product of a FusedSwiGLU read once, become one kernel
   * (rlx_mx_matvec_add, rlx_mx_matvec's x_once). */
  const uint32_t *uses;
  /* NULL, or per value: true for an input that its one reader, a ScatterElements without
   * reduction, writes in place (rlx_mx_put_along_axis_inplace; exec.h, rlx_exec_plan_inplace). */
  const bool *inplace;
};

/* Whether value v is read by one node only (known through L->uses; false when unknown). */
static inline bool rlx_l_read_once(const rlx_lower *L, rlx_value v) { return L->uses && L->uses[v] == 1; }
/* The data of n's input `input` when a Constant node makes it (its element count in *numel), else NULL. */
const void *rlx_l_constant(const rlx_lower *L, const rlx_node *n, uint32_t input, int64_t *numel);

/* A Conv's bias add, an optional residual add and a ReLU as one compiled function: with L->uses
 * (its readers per value, a graph output counting as one), a Conv with a bias carrying the activation
 * Relu, or a ReLU whose operand is y + b or (y + b) + r (y the output of a Conv with a bias and
 * no activation, b its bias, r a channels-last value of y's shape, each sum read once), computes
 * relu(y + b [+ r]) by fn (rlx_l_epilogue_trace), and the sums are never evaluated. pre: per value, the y, b, r of such a sum (NULLs elsewhere), reset every lowering. */
typedef struct rlx_l_epilogue {
  rlx_mx_fn *fn;
  rlx_mx_arr *(*pre)[3];
} rlx_l_epilogue;
/* The trace of rlx_l_epilogue.fn (rlx_mx_trace_fn): in = y, b[, r]; out = relu(y + b [+ r]). */
rlx_status *rlx_l_epilogue_trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out);

/* Lowers every non-leaf node of L->g in order (leaf values must be set in L->vals). In eager
 * mode each node's outputs are evaluated right away, so a failure names the node that failed.
 * Errors are annotated with the node label ("node 12 (Conv 'conv1'): ..."). */
RLX_MUST_USE rlx_status *rlx_lower_graph(rlx_lower *L);

/* A sub-graph (If/While/Scan body) prepared for lowering: typed once against its operand types
 * (rlx_subgraph_bind), its constants made and its params resolved by name through L->param once;
 * then run on any number of capture lists (one per loop step). */
typedef struct rlx_sub {
  const rlx_graph *g;
  rlx_type *types;     /* concrete type of every value of g */
  rlx_mx_arr **leaves; /* per value: the array of each Constant and Param, NULL elsewhere */
} rlx_sub;

/* Prepares `sub` for operands of (concrete) types in[0..n). Errors: INVALID_ARGUMENT (operand
 * count or types), NOT_FOUND (a param with no value), binding errors. *out untouched on failure;
 * free with rlx_sub_free. */
RLX_MUST_USE rlx_status *rlx_sub_prepare(rlx_lower *L, const rlx_graph *sub, const rlx_type *in, size_t n, rlx_sub *out);
/* Lowers the prepared sub-graph with its inputs bound positionally to captures[0..n) and writes
 * its outputs (s->g->n_outputs arrays) to outs. Errors name the sub-graph node that failed. */
RLX_MUST_USE rlx_status *rlx_sub_run(rlx_lower *L, const rlx_sub *s, rlx_mx_arr *const *captures, rlx_mx_arr **outs);
void rlx_sub_free(rlx_sub *s);

/* One lowering function per op family: reads inputs in[0..n->n_in), writes out[0..n->n_out).
 * Errors go to the context (rlx_mx_fail or a failing shim op). */
typedef void (*rlx_lower_fn)(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out);
#define RLX_X(e, name, fam, lo, hi, spec) \
  void rlx_lower_##fam(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out);
RLX_OP_TABLE(RLX_X)
#undef RLX_X

/* ---- channels-last lowering (lower_layout.c; L->cl set) ----
 * Lowers node n (family lowering fn) where it has a channels-last form, setting L->cl of its
 * outputs: Conv through MLX's conv_general (output channels-last), and, when an operand is
 * channels-last, elementwise ops, Reduce and Pool. Otherwise returns false with the
 * channels-last operands of in[] (the caller's copy) turned back into their logical layout. */
bool rlx_lower_cl(rlx_lower *L, const rlx_node *n, rlx_lower_fn fn, rlx_mx_arr **in, rlx_mx_arr **out);
/* Puts the graph outputs back into their logical layout. */
void rlx_lower_cl_outputs(rlx_lower *L);
/* [N, C, d..] <-> [N, d.., C] (transposed views) */
rlx_mx_arr *rlx_l_to_last(rlx_lower *L, rlx_mx_arr *x, int rank);
rlx_mx_arr *rlx_l_to_first(rlx_lower *L, rlx_mx_arr *x, int rank);

/* ---- DequantMatMul / DequantGroupedMatMul weights repacked once (lower_dequant.c) ----
 * Whether node n of g (types g->types) may lower to quantized_matmul / gather_qmm on operands
 * repacked from its weight inputs alone (rlx_l_qmm): an int or GGUF Q4_0/Q4_1/Q8_0/Q4_K scheme
 * with x of a dtype quantized_matmul takes, static weight shapes and K, and on the CPU (gpu false)
 * rows that can take that path (at most 4, and not rlx's matvec kernel); then the operands made
 * from the weight inputs in[1..] of n (in[0] unused) in L's context (L->g, L->types: g's). */
bool rlx_l_dequant_repacks(const rlx_graph *g, const rlx_node *n, bool gpu);
void rlx_l_dequant_repack(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_l_qmm *out);
/* The rlx_mx_matvec scheme in whose rows8 form (rlx_mx_matvec_rows8) CPU node n of g reads its
 * weights, or -1: a DequantMatMul with activations "q8_0", float32 x and static GGUF
 * Q8_0/Q4_0/Q4_1/Q4_K weights of at least 8 rows, on a CPU with that kernel. */
int rlx_l_dequant_rows8(const rlx_graph *g, const rlx_node *n);

/* ---- helpers for lowering functions ---- */
/* Concrete type of input i / output i of node n. */
static inline const rlx_type *rlx_in_type(const rlx_lower *L, const rlx_node *n, uint32_t i) {
  return &L->types[n->in[i]];
}
static inline const rlx_type *rlx_out_type(const rlx_lower *L, const rlx_node *n, uint32_t i) {
  return &L->types[n->out0 + i];
}
/* The node's `axis` attribute counted from the front (axis + rank when negative); inference has
 * checked its range. */
static inline int64_t rlx_l_axis(const rlx_node *n, int64_t rank) {
  int64_t a = rlx_node_i(n, "axis");
  return a < 0 ? a + rank : a;
}
/* Index input `input` of node n (array idx of integer dtype dt) as int64 indices into data axis
 * `axis` of size dim: negatives count from the end when dt is signed, and every index is taken
 * modulo dim, so that MLX never reads or writes out of bounds; records the check (see
 * rlx_l_checks) of the indices as given, unless L->unchecked_indices. NULL when dim is 0: any index there fails its check, and
 * the caller makes its result without indexing. */
rlx_mx_arr *rlx_l_index(rlx_lower *L, const rlx_node *n, uint32_t input, rlx_mx_arr *idx, rlx_dtype dt, int64_t dim, int axis);
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
/* Expert indices for gather_mm/gather_qmm/take over E experts: uint32, negative indices counting
 * from the end and the rest clamped into [0, E) (MLX's gathers do not check their indices). */
rlx_mx_arr *rlx_l_expert_index(rlx_lower *L, rlx_mx_arr *idx, int64_t E);
/* The low-precision storage types (uint8 codes on the device; lower_lowp.c): decode to float32
 * (float formats) or int32 (integer formats), and encode x of dtype `from` into dtype `to`
 * (saturate: float8 values beyond the largest finite one clamp to it, ONNX Cast saturate=1). */
rlx_mx_arr *rlx_l_lowp_decode(rlx_lower *L, rlx_mx_arr *x, rlx_dtype dt);
rlx_mx_arr *rlx_l_lowp_encode(rlx_lower *L, rlx_mx_arr *x, rlx_dtype from, rlx_dtype to, bool saturate);
rlx_mx_arr *rlx_l_narrow(rlx_lower *L, rlx_mx_arr *a, const rlx_type *t, int axis, int64_t start, int64_t len);

/* act(x) for an activation attribute: "none" or a float unary op name (validated by inference). */
rlx_mx_arr *rlx_l_activation(rlx_lower *L, const char *act, rlx_mx_arr *x, rlx_dtype dt);
/* An activation attribute ("none" or an op name) as the CPU kernels' fused activation (Relu,
 * Sigmoid, Tanh, Silu, Gelu, GeluApprox, HardSwish); false when they have none for it. */
bool rlx_l_kernel_act(const char *act, rlx_mx_act *out);

/* An attention problem on [B,H,S,D] operands (Attention in rlx/op_table.h): q [B,hq,sq,d],
 * k [B,hkv,sk,d], v [B,hkv,sk,dv]; query head h uses kv head h / (hq / hkv). */
typedef struct rlx_l_attn {
  int64_t B, hq, hkv, sq, sk, d, dv;
  rlx_dtype dt;      /* q, k, v dtype */
  float scale;       /* resolved score scale (never 0) */
  float softcap;     /* 0: none */
  int mask_kind;     /* 0 none, 1 causal, 2 sliding window, 3 custom (nonzero = attend), 4 bias (added) */
  int64_t window;
  rlx_mx_arr *mask;  /* custom / bias mask broadcastable to [B,hq,sq,sk]; NULL otherwise */
  rlx_dtype mask_dt;
  bool packed;       /* the node's operands are [B,S,H*D] */
} rlx_l_attn;

/* Reads an Attention-shaped node (Attention, AttentionBackward: q, k, v at inputs 0..2, the mask
 * at input mask_in when present) into *a and returns q, k, v as [B,H,S,D] in qkv[0..2]. */
void rlx_l_attn_from_node(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, uint32_t mask_in, rlx_l_attn *a,
                          rlx_mx_arr **qkv);
/* Sets a's mask kind, window and mask tensor from node n's `mask` / `window` attributes and input
 * mask_in (-1 or past the inputs: none). */
void rlx_l_attn_set_mask(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, int mask_in, rlx_l_attn *a);
/* Attention output [B,hq,sq,dv]; when scores is not NULL, *scores receives the scores [B,hq,sq,sk]
 * of `stage` (see rlx_l_attention_probs; 3 = the probabilities). */
rlx_mx_arr *rlx_l_attention(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr *v, rlx_mx_arr **scores,
                            int stage);
/* The attention probabilities [B,hq,sq,sk] (0 where masked; a row with no visible key is all 0);
 * stages (NULL or 3 slots) receives the scaled scores, the soft-capped ones and the masked ones. */
rlx_mx_arr *rlx_l_attention_probs(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *q, rlx_mx_arr *k, rlx_mx_arr **stages);
/* [B,hq,..] <-> [B,hkv,hq/hkv,..] (query heads grouped by the kv head they use); rank = 4 / 5. */
rlx_mx_arr *rlx_l_attn_group(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *x, int64_t s, int64_t d);
rlx_mx_arr *rlx_l_attn_ungroup(rlx_lower *L, const rlx_l_attn *a, rlx_mx_arr *x, int64_t s, int64_t d);
/* [B,S,H*D] -> [B,H,S,D] and back. */
rlx_mx_arr *rlx_l_split_heads(rlx_lower *L, rlx_mx_arr *x, int64_t B, int64_t S, int64_t H, int64_t D);
rlx_mx_arr *rlx_l_merge_heads(rlx_lower *L, rlx_mx_arr *x, int64_t B, int64_t S, int64_t H, int64_t D);
/* Rotary embedding of x (type t) with cos/sin tables (types tc: [S',>=R/2] or [B|1,S',>=R/2]);
 * interleaved pairs (x[2i], x[2i+1]) instead of halves; sign -1 rotates backwards. */
rlx_mx_arr *rlx_l_rope(rlx_lower *L, rlx_mx_arr *x, const rlx_type *t, rlx_mx_arr *cs, rlx_mx_arr *sn,
                       const rlx_type *tc, int64_t head_dim, int64_t n_rot, bool interleaved, double sign);
/* rlx_l_rope of a Rope-shaped node (Rope, RopeBackward: x, cos, sin; head_dim, n_rot, interleaved). */
rlx_mx_arr *rlx_l_rope_node(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, double sign);

#endif
