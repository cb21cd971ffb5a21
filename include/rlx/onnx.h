/* rlx/onnx.h: the ONNX importer.
 *
 * rlx_onnx_import reads an ONNX model (protobuf, parsed with protobuf-c) and builds an rlx graph:
 * graph inputs become rlx inputs, initializers become params (with their values kept in the
 * model object), ONNX nodes map onto rlx ops according to the opset the model imports. Nodes
 * whose inputs are all constants (Constant, initializer, Shape of a static input...) are folded
 * by running them on MLX, so shape computations become constants. Nothing else runs at import:
 * a value computed from provided input values (rlx_onnx_options_set_input_value) is computed,
 * from the nodes it depends on only, when an op needs to know it. An If whose branches cannot
 * both be typed for the given shapes (ONNX runs only the taken one) keeps the branch its cond
 * picks from provided values, or else the one branch that types, behind an Assert on cond (rlx/op_table.h).
 *
 * Symbolic dims (dim_param, or missing dims) stay symbolic unless the caller fixes them: by
 * dim_param name (rlx_onnx_options_set_dim) or by giving an input's whole shape
 * (rlx_onnx_options_set_shape). Folding needs static shapes, so most real models need their
 * input shapes fixed.
 *
 * An unsupported op, attribute value or data type is an UNIMPLEMENTED error naming the op type,
 * the node name and the opset; a malformed model is INVALID_ARGUMENT or DATA_LOSS naming the
 * node or tensor. Nothing is half-imported: on failure *out is untouched.
 *
 * Thread-safety: distinct calls may run concurrently; a model object is read-only once built.
 */
#ifndef RLX_ONNX_H
#define RLX_ONNX_H

#include <stdio.h>

#include "rlx/executable.h"
#include "rlx/graph.h"
#include "rlx/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_onnx_options rlx_onnx_options;
typedef struct rlx_onnx_model rlx_onnx_model;

/* Options (all optional; an options object may serve several imports, and is only read by them).
 * Errors: INVALID_ARGUMENT (NULL out), RESOURCE_EXHAUSTED. Free with rlx_onnx_options_free (NULL
 * accepted). Names are copied. Setters need exclusive use of the options object. */
RLX_MUST_USE rlx_status *rlx_onnx_options_create(rlx_onnx_options **out);
void rlx_onnx_options_free(rlx_onnx_options *o);
/* Fixes every dim named `dim_param` (in any input) to `size` (>= 0); a later call for the same
 * name replaces the size. Errors: INVALID_ARGUMENT (NULL o, NULL or empty name, negative size),
 * RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_onnx_options_set_dim(rlx_onnx_options *o, const char *dim_param, int64_t size);
/* Fixes the whole shape of input `input` to dims[0..rank) (copied; static). It replaces an
 * earlier shape or value given for that input; rank must match the model's (checked at import:
 * INVALID_ARGUMENT there). Errors: INVALID_ARGUMENT (NULL o or input, NULL dims with rank > 0, rank
 * outside [0, RLX_MAX_RANK], a negative dim), RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_onnx_options_set_shape(rlx_onnx_options *o, const char *input, int32_t rank, const int64_t *dims);

/* Provides the value of graph input `input` for import-time use (borrowed: it must stay valid and
 * unchanged until the last import with these options returns; the model keeps no pointer to it).
 * Where an op needs that input to be known while importing (a Reshape shape, Slice starts, TopK
 * k, Resize sizes, a Loop's trip count, an If's condition when its branches cannot both be
 * typed, also when computed from inputs...), that value is computed then from the nodes it
 * depends on (and only those) and baked into the graph; elsewhere the input stays a run-time
 * input and nothing runs, so an import with values costs about what one with shapes only does. The imported graph is then valid
 * only for runs that pass this same value: where it picked an If's branch, a run whose inputs take
 * the other branch fails with INVALID_ARGUMENT (an Assert node naming the If); values baked into
 * shapes and attributes are not checked at run time. The tensor's shape also fixes the input's shape (as
 * rlx_onnx_options_set_shape). Errors: INVALID_ARGUMENT (NULL argument), RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_onnx_options_set_input_value(rlx_onnx_options *o, const char *input, const rlx_tensor *value);

/* The optimization an import applies when rlx_onnx_options_set_optimize was not called. */
#define RLX_ONNX_DEFAULT_OPTIMIZE "all"

