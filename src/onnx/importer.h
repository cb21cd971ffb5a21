/* importer.h: internals of the ONNX importer (src/onnx). */
#ifndef RLX_ONNX_IMPORTER_H
#define RLX_ONNX_IMPORTER_H

#include "base/strmap.h"
#include "base/util.h"
#include "onnx.pb-c.h"
#include "rlx/onnx.h"

/* What the importer knows about one ONNX value name. */
typedef struct imp_val {
  rlx_value v;       /* the value in the target graph, when has_v */
  bool has_v;
  rlx_tensor *data;  /* its value when known at import time (initializer, constant, folded) */
  bool owns_data;
  bool is_init;      /* an initializer: materialized as a param */
  bool is_input;     /* data computed from provided input values (imp_eval; see
                        rlx_onnx_options_set_input_value): known, but never folded into a constant */
} imp_val;

typedef struct rlx_imp rlx_imp;
struct rlx_imp {
  rlx_graph *g;              /* target graph */
  rlx_strmap vals;           /* ONNX name -> imp_val* */
  int64_t opset;             /* default-domain opset */
  const rlx_onnx_options *opts;
  const char *dir;
  rlx_onnx_model *model;     /* receives params (NULL while folding) */
  rlx_imp *parent;           /* enclosing scope (sub-graphs): outer names resolve there */
  int64_t next_symbol;       /* for unnamed unknown dims */
  rlx_strmap symbols;        /* dim_param -> symbol id + 1 (as pointer) */
  /* The outer values this scope's sub-graph reads, in the order of the Input nodes they became
   * (after the inputs the caller declared); set on the root scope of a sub-graph. */
  char **captures;
  size_t n_captures, cap_captures;
};

/* Maps one ONNX node into I->g (the node's inputs are looked up in I). */
typedef rlx_status *(*rlx_onnx_map_fn)(rlx_imp *I, const Onnx__NodeProto *n);

typedef struct rlx_onnx_op {
  const char *op_type;
  int64_t since;        /* first opset this mapping handles (0 = any) */
  rlx_onnx_map_fn fn;
  bool no_fold;         /* never fold (random ops) */
} rlx_onnx_op;

/* The op-mapping table (import_ops*.c) and its lookup for an opset. */
const rlx_onnx_op *rlx_onnx_find_op(const char *domain, const char *op_type, int64_t opset);
/* The default-domain ("" or "ai.onnx") opset a model imports (1 when it lists none). */
int64_t rlx_onnx_default_opset(const Onnx__ModelProto *mp);

/* Nesting limit of protobuf messages in a file (a model nesting sub-graphs ten deep reaches
 * about 35) and the pre-scan enforcing it before protobuf-c unpacks (wire.c): INVALID_ARGUMENT past
 * the limit (`what` names the bytes), else NULL. */
#define RLX_ONNX_MAX_NESTING 100
/* The most bytes one value computed while importing (folding, Range, the host tables of
 * imp_table_size) may take: a file's declared shapes, attributes and constants cannot make the
 * importer allocate more before any data exists (RESOURCE_EXHAUSTED). */
#define RLX_ONNX_MAX_FOLD_BYTES ((int64_t)1 << 30)
rlx_status *rlx_onnx_check_wire(const void *bytes, size_t n, const char *what);
/* The most steps a mapping unrolls into nodes (Loop iterations, RNN time steps, LinearAttention
 * tokens, MaxPool Indices window taps, DeformConv kernel taps times offset groups): a declared
 * dim of a few bytes in the file cannot make the importer build millions of nodes (an RNN of
 * 100000 steps took 47 s and 700 MB to import). Past it the mapping is UNIMPLEMENTED. */
#define RLX_ONNX_MAX_UNROLL 4096

