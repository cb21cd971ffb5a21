/* The errors standard, spot-checked: bad input to public entry points and to ONNX importer
 * mappings gives a status with the right code and a message naming what was wrong, leaves the
 * out-parameters untouched, and leaks nothing (the sanitizer build runs this with leak checks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnx.pb-c.h"
#include "test_util.h"

#define SENTINEL ((void *)0x5e17)

/* ---- public entry points ---- */

static void test_dtype_and_type(void **state) {
  (void)state;
  rlx_dtype dt = RLX_DTYPE_U16;
  FAILS(rlx_dtype_from_name("float33", &dt), NOT_FOUND, "'float33'");
  FAILS(rlx_dtype_from_name(NULL, &dt), NOT_FOUND, "(null)");
  assert_int_equal(dt, RLX_DTYPE_U16);

  rlx_type t = {.dtype = RLX_DTYPE_I8, .rank = 1, .dims = {7}};
  int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  FAILS(rlx_type_make(RLX_DTYPE_F32, 9, dims, &t), INVALID_ARGUMENT, "rank 9 outside [0, 8]");
  FAILS(rlx_type_make(RLX_DTYPE_F32, -1, dims, &t), INVALID_ARGUMENT, "rank -1");
  FAILS(rlx_type_make(RLX_DTYPE_F32, 2, NULL, &t), INVALID_ARGUMENT, "dims is NULL");
  FAILS(rlx_type_make((rlx_dtype)99, 1, dims, &t), INVALID_ARGUMENT, "invalid dtype 99");
  assert_int_equal(t.dtype, RLX_DTYPE_I8);
  assert_int_equal(t.dims[0], 7);

  int64_t numel = -7;
  size_t nbytes = 7;
  rlx_type sym = ttype(RLX_DTYPE_F32, 2, (int64_t[]){2, RLX_DIM_SYMBOL(0)});
  FAILS(rlx_type_numel(&sym, &numel), INVALID_ARGUMENT, "symbolic dim 1");
  rlx_type huge = ttype(RLX_DTYPE_F64, 3, (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40, 4});
  FAILS(rlx_type_numel(&huge, &numel), RESOURCE_EXHAUSTED, "overflows");
  rlx_type big = ttype(RLX_DTYPE_F64, 2, (int64_t[]){INT64_C(1) << 31, INT64_C(1) << 31});
  FAILS(rlx_type_nbytes(&big, &nbytes), RESOURCE_EXHAUSTED, "byte size overflows");
  assert_int_equal(numel, -7);
  assert_int_equal(nbytes, 7);

  char buf[8];
  rlx_type s2 = ttype(RLX_DTYPE_F32, 3, (int64_t[]){2, RLX_DIM_SYMBOL(3), RLX_DIM_DYNAMIC});
  assert_string_equal(rlx_type_str(&s2, buf, sizeof buf), "float32"); /* truncated, terminated */
  char full[64];
  assert_string_equal(rlx_type_str(&s2, full, sizeof full), "float32[2,s3,?]");
}

static void test_tensor_create(void **state) {
  (void)state;
  rlx_tensor *t = SENTINEL;
  float data[3] = {1, 2, 3};
  FAILS(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){3}, data, 8, &t), INVALID_ARGUMENT, "needs 12 bytes, got 8");
  FAILS(rlx_tensor_create(RLX_DTYPE_F32, 2, (int64_t[]){3, -1}, data, 12, &t), INVALID_ARGUMENT, "tensor dim 1 is -1");
  FAILS(rlx_tensor_create(RLX_DTYPE_F32, 1, NULL, data, 12, &t), INVALID_ARGUMENT, "dims is NULL");
  FAILS(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){3}, data, 12, NULL), INVALID_ARGUMENT, "out is NULL");
  FAILS(rlx_tensor_wrap(RLX_DTYPE_F32, 1, (int64_t[]){3}, NULL, 12, &t), INVALID_ARGUMENT, "data is NULL");
  FAILS(rlx_tensor_create(RLX_DTYPE_U8, 2, (int64_t[]){INT64_C(1) << 62, 8}, NULL, 0, &t), RESOURCE_EXHAUSTED, "overflows");
  FAILS(rlx_tensor_copy(NULL, &t), INVALID_ARGUMENT, "NULL");
  assert_ptr_equal(t, SENTINEL);
}

/* A .npy image: magic, version, header dict padded with spaces, then `data`. */
static size_t npy_image(unsigned char *out, unsigned major, const char *dict, const void *data, size_t nd) {
  size_t pre = major == 1 ? 10 : 12, hl = strlen(dict) + 1;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)major, out[7] = 0;
  out[8] = (unsigned char)(hl & 0xff), out[9] = (unsigned char)(hl >> 8);
  if (major != 1) out[10] = out[11] = 0;
  memcpy(out + pre, dict, hl - 1);
  out[pre + hl - 1] = '\n';
  if (nd) memcpy(out + pre + hl, data, nd);
  return pre + hl + nd;
}

