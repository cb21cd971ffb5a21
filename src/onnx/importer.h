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
  bool is_input;     /* the value provided for a graph input, or derived from one: known (see
                        rlx_onnx_options_set_input_value) but never folded into a constant */
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

/* ---- tensors ---- */
rlx_status *rlx_onnx_dtype(int32_t onnx_type, rlx_dtype *out);
int32_t rlx_onnx_type_of(rlx_dtype dt);
rlx_status *rlx_onnx_tensor_from_proto(const Onnx__TensorProto *t, const char *dir, rlx_tensor **out);

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
rlx_status *imp_define(rlx_imp *I, const char *name, imp_val v);
/* The graph value of `name` in I's graph (materializing constants/initializers, capturing outer
 * values). */
rlx_status *imp_value(rlx_imp *I, const char *name, rlx_value *out);
/* Captures, in first-use order, every outer value that ONNX graph gp (nested graphs included)
 * reads and does not define, unless it is known at import time (those need no Input). */
rlx_status *imp_capture_free(rlx_imp *I, const Onnx__GraphProto *gp);
/* Imports gp's initializers (as known data) and nodes into scope I; the caller defines gp's
 * inputs first and reads its outputs after. */
rlx_status *imp_body(rlx_imp *I, const Onnx__GraphProto *gp);
/* The value of `name` computed at import time from the graph inputs' provided values
 * (rlx_onnx_options_set_input_value) by running the graph built so far; for what an op needs
 * to know while importing (a Loop's trip count). Top-level scope only; UNIMPLEMENTED when an
 * input it needs has no provided value. *out is a new tensor. */
rlx_status *imp_eval(rlx_imp *I, const char *name, rlx_tensor **out);

/* ---- helpers for mapping functions ---- */
/* Number of inputs present (trailing empty names do not count). */
size_t imp_nin(const Onnx__NodeProto *n);
/* true when input k is present and not the empty name. */
bool imp_has(const Onnx__NodeProto *n, size_t k);
/* The graph value of input k (materializing constants/initializers). */
rlx_status *imp_in(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value *out);
/* The type of input k's value (materialized). */
const rlx_type *imp_type(rlx_imp *I, rlx_value v);
/* The known value of input k, or NULL when it is computed at run time. */
const rlx_tensor *imp_const(rlx_imp *I, const Onnx__NodeProto *n, size_t k);
/* Input k as an int64 list; it must be known at import time (INVALID_ARGUMENT otherwise). The
 * list is malloc'ed into *out (free it). */
rlx_status *imp_const_ints(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, int64_t **out, size_t *cnt);
rlx_status *imp_const_floats(rlx_imp *I, const Onnx__NodeProto *n, size_t k, const char *what, double **out, size_t *cnt);
/* Sets output k of the node. */
rlx_status *imp_out(rlx_imp *I, const Onnx__NodeProto *n, size_t k, rlx_value v);
/* Adds an rlx node labelled with the ONNX node's name. */
rlx_status *imp_add(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                    const rlx_attr *a, rlx_value *out);
rlx_status *imp_addn(rlx_imp *I, const Onnx__NodeProto *n, rlx_op op, size_t nin, const rlx_value *in, size_t na,
                     const rlx_attr *a, size_t cap, rlx_value *out, size_t *nout);
/* A scalar constant (rank 0) of dtype dt. */
rlx_status *imp_scalar(rlx_imp *I, double v, rlx_dtype dt, rlx_value *out);
/* A constant from a host tensor. */
rlx_status *imp_tensor_const(rlx_imp *I, const rlx_tensor *t, rlx_value *out);
/* Casts v to dt (no node when it already is). */
rlx_status *imp_cast(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, rlx_dtype dt, rlx_value *out);
rlx_status *imp_reshape(rlx_imp *I, const Onnx__NodeProto *n, rlx_value v, int rank, const int64_t *dims, rlx_value *out);

/* Attributes. */
const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name);
int64_t imp_attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double imp_attr_f(const Onnx__NodeProto *n, const char *name, double dflt);
/* String attribute copied NUL-terminated into buf (cap bytes); dflt when absent. */
const char *imp_attr_s(const Onnx__NodeProto *n, const char *name, const char *dflt, char *buf, size_t cap);
const int64_t *imp_attr_ints(const Onnx__NodeProto *n, const char *name, size_t *cnt);
const float *imp_attr_floats(const Onnx__NodeProto *n, const char *name, size_t *cnt);

#define IMP_FAIL(code, ...) return RLX_ERR(code, __VA_ARGS__)

#endif