/* ---- tensors ---- */
RLX_MUST_USE rlx_status *rlx_onnx_dtype(int32_t onnx_type, rlx_dtype *out);
RLX_MUST_USE rlx_status *rlx_onnx_tensor_from_proto(const Onnx__TensorProto *t, const char *dir, rlx_tensor **out);
/* The folder of `path` ("." for a bare file name), where external data files are looked up;
 * written NUL-terminated into dir (cap bytes). */
void rlx_onnx_dir_of(const char *path, char *dir, size_t cap);

/* ---- scopes (ONNX sub-graphs: If branches, Loop and Scan bodies) ----
 * A scope maps ONNX names to values of one rlx graph. A sub-graph scope has its own graph (a
 * new rlx graph that becomes an If/Scan attribute); an inline scope adds to its parent's graph
 * (a Loop iteration unrolled at import). Names resolve through the parent chain. An outer value
 * used in a sub-graph becomes: a Param of the same name when it is an initializer (sub-graph
 * params resolve by name), an inline constant when it is known at import time, and otherwise a
 * capture: an Input of the sub-graph, recorded in the sub-graph's root scope (captures), whose
 * operand the op mapping passes from the parent scope. */
/* Opens scope S under parent P adding to graph g (P->g: inline). Free with imp_scope_free. */
void imp_scope_init(rlx_imp *S, rlx_imp *P, rlx_graph *g);
void imp_scope_free(rlx_imp *S);
/* The scope's view of `name`; NULL when undefined. */
const imp_val *imp_lookup(rlx_imp *I, const char *name);
/* Defines `name` in scope I (data, when set, is borrowed unless owns_data). */
RLX_MUST_USE rlx_status *imp_define(rlx_imp *I, const char *name, imp_val v);
/* The graph value of `name` in I's graph (materializing constants/initializers, capturing outer
 * values). */
RLX_MUST_USE rlx_status *imp_value(rlx_imp *I, const char *name, rlx_value *out);
/* Captures, in first-use order, every outer value that ONNX graph gp (nested graphs included)
 * reads and does not define, unless it is known at import time (those need no Input). */
RLX_MUST_USE rlx_status *imp_capture_free(rlx_imp *I, const Onnx__GraphProto *gp);
/* Imports gp's initializers (as known data) and nodes into scope I; the caller defines gp's
 * inputs first and reads its outputs after. */
RLX_MUST_USE rlx_status *imp_body(rlx_imp *I, const Onnx__GraphProto *gp);
/* The value of `name` at import time: its known data, or else computed now from the graph inputs'
 * provided values (rlx_onnx_options_set_input_value) and the params by running only the nodes it
 * depends on (values captured by a sub-graph are computed in the enclosing scope); for what an op
 * must know while importing (a Reshape's shape, a Loop's trip count). The result is kept with the
 * value (is_input: known, but not a constant to fold) and borrowed by *out. UNIMPLEMENTED when an
 * input it depends on has no provided value; errors of running the slice otherwise. */
RLX_MUST_USE rlx_status *imp_eval(rlx_imp *I, const char *name, const rlx_tensor **out);

/* A possibly negative ONNX axis counted from the end (a + r when a < 0); the caller checks the
 * range. */
static inline int64_t imp_axis(int64_t a, int64_t r) { return a < 0 ? a + r : a; }

/* ---- helpers for mapping functions (import_helpers.c) ----
 * Values and types returned are those of I's graph (rlx_value ids of I->g; type pointers borrowed
 * from it, valid until the next node is added). Errors name the input by position or name; the
 * caller (map_node) prefixes the ONNX node. Out-parameters are untouched on failure. */
/* Number of inputs present (trailing empty names do not count). */
size_t imp_nin(const Onnx__NodeProto *n);
/* true when input k is present and not the empty name. */
bool imp_has(const Onnx__NodeProto *n, size_t k);
/* The graph value of input k (materializing constants/initializers). INVALID_ARGUMENT when input
 * k is missing or its name is undefined. */