static void test_npy(void **state) {
  (void)state;
  unsigned char img[512];
  float v[2] = {1, 2};
  rlx_tensor *t = SENTINEL;
  size_t n = npy_image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
  rlx_tensor *ok;
  OK(rlx_npy_parse(img, n, "good", &ok));
  assert_true(rlx_tensor_get_f64(ok, 1) == 2.0);
  rlx_tensor_free(ok);
  FAILS(rlx_npy_parse(img, n - 1, "short.npy", &t), DATA_LOSS, "short.npy: .npy data truncated: 7 bytes, expected 8");
  FAILS(rlx_npy_parse("NUMPY!!!!!!!", 12, "magic.npy", &t), DATA_LOSS, "magic.npy: not a .npy file (bad magic)");
  n = npy_image(img, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
  FAILS(rlx_npy_parse(img, n, "be.npy", &t), UNIMPLEMENTED, "'>f4'");
  n = npy_image(img, 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
  FAILS(rlx_npy_parse(img, n, "v4.npy", &t), UNIMPLEMENTED, "format version 4");
  n = npy_image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", v, 4);
  FAILS(rlx_npy_parse(img, n, "r9.npy", &t), UNIMPLEMENTED, "rank above 8");
  n = npy_image(img, 1, "{'descr': '<f4', 'shape': (2,), }", v, sizeof v);
  FAILS(rlx_npy_parse(img, n, "nofo.npy", &t), DATA_LOSS, "no 'fortran_order'");
  n = npy_image(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,-3), }", v, sizeof v);
  FAILS(rlx_npy_parse(img, n, "neg.npy", &t), DATA_LOSS, "malformed shape");
  FAILS(rlx_npy_parse(NULL, 10, NULL, &t), INVALID_ARGUMENT, ".npy data: rlx_npy_parse: NULL argument");
  FAILS(rlx_npy_load("/nonexistent/dir/x.npy", &t), NOT_FOUND, "'/nonexistent/dir/x.npy'");
  assert_ptr_equal(t, SENTINEL);
  rlx_tensor *s;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){2}, v, sizeof v, &s));
  FAILS(rlx_npy_save("/nonexistent/dir/x.npy", s), UNAVAILABLE, "cannot create '/nonexistent/dir/x.npy'");
  FAILS(rlx_npy_save(NULL, s), INVALID_ARGUMENT, "NULL");
  rlx_tensor_free(s);
}

static void test_graph_leaves_and_lookup(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value v = 777;
  rlx_type sym = ttype(RLX_DTYPE_F32, 1, (int64_t[]){RLX_DIM_SYMBOL(0)});
  FAILS(rlx_graph_add_param(g, "w", &sym, &v), INVALID_ARGUMENT, "param 'w'");
  FAILS(rlx_graph_add_input(g, "", &sym, &v), INVALID_ARGUMENT, "empty name");
  FAILS(rlx_graph_add_input(g, "x", NULL, &v), INVALID_ARGUMENT, "NULL argument");
  rlx_type bad_rank = {.dtype = RLX_DTYPE_F32, .rank = 12};
  FAILS(rlx_graph_add_input(g, "x", &bad_rank, &v), INVALID_ARGUMENT, "rank 12");
  rlx_type t3 = ttype(RLX_DTYPE_F32, 1, (int64_t[]){3});
  FAILS(rlx_graph_add_constant(g, &t3, NULL, 12, &v), INVALID_ARGUMENT, "constant data is NULL");
  FAILS(rlx_graph_add_constant(g, &sym, NULL, 0, &v), INVALID_ARGUMENT, "constants need static shapes");
  assert_int_equal(v, 777);
  assert_int_equal(rlx_graph_num_nodes(g), 0);
  FAILS(rlx_graph_find(g, "x", &v), NOT_FOUND, "'x'");
  FAILS(rlx_graph_find(g, "x", NULL), INVALID_ARGUMENT, "NULL");
  assert_int_equal(v, 777);
  assert_int_equal(rlx_graph_value_op(g, 5), RLX_OP_COUNT);
  OK(rlx_graph_add_input(g, "x", &t3, &v));
  FAILS(rlx_graph_set_output_name(g, 0, "y"), OUT_OF_RANGE, "graph has 0 outputs");
  OK(rlx_graph_set_outputs(g, 1, &v));
  FAILS(rlx_graph_set_output_name(g, 0, ""), INVALID_ARGUMENT, "empty name");
  FAILS(rlx_graph_set_outputs(g, 1, (rlx_value[]){9}), NOT_FOUND, "value 9");
  assert_string_equal(rlx_graph_output_name(g, 0), "out0");
  /* outputs by name; names are unique */
  OK(rlx_graph_set_outputs(g, 2, (rlx_value[]){v, v}));
  OK(rlx_graph_set_output_name(g, 1, "y"));
  size_t oi = 99;
  OK(rlx_graph_output_index(g, "y", &oi));
  assert_int_equal(oi, 1);
  FAILS(rlx_graph_set_output_name(g, 0, "y"), ALREADY_EXISTS, "output 1 is already named 'y'");
  FAILS(rlx_graph_output_index(g, "z", &oi), NOT_FOUND, "no output named 'z' (outputs: out0, y)");
  FAILS(rlx_graph_output_index(g, NULL, &oi), NOT_FOUND, "(null)");
  assert_int_equal(oi, 1);
  rlx_op op = RLX_OP_ABS;
  FAILS(rlx_op_from_name("Matmul", &op), NOT_FOUND, "'Matmul'");
  assert_int_equal(op, RLX_OP_ABS);
  rlx_graph_free(g);
}