/* Sets the optimization pipeline the import runs on the imported graph: a spec of
 * rlx_graph_optimize (rlx/optimize.h: "none", "basic", "all" or a list of passes; default
 * RLX_ONNX_DEFAULT_OPTIMIZE). The pipeline folds with the model's param values; params that
 * become constants are dropped from the model object. Errors: INVALID_ARGUMENT (NULL argument,
 * an unknown level or pass), RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_onnx_options_set_optimize(rlx_onnx_options *o, const char *spec);

/* Imports the model at `path` (external data files are read relative to its folder) into a new
 * model object (free with rlx_onnx_model_free; NULL accepted). opts may be NULL. The options are
 * checked against the model's declared inputs before anything else is read: NOT_FOUND for an
 * option naming an input the model lacks (listing the model's inputs); INVALID_ARGUMENT for a
 * fixed shape or value that contradicts the declaration, naming the input and what differs (the
 * rank; a dim the model fixes, with both sizes; a dim_param whose size rlx_onnx_options_set_dim
 * sets otherwise; a value's dtype). Errors:
 * INVALID_ARGUMENT (NULL path or out; an inconsistent model: undefined names, shapes or types
 * that do not fit an op; naming the node), OUT_OF_RANGE (an
 * axis or index attribute outside its range), NOT_FOUND (the file or an external data file),
 * DATA_LOSS (not a parsable ModelProto, truncated or malformed tensor data), UNIMPLEMENTED (op,
 * attribute value, data type, symbolic dim or run-time value rlx cannot import: names op type,
 * node name and opset), RESOURCE_EXHAUSTED, INTERNAL (an MLX failure while folding). Node errors
 * read "ONNX node '<name>' (<op>, opset <n>): ...", prefixed with the path. */
RLX_MUST_USE rlx_status *rlx_onnx_import(const char *path, const rlx_onnx_options *opts, rlx_onnx_model **out);
/* Same from an in-memory serialized ModelProto of nbytes bytes (borrowed for the call); `dir` (may
 * be NULL) resolves external data. INVALID_ARGUMENT for NULL bytes or out. */
RLX_MUST_USE rlx_status *rlx_onnx_import_bytes(const void *bytes, size_t nbytes, const char *dir, const rlx_onnx_options *opts,
                                  rlx_onnx_model **out);
void rlx_onnx_model_free(rlx_onnx_model *m);

/* ---- model accessors (m must not be NULL; results are borrowed and live as long as the model,
 * which is read-only once built and may be read from several threads) ---- */
/* The imported graph (owned by the model). Its outputs carry the ONNX output names. */
const rlx_graph *rlx_onnx_model_graph(const rlx_onnx_model *m);
/* The initializers that became params: count, and name/value of param i (NULL for i >= count). */
size_t rlx_onnx_model_num_params(const rlx_onnx_model *m);
const char *rlx_onnx_model_param_name(const rlx_onnx_model *m, size_t i);
const rlx_tensor *rlx_onnx_model_param_value(const rlx_onnx_model *m, size_t i);
/* Sets every param of the model on `ex` (an executable of this model's graph), in order; stops at
 * the first error, which is rlx_executable_set_param's (NOT_FOUND, INVALID_ARGUMENT, INTERNAL), or
 * INVALID_ARGUMENT for a NULL argument. Params set before the error keep their new values. */
RLX_MUST_USE rlx_status *rlx_onnx_model_set_params(const rlx_onnx_model *m, rlx_executable *ex);
/* The default-domain ("" or "ai.onnx") opset the model imports (1 when it lists none). */
int64_t rlx_onnx_model_opset(const rlx_onnx_model *m);

/* Prints a description of the model at `path` to `out` without building it: producer, opsets,
 * inputs and outputs with their types, op types with counts (sub-graphs included), and which op
 * types rlx does not support. Errors: INVALID_ARGUMENT (NULL argument), NOT_FOUND, DATA_LOSS
 * (also a model without a graph), RESOURCE_EXHAUSTED. */
RLX_MUST_USE rlx_status *rlx_onnx_describe(const char *path, FILE *out);

/* Names of the model's graph inputs (initializers excluded), in order: *out_names receives an
 * array of *out_n strings; free each with free(), then the array. Errors: INVALID_ARGUMENT (NULL
 * argument), NOT_FOUND, DATA_LOSS, RESOURCE_EXHAUSTED. Out-parameters untouched on failure. */
RLX_MUST_USE rlx_status *rlx_onnx_input_names(const char *path, char ***out_names, size_t *out_n);

/* true when rlx maps ONNX op `op_type` of `domain` ("", NULL or "ai.onnx" for the default domain)
 * at `opset`; false for a NULL op_type. */
bool rlx_onnx_op_supported(const char *domain, const char *op_type, int64_t opset);

/* Reads a serialized ONNX TensorProto (e.g. the test data's input_0.pb) into a new tensor (free
 * with rlx_tensor_free); external data is read relative to the file's folder. When out_name is not
 * NULL it receives the tensor's name (free with free()). Errors: INVALID_ARGUMENT (NULL path or
 * out), NOT_FOUND, DATA_LOSS, UNIMPLEMENTED (string or other unsupported data types, rank above
 * RLX_MAX_RANK), RESOURCE_EXHAUSTED. Out-parameters untouched on failure. */
RLX_MUST_USE rlx_status *rlx_onnx_tensor_load(const char *path, rlx_tensor **out, char **out_name);

#ifdef __cplusplus
}
#endif
#endif