RLX_MUST_USE rlx_status *imp_in(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value *out);
/* The type of a value of I's graph. */
const rlx_type *imp_type(rlx_imp *I, rlx_value v);
/* The type of `name` as scope I sees it, without materializing it; NULL when undefined. */
const rlx_type *imp_name_type(rlx_imp *I, const char *name);
/* The static type of input k (from its known data or its graph value) without materializing it.
 * INVALID_ARGUMENT when missing or undefined; UNIMPLEMENTED for symbolic dims when need_static. */
RLX_MUST_USE rlx_status *imp_in_type(rlx_imp *I, const Onnx__NodeProto *n, size_t k, bool need_static, rlx_type *out);
/* The value of input k at import time (borrowed from the scope): known data, or else computed from
 * provided input values (imp_eval); NULL when it is absent or known only at run time. For inputs
 * the op needs to know (a shape, a count). */
const rlx_tensor *imp_const(rlx_imp *I, const Onnx__NodeProto *n, size_t k);
/* The data of input k when already known (a constant, an initializer, a folded or computed
 * value), without computing anything; for optional uses (folding BatchNorm's statistics). */
const rlx_tensor *imp_known(rlx_imp *I, const Onnx__NodeProto *n, size_t k);
/* Input k as an int64 (float64) list; it must be known at import time: INVALID_ARGUMENT when the
 * input is missing, UNIMPLEMENTED when it is computed at run time (`what` names it). The list is
 * malloc'ed into *out (at least one element; free it), *cnt entries. */
RLX_MUST_USE rlx_status *imp_const_ints(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, int64_t **out, size_t *cnt);
RLX_MUST_USE rlx_status *imp_const_floats(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, double **out, size_t *cnt);
/* Defines output k of the node as graph value v (nothing when output k is not requested). */
RLX_MUST_USE rlx_status *imp_out(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value v);
/* Defines output k of the node as known data (takes ownership of t, also on failure). */
RLX_MUST_USE rlx_status *imp_out_data(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_tensor *t);

/* Attributes (absent or of another type: the default). Pointers borrow from the node. */
const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name);
int64_t imp_attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double imp_attr_f(const Onnx__NodeProto *n, const char *name, double dflt);
/* String attribute copied NUL-terminated into buf (cap bytes, truncated); dflt when absent. */
const char *imp_attr_s(const Onnx__NodeProto *n, const char *name, const char *dflt, char *buf, size_t cap);
const int64_t *imp_attr_ints(const Onnx__NodeProto *n, const char *name, size_t *cnt);
const float *imp_attr_floats(const Onnx__NodeProto *n, const char *name, size_t *cnt);
/* An ints attribute copied into a new malloc'ed array (*out, at least one element; free it) of
 * *cnt entries (0 when absent). RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *imp_attr_ints_copy(const Onnx__NodeProto *n, const char *name, int64_t **out, size_t *cnt);

/* Adding rlx nodes to I's graph, labelled with the ONNX node's name (n may be NULL). Errors are
 * rlx_graph_add's. */
const char *imp_node_label(const Onnx__NodeProto *n);
RLX_MUST_USE rlx_status *imp_add(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                    const rlx_attr *a, rlx_value *out);
RLX_MUST_USE rlx_status *imp_addn(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                     const rlx_attr *a, size_t cap, rlx_value *out, size_t *nout);
/* Output 0 of the node = op applied to the node's inputs 0..nin-1 (nin <= 8) with attributes a:
 * the mapping of an ONNX op that is one rlx op. */
RLX_MUST_USE rlx_status *imp_op_out(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, size_t na, const rlx_attr *a);
/* A constant from a host tensor (copied). */
RLX_MUST_USE rlx_status *imp_tensor_const(rlx_imp *I, const rlx_tensor *t, rlx_value *out);
/* A constant from host data of the given static type (copied; numel * dtype size bytes). */
RLX_MUST_USE rlx_status *imp_host_const(rlx_imp *I, rlx_dtype dt, int rank, const int64_t *dims, const void *data, rlx_value *out);
/* v as an int64 without undefined behaviour: NaN is 0, values beyond the range clamp to it. */
int64_t imp_sat_i64(double v);
/* Element i of t as an int64: exact for int64 data, imp_sat_i64 of the value otherwise (0 past
 * the end, as rlx_tensor_get_f64). */