static void test_graph_add(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x, c, out[2] = {55, 56};
  size_t n_out = 99;
  rlx_type t = ttype(RLX_DTYPE_F32, 2, (int64_t[]){2, 3});
  OK(rlx_graph_add_input(g, "x", &t, &x));
  OK(rlx_graph_add_input(g, "c", &(rlx_type){.dtype = RLX_DTYPE_BOOL}, &c));
  rlx_attr k = RLX_ATTR_I("k", 2);
  FAILS(rlx_graph_add(g, RLX_OP_TOPK, "top", 1, &x, 1, &k, 1, out, &n_out), INVALID_ARGUMENT, "2 outputs but out_cap is 1");
  FAILS(rlx_graph_add(g, RLX_OP_INPUT, NULL, 0, NULL, 0, NULL, 1, out, &n_out), INVALID_ARGUMENT, "leaves are added with");
  FAILS(rlx_graph_add(g, (rlx_op)1000, NULL, 1, &x, 0, NULL, 1, out, &n_out), INVALID_ARGUMENT, "invalid op 1000");
  FAILS(rlx_graph_add(g, RLX_OP_ABS, NULL, 1, NULL, 0, NULL, 1, out, &n_out), INVALID_ARGUMENT, "inputs is NULL");
  rlx_attr twice[2] = {RLX_ATTR_I("axis", 0), RLX_ATTR_I("axis", 1)};
  FAILS(rlx_graph_add(g, RLX_OP_SOFTMAX, NULL, 1, &x, 2, twice, 1, out, &n_out), INVALID_ARGUMENT, "'axis' given twice");
  rlx_attr big = RLX_ATTR_IS("repeats", 2, ((int64_t[]){INT64_C(1) << 62, 1}));
  FAILS(rlx_graph_add(g, RLX_OP_TILE, NULL, 1, &x, 1, &big, 1, out, &n_out), RESOURCE_EXHAUSTED, "overflows int64");
  rlx_attr geps[2] = {RLX_ATTR_I("num_groups", 1), RLX_ATTR_F("epsilon", -1)};
  rlx_value gn_in[3] = {x, x, x};
  FAILS(rlx_graph_add(g, RLX_OP_GROUP_NORM, "gn", 3, gn_in, 2, geps, 1, out, &n_out), INVALID_ARGUMENT, "epsilon must be >= 0");
  /* a sub-graph attribute stays with the caller when the node fails */
  rlx_graph *then_g, *else_g;
  OK(rlx_graph_create(&then_g));
  OK(rlx_graph_create(&else_g));
  rlx_value tv, ev;
  OK(rlx_graph_add_input(then_g, "a", &t, &tv));
  OK(rlx_graph_set_outputs(then_g, 1, &tv));
  OK(rlx_graph_add_input(else_g, "a", &t, &ev));
  rlx_value ev2;
  OK(rlx_graph_add1(else_g, RLX_OP_REDUCE, NULL, 1, &ev, 1, &RLX_ATTR_S("kind", "sum"), &ev2));
  OK(rlx_graph_set_outputs(else_g, 1, &ev2));
  rlx_attr br[2] = {RLX_ATTR_G("then_branch", then_g), RLX_ATTR_G("else_branch", else_g)};
  FAILS(rlx_graph_add(g, RLX_OP_IF, "if", 2, (rlx_value[]){c, x}, 2, br, 2, out, &n_out), INVALID_ARGUMENT, "node 2 (If 'if')");
  assert_int_equal(out[0], 55);
  assert_int_equal(out[1], 56);
  assert_int_equal(n_out, 99);
  assert_int_equal(rlx_graph_num_nodes(g), 2);
  rlx_graph_free(then_g); /* still ours */
  rlx_graph_free(else_g);
  rlx_graph_free(g);
}

static rlx_status *infer_same(void *ud, size_t n_in, const rlx_type *in, size_t n_attrs, const rlx_attr *attrs, size_t out_cap,
                              rlx_type *out, size_t *n_out) {
  (void)ud, (void)n_in, (void)n_attrs, (void)attrs, (void)out_cap;
  out[0] = in[0];
  *n_out = 1;
  return NULL;
}

static rlx_status *host_copy(void *ud, size_t n_in, const rlx_tensor *const *in, size_t n_attrs, const rlx_attr *attrs, size_t n_out,
                             rlx_tensor *const *out) {
  (void)ud, (void)n_in, (void)n_attrs, (void)attrs, (void)n_out;
  memcpy(rlx_tensor_data(out[0]), rlx_tensor_cdata(in[0]), rlx_tensor_nbytes(in[0]));
  return NULL;
}

static void test_registry(void **state) {
  (void)state;
  bool replaced = true;
  FAILS(rlx_custom_op_register(NULL, &replaced), INVALID_ARGUMENT, "def is NULL");
  rlx_custom_op_def d = {.name = "errors.copy", .min_inputs = 1, .max_inputs = 1, .host = host_copy};
  FAILS(rlx_custom_op_register(&d, &replaced), INVALID_ARGUMENT, "infer (shape inference) is required");
  d.infer = infer_same;
  d.expand = (rlx_custom_expand_fn)1;
  FAILS(rlx_custom_op_register(&d, &replaced), INVALID_ARGUMENT, "not both");
  d.expand = NULL;
  d.min_inputs = 2;
  FAILS(rlx_custom_op_register(&d, &replaced), INVALID_ARGUMENT, "arity [2, 1]");
  d.name = "";
  FAILS(rlx_custom_op_register(&d, &replaced), INVALID_ARGUMENT, "non-empty name");
  assert_true(replaced);
  assert_false(rlx_custom_op_is_registered("errors.copy"));
  FAILS(rlx_custom_op_unregister("errors.copy"), NOT_FOUND, "'errors.copy'");
  FAILS(rlx_custom_op_unregister(NULL), INVALID_ARGUMENT, "name is NULL");
  assert_false(rlx_custom_op_is_registered(NULL));
}

static void test_onnx_entry_points(void **state) {
  (void)state;
  rlx_onnx_options *o;
  OK(rlx_onnx_options_create(&o));
  FAILS(rlx_onnx_options_set_dim(o, "N", -2), INVALID_ARGUMENT, "dim 'N': size -2");
  FAILS(rlx_onnx_options_set_dim(o, "", 2), INVALID_ARGUMENT, "empty");
  FAILS(rlx_onnx_options_set_shape(o, "x", 9, (int64_t[9]){0}), INVALID_ARGUMENT, "input 'x': rank 9");
  FAILS(rlx_onnx_options_set_shape(o, "x", 2, (int64_t[]){2, -1}), INVALID_ARGUMENT, "dim 1 is negative");
  FAILS(rlx_onnx_options_set_input_value(o, "x", NULL), INVALID_ARGUMENT, "NULL");
  OK(rlx_onnx_options_set_shape(o, "scalar", 0, NULL)); /* rank 0 needs no dims (once passed NULL to memcpy) */
  rlx_onnx_options_free(o);

  rlx_onnx_model *m = SENTINEL;
  FAILS(rlx_onnx_import("/nonexistent/model.onnx", NULL, &m), NOT_FOUND, "/nonexistent/model.onnx");
  FAILS(rlx_onnx_import_bytes("\xff\xff\xff\xff", 4, NULL, NULL, &m), DATA_LOSS, "not a serialized ONNX ModelProto");
  FAILS(rlx_onnx_import_bytes(NULL, 0, NULL, NULL, &m), INVALID_ARGUMENT, "NULL");
  assert_ptr_equal(m, SENTINEL);
  rlx_tensor *t = SENTINEL;
  char *name = SENTINEL;
  FAILS(rlx_onnx_tensor_load("/nonexistent/input_0.pb", &t, &name), NOT_FOUND, "input_0.pb");
  assert_ptr_equal(t, SENTINEL);
  assert_ptr_equal(name, SENTINEL);
  char **names = SENTINEL;
  size_t n = 42;
  FAILS(rlx_onnx_input_names("/nonexistent/model.onnx", &names, &n), NOT_FOUND, "model.onnx");
  FAILS(rlx_onnx_describe("/nonexistent/model.onnx", stdout), NOT_FOUND, "model.onnx");
  FAILS(rlx_onnx_describe(NULL, stdout), INVALID_ARGUMENT, "NULL");
  assert_ptr_equal(names, SENTINEL);
  assert_int_equal(n, 42);
  assert_false(rlx_onnx_op_supported("", NULL, 18));
  assert_false(rlx_onnx_op_supported("", "NoSuchOp", 18));
}

/* ElementwiseRegion ignores the operand fields a step does not read (a unary step's b and c): they
 * once indexed the step results past their end while lowering. */
static void test_region_ignores_unused_operands(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x, y;
  rlx_type t = ttype(RLX_DTYPE_F32, 1, (int64_t[]){2});
  OK(rlx_graph_add_input(g, "x", &t, &x));
  int64_t chain[10] = {0, RLX_OP_NEG, 0, -1000, 5000, 0, RLX_OP_EXP, -1, -77, 9};
  rlx_attr a = RLX_ATTR_IS("chain", 10, chain);
  OK(rlx_graph_add1(g, RLX_OP_ELEMENTWISE_REGION, "region", 1, &x, 1, &a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_executable *ex;
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex));
  float xv[2] = {0, 1};
  rlx_tensor *in, *res = NULL;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){2}, xv, sizeof xv, &in));
  OK(rlx_executable_run(ex, 1, (const char *[]){"x"}, (rlx_tensor *const[]){in}, 1, &res));
  assert_float_equal(rlx_tensor_get_f64(res, 0), 1.0, 1e-6);
  assert_float_equal(rlx_tensor_get_f64(res, 1), 0.36787944, 1e-6);
  rlx_tensor_free(res);
  rlx_tensor_free(in);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* ---- ONNX importer mappings: one-node models built with protobuf-c ---- */

enum { ONNX_FLOAT = 1, ONNX_BOOL = 9, ONNX_INT64 = 7 };

/* A model with one node "n0" of op_type; fixed-capacity storage, nothing allocated. */
typedef struct mb {
  Onnx__ModelProto m;
  Onnx__OperatorSetIdProto opset, *opsets[1];
  Onnx__GraphProto g;
  Onnx__NodeProto node, *nodes[1];
  char *node_in[8], *node_out[4];
  Onnx__ValueInfoProto in[4], out[4], *inp[4], *outp[4];
  Onnx__TypeProto tp[4];
  Onnx__TypeProto__Tensor tt[4];
  Onnx__TensorShapeProto sh[4];
  Onnx__TensorShapeProto__Dimension dim[4][RLX_MAX_RANK], *dimp[4][RLX_MAX_RANK];
  Onnx__TensorProto init[6], *initp[6];
  int64_t init_dims[6][RLX_MAX_RANK];
  Onnx__AttributeProto attr[6], *attrp[6];
  ProtobufCBinaryData strs[4];
} mb;