int64_t imp_tensor_i64(const rlx_tensor *t, int64_t i);
/* The entries of a table a mapping builds on the host (a mask, an index or weight table, an
 * arange) from a file's shapes, attributes or constants: the product of the n factors, of elem
 * bytes each, may take at most RLX_ONNX_MAX_FOLD_BYTES (RESOURCE_EXHAUSTED naming `what`, also
 * when the product overflows int64); a negative factor is INVALID_ARGUMENT. *count = the product. */
RLX_MUST_USE rlx_status *imp_table_size(const char *what, size_t elem, int n, const int64_t *f, int64_t *count);
/* 0, 1, .., L-1 as an int64 constant [L] (imp_table_size applies). */
RLX_MUST_USE rlx_status *imp_arange(rlx_imp *I, int64_t L, rlx_value *y);
/* A scalar constant (rank 0) of dtype dt (v converted like a C cast; half types via float32). */
RLX_MUST_USE rlx_status *imp_scalar(rlx_imp *I, double v, rlx_dtype dt, rlx_value *out);
/* Casts v to dt (no node when it already is). */
RLX_MUST_USE rlx_status *imp_cast(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_dtype dt, rlx_value *out);
/* imp_cast with ONNX Cast's saturate (float8 targets; imp_cast saturates). */
RLX_MUST_USE rlx_status *imp_cast_sat(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_dtype dt, bool saturate, rlx_value *out);
RLX_MUST_USE rlx_status *imp_reshape(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int rank, const int64_t *dims, rlx_value *out);
/* y = op(x, c) with c a scalar constant of x's dtype. */
RLX_MUST_USE rlx_status *imp_with_scalar(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value x, double c, rlx_value *y);
RLX_MUST_USE rlx_status *imp_bin(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value a, rlx_value b, rlx_value *y);
RLX_MUST_USE rlx_status *imp_un(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value a, rlx_value *y);
/* Where(c, a, b). */
RLX_MUST_USE rlx_status *imp_select(rlx_imp *I, const Onnx__NodeProto *n, rlx_value c, rlx_value a, rlx_value b, rlx_value *y);
/* x[.., start:start+len, ..] along axis. */
RLX_MUST_USE rlx_status *imp_narrow(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int64_t axis, int64_t start, int64_t len, rlx_value *y);
/* x broadcast to dims (Expand). */
RLX_MUST_USE rlx_status *imp_expand(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int rank, const int64_t *dims, rlx_value *y);
/* A tensor of dims filled with v in dtype dt (a scalar constant expanded). */
RLX_MUST_USE rlx_status *imp_filled(rlx_imp *I, const Onnx__NodeProto *n, double v, rlx_dtype dt, int rank, const int64_t *dims, rlx_value *y);
/* op(x, idx) along axis, op Gather or GatherElements. */
RLX_MUST_USE rlx_status *imp_gather(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, rlx_value x, rlx_value idx, int64_t axis, rlx_value *y);
/* A length-L vector v viewed at rank `rank` along `axis` (size 1 elsewhere), for broadcasting. */
RLX_MUST_USE rlx_status *imp_along(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int rank, int64_t axis, int64_t L, rlx_value *y);
RLX_MUST_USE rlx_status *imp_transpose(rlx_imp *I, const Onnx__NodeProto *n, rlx_value x, int rank, const int64_t *perm, rlx_value *y);
/* Concat of any number of values along axis (v is overwritten with partial results). */
RLX_MUST_USE rlx_status *imp_concat_many(rlx_imp *I, const Onnx__NodeProto *n, rlx_value *v, size_t count, int64_t axis, rlx_value *y);

#define IMP_FAIL(code, ...) return RLX_ERR(code, __VA_ARGS__)

#endif