static void mb_init(mb *b, const char *op_type, const char *domain, int64_t opset) {
  memset(b, 0, sizeof *b);
  onnx__model_proto__init(&b->m);
  onnx__operator_set_id_proto__init(&b->opset);
  onnx__graph_proto__init(&b->g);
  onnx__node_proto__init(&b->node);
  b->m.has_ir_version = 1, b->m.ir_version = 8;
  b->opset.domain = "", b->opset.has_version = 1, b->opset.version = opset;
  b->opsets[0] = &b->opset;
  b->m.n_opset_import = 1, b->m.opset_import = b->opsets;
  b->m.graph = &b->g;
  b->g.name = "g";
  b->nodes[0] = &b->node;
  b->g.n_node = 1, b->g.node = b->nodes;
  b->node.name = "n0", b->node.op_type = (char *)op_type, b->node.domain = (char *)domain;
  b->node.input = b->node_in, b->node.output = b->node_out, b->node.attribute = b->attrp;
  b->g.input = b->inp, b->g.output = b->outp, b->g.initializer = b->initp;
}

/* A graph input of elem[dims] that the node reads next. */
static void mb_input(mb *b, const char *name, int32_t elem, int rank, const int64_t *dims) {
  size_t i = b->g.n_input++;
  onnx__value_info_proto__init(&b->in[i]);
  onnx__type_proto__init(&b->tp[i]);
  onnx__type_proto__tensor__init(&b->tt[i]);
  onnx__tensor_shape_proto__init(&b->sh[i]);
  for (int d = 0; d < rank; d++) {
    onnx__tensor_shape_proto__dimension__init(&b->dim[i][d]);
    b->dim[i][d].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    b->dim[i][d].dim_value = dims[d];
    b->dimp[i][d] = &b->dim[i][d];
  }
  b->sh[i].n_dim = (size_t)rank, b->sh[i].dim = b->dimp[i];
  b->tt[i].has_elem_type = 1, b->tt[i].elem_type = elem, b->tt[i].shape = &b->sh[i];
  b->tp[i].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, b->tp[i].tensor_type = &b->tt[i];
  b->in[i].name = (char *)name, b->in[i].type = &b->tp[i];
  b->inp[i] = &b->in[i];
  b->node_in[b->node.n_input++] = (char *)name;
}

/* An initializer elem[dims] with raw little-endian bytes that the node reads next. */
static void mb_const(mb *b, const char *name, int32_t elem, int rank, const int64_t *dims, const void *data, size_t nbytes) {
  size_t i = b->g.n_initializer++;
  onnx__tensor_proto__init(&b->init[i]);
  if (rank) memcpy(b->init_dims[i], dims, sizeof(int64_t) * (size_t)rank);
  b->init[i].n_dims = (size_t)rank, b->init[i].dims = b->init_dims[i];
  b->init[i].has_data_type = 1, b->init[i].data_type = elem;
  b->init[i].name = (char *)name;
  b->init[i].has_raw_data = 1, b->init[i].raw_data = (ProtobufCBinaryData){nbytes, (uint8_t *)data};
  b->initp[i] = &b->init[i];
  b->node_in[b->node.n_input++] = (char *)name;
}

static void mb_ints(mb *b, const char *name, size_t n, const int64_t *v) {
  mb_const(b, name, ONNX_INT64, 1, (int64_t[]){(int64_t)n}, v, n * sizeof *v);
}

static void mb_skip_input(mb *b) { b->node_in[b->node.n_input++] = ""; }

static void mb_output(mb *b, const char *name) {
  size_t i = b->g.n_output++;
  onnx__value_info_proto__init(&b->out[i]);
  b->out[i].name = (char *)name;
  b->outp[i] = &b->out[i];
  b->node_out[b->node.n_output++] = (char *)name;
}

static Onnx__AttributeProto *mb_attr(mb *b, const char *name, Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = &b->attr[b->node.n_attribute];
  b->attrp[b->node.n_attribute++] = a;
  onnx__attribute_proto__init(a);
  a->name = (char *)name, a->has_type = 1, a->type = type;
  return a;
}

static void mb_attr_i(mb *b, const char *name, int64_t v) {
  Onnx__AttributeProto *a = mb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1, a->i = v;
}

static void mb_attr_ints(mb *b, const char *name, size_t n, int64_t *v) {
  Onnx__AttributeProto *a = mb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = n, a->ints = v;
}

static void mb_attr_s(mb *b, const char *name, const char *v) {
  Onnx__AttributeProto *a = mb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1, a->s = (ProtobufCBinaryData){strlen(v), (uint8_t *)v};
}

static void mb_attr_strs(mb *b, const char *name, size_t n, const char *const *v) {
  Onnx__AttributeProto *a = mb_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  for (size_t i = 0; i < n; i++) b->strs[i] = (ProtobufCBinaryData){strlen(v[i]), (uint8_t *)v[i]};
  a->n_strings = n, a->strings = b->strs;
}

/* Imports the model and checks the failure: code, the node named in the message, and `needle`;
 * the out-parameter stays untouched. */
static void import_fails(mb *b, rlx_status_code code, const char *needle) {
  size_t n = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = malloc(n);
  assert_non_null(buf);
  onnx__model_proto__pack(&b->m, buf);
  rlx_onnx_model *m = SENTINEL;
  rlx_status *st = rlx_onnx_import_bytes(buf, n, NULL, NULL, &m);
  free(buf);
  if (!st) fail_msg("%s imported, expected %s", b->node.op_type, rlx_status_code_name(code));
  const char *msg = rlx_status_message(st);
  char node[64];
  snprintf(node, sizeof node, "ONNX node 'n0' (%s", b->node.op_type);
  if (rlx_status_code_of(st) != code || !strstr(msg, node) || !strstr(msg, needle))
    fail_msg("%s: expected %s with '%s' and '%s', got %s: %s", b->node.op_type, rlx_status_code_name(code), node, needle,
             rlx_status_code_name(rlx_status_code_of(st)), msg);
  rlx_status_free(st);
  assert_ptr_equal(m, SENTINEL);
}

static const int64_t D23[2] = {2, 3};

static void test_import_shape_ops(void **state) {
  (void)state;
  mb b;
  /* Pad-18 with an axes input outside the rank (once wrote past its pads array) */
  mb_init(&b, "Pad", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "pads", 2, (int64_t[]){1, 1});
  mb_skip_input(&b);
  mb_ints(&b, "axes", 1, (int64_t[]){5});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_OUT_OF_RANGE, "axes[0] = 5 for rank 2");

  mb_init(&b, "Reshape", "", 14);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "shape", 2, (int64_t[]){-1, -1});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "more than one -1");

  /* a shape whose element count overflows int64 (UBSan in the importer's product; fuzz_onnx) */
  mb_init(&b, "Reshape", "", 14);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "shape", 3, (int64_t[]){INT64_C(1) << 62, -1, INT64_C(1) << 62});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "the shape's element count overflows int64");

  mb_init(&b, "Reshape", "", 14);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_input(&b, "shape", ONNX_INT64, 1, (int64_t[]){2});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_UNIMPLEMENTED, "input 1 (shape) must be known at import time");

  mb_init(&b, "Squeeze", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "axes", 1, (int64_t[]){0});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "cannot squeeze axis 0 of float32[2,3]");

  mb_init(&b, "Unsqueeze", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "axes", 2, (int64_t[]){0, 0});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "bad unsqueeze axis 0");

  mb_init(&b, "Flatten", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_attr_i(&b, "axis", 5);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_OUT_OF_RANGE, "axis 5 for rank 2");

  mb_init(&b, "Split", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 1, (int64_t[]){6});
  mb_ints(&b, "split", 2, (int64_t[]){1, 2});
  mb_output(&b, "y0"), mb_output(&b, "y1"), mb_output(&b, "y2");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "split has 2 entries for 3 outputs");

  /* Slice-1: the attribute form, ends missing */
  int64_t starts[1] = {0};
  mb_init(&b, "Slice", "", 9);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_attr_ints(&b, "starts", 1, starts);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "starts, ends, axes, steps lengths differ: 1, 0");

  mb_init(&b, "Tile", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_ints(&b, "repeats", 2, (int64_t[]){-1, 1});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "repeats[0] = -1 is negative");

  mb_init(&b, "Concat", "", 13);
  mb_input(&b, "a", ONNX_FLOAT, 2, D23);
  mb_input(&b, "b", ONNX_FLOAT, 1, (int64_t[]){3});
  mb_attr_i(&b, "axis", 0);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "input 1 has rank 1, input 0 has rank 2");

  mb_init(&b, "DepthToSpace", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 4, (int64_t[]){1, 4, 2, 2});
  mb_attr_i(&b, "blocksize", 0);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "blocksize must be > 0");

  mb_init(&b, "Trilu", "", 14);
  mb_input(&b, "x", ONNX_FLOAT, 1, (int64_t[]){4});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "input must have rank >= 2");

  uint8_t cond[4] = {1, 0, 1, 1};
  mb_init(&b, "Compress", "", 11);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_const(&b, "cond", ONNX_BOOL, 1, (int64_t[]){4}, cond, sizeof cond);
  mb_attr_i(&b, "axis", 1);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "condition has 4 entries for 3 slices");
}

static void test_import_math_ops(void **state) {
  (void)state;
  mb b;
  /* every input known: the mapping runs while folding */
  int64_t start = 0, limit = 5, delta = 0;
  mb_init(&b, "Range", "", 11);
  mb_const(&b, "start", ONNX_INT64, 0, NULL, &start, 8);
  mb_const(&b, "limit", ONNX_INT64, 0, NULL, &limit, 8);
  mb_const(&b, "delta", ONNX_INT64, 0, NULL, &delta, 8);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "Range delta is 0");

  mb_init(&b, "Gelu", "", 20);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_attr_s(&b, "approximate", "fast");
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "Gelu approximate='fast'");

  mb_init(&b, "Einsum", "", 12);
  mb_input(&b, "a", ONNX_FLOAT, 2, D23);
  mb_attr_s(&b, "equation", "ij,jk->ik");
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "more terms than the 1 inputs");

  float w[12] = {0}, r[16] = {0};
  const char *acts[1] = {"Foo"};
  mb_init(&b, "RNN", "", 14);
  mb_input(&b, "X", ONNX_FLOAT, 3, (int64_t[]){2, 1, 3});
  mb_const(&b, "W", ONNX_FLOAT, 3, (int64_t[]){1, 4, 3}, w, sizeof w);
  mb_const(&b, "R", ONNX_FLOAT, 3, (int64_t[]){1, 4, 4}, r, sizeof r);
  mb_attr_i(&b, "hidden_size", 4);
  mb_attr_strs(&b, "activations", 1, acts);
  mb_output(&b, "Y");
  import_fails(&b, RLX_STATUS_UNIMPLEMENTED, "activation 'Foo'");

  mb_init(&b, "Resize", "", 19);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "Resize needs scales or sizes");

  mb_init(&b, "Momentum", "ai.onnx.preview.training", 18);
  mb_input(&b, "R", ONNX_FLOAT, 0, NULL);
  mb_input(&b, "T", ONNX_INT64, 0, NULL);
  mb_input(&b, "X", ONNX_FLOAT, 1, (int64_t[]){3});
  mb_input(&b, "G", ONNX_FLOAT, 1, (int64_t[]){3});
  mb_skip_input(&b);
  mb_output(&b, "X_new");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "4 inputs: expected R, T and groups of 3 tensors");

  mb_init(&b, "NoSuchOp", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 2, D23);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_UNIMPLEMENTED, "op NoSuchOp is not supported by rlx at opset 18");
}

/* GroupNormalization-18 (scale and bias per group): num_groups is required and must divide the
 * channels (ONNX spec); a missing one with [0] scale and bias divided by zero (fuzz_onnx). */
static void test_import_group_norm(void **state) {
  (void)state;
  mb b;
  const int64_t x4[4] = {1, 4, 2, 2};
  mb_init(&b, "GroupNormalization", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 4, x4);
  mb_input(&b, "scale", ONNX_FLOAT, 1, (int64_t[]){0});
  mb_input(&b, "bias", ONNX_FLOAT, 1, (int64_t[]){0});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "num_groups must be positive (the attribute is required), got 0");

  mb_init(&b, "GroupNormalization", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 4, x4);
  mb_input(&b, "scale", ONNX_FLOAT, 1, (int64_t[]){3});
  mb_input(&b, "bias", ONNX_FLOAT, 1, (int64_t[]){3});
  mb_attr_i(&b, "num_groups", 3);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "X float32[1,4,2,2] needs a fixed channel count that num_groups 3 divides");

  mb_init(&b, "GroupNormalization", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 1, (int64_t[]){4});
  mb_input(&b, "scale", ONNX_FLOAT, 1, (int64_t[]){2});
  mb_input(&b, "bias", ONNX_FLOAT, 1, (int64_t[]){2});
  mb_attr_i(&b, "num_groups", 2);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "X must be [N,C,...], got float32[4]");
}

/* Tables, integers and unrolled steps the importer derives on the host from declared shapes,
 * attributes and constants: sizes are overflow-checked and capped (RLX_ONNX_MAX_FOLD_BYTES,
 * RLX_ONNX_MAX_UNROLL), values converted without undefined behaviour. Each case once overflowed int64, converted a non-finite or huge
 * double to int64, or under-allocated a table and wrote past it (found with fuzz_onnx's build). */
static void test_import_host_tables(void **state) {
  (void)state;
  mb b;
  const int64_t big = INT64_C(1) << 32, zero = 0;
  mb_init(&b, "CumProd", "", 24);
  mb_input(&b, "x", ONNX_FLOAT, 1, &big);
  mb_const(&b, "axis", ONNX_INT64, 0, NULL, &zero, 8);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the CumProd mask of more than 2^63 entries");

  mb_init(&b, "Einsum", "", 12);
  mb_input(&b, "x", ONNX_FLOAT, 2, (int64_t[]){big, big});
  mb_attr_s(&b, "equation", "ii->i");
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the einsum diagonal mask");

  /* blocks of 2^16 x 2^16 over a 131071 x 131071 image: 2^32 columns of 2^32 blocks */
  mb_init(&b, "Col2Im", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 3, (int64_t[]){1, big, big});
  mb_ints(&b, "image_shape", 2, (int64_t[]){131071, 131071});
  mb_ints(&b, "block_shape", 2, (int64_t[]){65536, 65536});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the Col2Im index table of more than 2^63 entries");

  mb_init(&b, "Col2Im", "", 18);
  mb_input(&b, "x", ONNX_FLOAT, 3, (int64_t[]){1, 4, 4});
  mb_ints(&b, "image_shape", 2, (int64_t[]){3, 3});
  mb_ints(&b, "block_shape", 2, (int64_t[]){2, 2});
  mb_attr_ints(&b, "strides", 2, (int64_t[]){0, 1});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "dim 0: image 3, block 2, dilation 1, stride 0");

  mb_init(&b, "EyeLike", "", 13);
  mb_input(&b, "x", ONNX_FLOAT, 2, (int64_t[]){1 << 20, 1 << 20});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the EyeLike mask of 1099511627776 entries");

  const int64_t imax = INT64_MAX;
  mb_init(&b, "HannWindow", "", 17);
  mb_const(&b, "size", ONNX_INT64, 0, NULL, &imax, 8);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the window of 9223372036854775807 entries");

  mb_init(&b, "AffineGrid", "", 20);
  mb_input(&b, "theta", ONNX_FLOAT, 3, (int64_t[]){1, 2, 3});
  mb_ints(&b, "size", 4, (int64_t[]){1, 1, -3, 5});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "the AffineGrid base grid with a negative size (-3)");

  mb_init(&b, "AffineGrid", "", 20);
  mb_input(&b, "theta", ONNX_FLOAT, 3, (int64_t[]){1, 2, 3});
  mb_ints(&b, "size", 4, (int64_t[]){1, 1, big, big});
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the AffineGrid base grid of more than 2^63 entries");

  /* RoiAlign: a NaN roi, a sampling ratio whose grid overflows, a batch index of INT64_MAX */
  const float nan_roi[4] = {0, 0, NAN, 2}, roi[4] = {0, 0, 2, 2};
  const int64_t x4[4] = {1, 1, 4, 4};
  for (int k = 0; k < 3; k++) {
    mb_init(&b, "RoiAlign", "", 16);
    mb_input(&b, "x", ONNX_FLOAT, 4, x4);
    mb_const(&b, "rois", ONNX_FLOAT, 2, (int64_t[]){1, 4}, k == 0 ? nan_roi : roi, sizeof roi);
    mb_const(&b, "batch_indices", ONNX_INT64, 1, (int64_t[]){1}, k == 2 ? &imax : &zero, 8);
    if (k == 1) mb_attr_i(&b, "sampling_ratio", INT64_C(1) << 40);
    mb_output(&b, "y");
    import_fails(&b, k == 0 ? RLX_STATUS_INVALID_ARGUMENT : k == 1 ? RLX_STATUS_RESOURCE_EXHAUSTED : RLX_STATUS_OUT_OF_RANGE,
                 k == 0 ? "roi 0 times spatial_scale 1 is not finite" : k == 1 ? "the RoiAlign sample table" : "batch_indices[0] = 9223372036854775807");
  }

  mb_init(&b, "DFT", "", 17);
  mb_input(&b, "x", ONNX_FLOAT, 3, (int64_t[]){1, (INT64_C(1) << 62) + 1, 2});
  mb_attr_i(&b, "inverse", 1);
  mb_attr_i(&b, "onesided", 1);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "a signal of 4611686018427387905 samples (dft_length -1) overflows int64");

  mb_init(&b, "DeformConv", "", 19);
  mb_input(&b, "x", ONNX_FLOAT, 4, (int64_t[]){1, 4, 4, 4});
  mb_input(&b, "w", ONNX_FLOAT, 4, (int64_t[]){4, 4, 1, 1});
  mb_input(&b, "offset", ONNX_FLOAT, 4, (int64_t[]){1, 2, 4, 4});
  mb_attr_i(&b, "group", INT64_C(1) << 62);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_INVALID_ARGUMENT, "disagree with group 4611686018427387904");

  const float huge = 1e30f;
  const int64_t dl = 8, sr = 16000;
  const float lo = 0, hi = 8000;
  mb_init(&b, "MelWeightMatrix", "", 17);
  mb_const(&b, "num_mel_bins", ONNX_FLOAT, 0, NULL, &huge, 4);
  mb_const(&b, "dft_length", ONNX_INT64, 0, NULL, &dl, 8);
  mb_const(&b, "sample_rate", ONNX_INT64, 0, NULL, &sr, 8);
  mb_const(&b, "lower_edge_hertz", ONNX_FLOAT, 0, NULL, &lo, 4);
  mb_const(&b, "upper_edge_hertz", ONNX_FLOAT, 0, NULL, &hi, 4);
  mb_output(&b, "y");
  import_fails(&b, RLX_STATUS_RESOURCE_EXHAUSTED, "the mel weight matrix of more than 2^63 entries");

  /* an RNN of 100000 declared steps unrolled into millions of nodes (47 s to import) */
  const float one = 1;
  mb_init(&b, "RNN", "", 14);
  mb_input(&b, "X", ONNX_FLOAT, 3, (int64_t[]){100000, 1, 1});
  mb_const(&b, "W", ONNX_FLOAT, 3, (int64_t[]){1, 1, 1}, &one, 4);
  mb_const(&b, "R", ONNX_FLOAT, 3, (int64_t[]){1, 1, 1}, &one, 4);
  mb_attr_i(&b, "hidden_size", 1);
  mb_output(&b, "Y");
  import_fails(&b, RLX_STATUS_UNIMPLEMENTED, "a sequence of 100000 steps (rlx unrolls at most 4096 at import)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_and_type),
      cmocka_unit_test(test_tensor_create),
      cmocka_unit_test(test_npy),
      cmocka_unit_test(test_graph_leaves_and_lookup),
      cmocka_unit_test(test_graph_add),
      cmocka_unit_test(test_registry),
      cmocka_unit_test(test_onnx_entry_points),
      cmocka_unit_test(test_region_ignores_unused_operands),
      cmocka_unit_test(test_import_shape_ops),
      cmocka_unit_test(test_import_math_ops),
      cmocka_unit_test(test_import_group_norm),
      cmocka_unit_test(test_import_host_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
