/* The optimization pipeline's C API (rlx/optimize.h): dead-code elimination and constant folding
 * on hand-built graphs (op counts, and results against values computed here), specs and errors.
 * The other passes are tested on ONNX graphs against onnx.reference (tests/opt/test_passes.py). */
#include <math.h>

#include "test_util.h"

static size_t count_op(const rlx_graph *g, rlx_op op) {
  size_t c = 0;
  for (size_t v = 0; v < rlx_graph_num_values(g); v++) c += rlx_graph_value_op(g, v) == op;
  return c;
}

/* Runs g (lazy, CPU) on inputs named x (and y) with params p; returns output 0. */
static rlx_tensor *run1(const rlx_graph *g, size_t n_in, const char *const *names, rlx_tensor *const *in, const char *pname,
                        const rlx_tensor *pval) {
  rlx_executable *ex;
  rlx_tensor *out = NULL;
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex));
  if (pname) OK(rlx_executable_set_param(ex, pname, pval));
  OK(rlx_executable_run(ex, n_in, names, in, 1, &out));
  rlx_executable_free(ex);
  return out;
}

/* dce keeps every input (positional inputs keep their meaning) and drops what no output reads. */
static void test_dce(void **state) {
  (void)state;
  rlx_graph *g, *o;
  rlx_value x, y, p, a, dead, dead2;
  rlx_type t = ttype(RLX_DTYPE_F32, 1, (int64_t[]){4});
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "x", &t, &x));
  OK(rlx_graph_add_input(g, "y", &t, &y));
  OK(rlx_graph_add_param(g, "p", &t, &p));
  OK(rlx_graph_add1(g, RLX_OP_TANH, NULL, 1, &x, 0, NULL, &dead));
  OK(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){dead, p}, 0, NULL, &dead2));
  OK(rlx_graph_add1(g, RLX_OP_EXP, NULL, 1, &x, 0, NULL, &a));
  OK(rlx_graph_set_outputs(g, 1, &a));
  OK(rlx_graph_set_output_name(g, 0, "e"));
  OK(rlx_graph_optimize(g, "dce", 0, NULL, NULL, &o));
  assert_int_equal(rlx_graph_num_nodes(o), 3); /* x, y, Exp */
  assert_int_equal(rlx_graph_num_inputs(o), 2);
  assert_string_equal(rlx_graph_input_name(o, 1), "y");
  assert_int_equal(count_op(o, RLX_OP_TANH) + count_op(o, RLX_OP_ADD) + rlx_graph_num_params(o), 0);
  assert_false(rlx_graph_reads_param(o, "p"));
  assert_true(rlx_graph_reads_param(g, "p"));
  assert_string_equal(rlx_graph_output_name(o, 0), "e");
  float xv[4] = {0, 1, -2, 0.5f};
  rlx_tensor *in[2];
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){4}, xv, 16, &in[0]));
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){4}, xv, 16, &in[1]));
  rlx_tensor *r = run1(o, 2, (const char *[]){"x", "y"}, in, NULL, NULL);
  for (int i = 0; i < 4; i++) assert_float_equal(((const float *)rlx_tensor_cdata(r))[i], expf(xv[i]), 1e-6 * expf(xv[i]));
  rlx_tensor_free(r);
  rlx_tensor_free(in[0]);
  rlx_tensor_free(in[1]);
  rlx_graph_free(o);
  rlx_graph_free(g);
}

/* constfold: constant-only chains (and params with given values) become constants; a broadcast
 * that would grow a small constant into a large one stays a node. */
static void test_constfold(void **state) {
  (void)state;
  rlx_graph *g, *o;
  rlx_value x, c1, c2, s, p, np_, m, y, sc, big, z;
  rlx_type tx = ttype(RLX_DTYPE_F32, 2, (int64_t[]){2, 3}), tc = ttype(RLX_DTYPE_F32, 1, (int64_t[]){3}), t0 = ttype(RLX_DTYPE_F32, 0, NULL);
  float c1v[6] = {1, 2, 3, 4, 5, 6}, c2v[3] = {0.5f, -1, 2}, pv[3] = {3, 1, -4}, one = 1;
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "x", &tx, &x));
  OK(rlx_graph_add_constant(g, &tx, c1v, sizeof c1v, &c1));
  OK(rlx_graph_add_constant(g, &tc, c2v, sizeof c2v, &c2));
  OK(rlx_graph_add_param(g, "p", &tc, &p));
  OK(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){c1, c2}, 0, NULL, &s));  /* c1 + c2 */
  OK(rlx_graph_add1(g, RLX_OP_NEG, NULL, 1, &p, 0, NULL, &np_));                     /* -p */
  OK(rlx_graph_add1(g, RLX_OP_MUL, NULL, 2, (rlx_value[]){s, np_}, 0, NULL, &m));    /* (c1 + c2) (-p) */
  OK(rlx_graph_add1(g, RLX_OP_MUL, NULL, 2, (rlx_value[]){x, m}, 0, NULL, &y));
  OK(rlx_graph_add_constant(g, &t0, &one, 4, &sc));
  OK(rlx_graph_add1(g, RLX_OP_EXPAND, NULL, 1, &sc, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, ((int64_t[]){64, 64}))}, &big));
  OK(rlx_graph_add1(g, RLX_OP_REDUCE, NULL, 1, &big, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")}, &z)); /* 4096 */
  OK(rlx_graph_add1(g, RLX_OP_ADD, NULL, 2, (rlx_value[]){y, z}, 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_tensor *pt;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 1, (int64_t[]){3}, pv, sizeof pv, &pt));
  /* without the param's value: -p and what reads it stay */
  OK(rlx_graph_optimize(g, "constfold,dce", 0, NULL, NULL, &o));
  assert_int_equal(count_op(o, RLX_OP_NEG), 1);
  assert_int_equal(count_op(o, RLX_OP_MUL), 2);
  assert_int_equal(count_op(o, RLX_OP_ADD), 1); /* c1 + c2 folded, the last Add reads x */
  rlx_graph_free(o);
  OK(rlx_graph_optimize(g, "constfold,dce", 1, (const char *[]){"p"}, (const rlx_tensor *const[]){pt}, &o));
  assert_int_equal(count_op(o, RLX_OP_NEG), 0);
  assert_int_equal(count_op(o, RLX_OP_MUL), 1);
  assert_int_equal(count_op(o, RLX_OP_EXPAND), 0); /* Expand read only by the folded Reduce */
  assert_int_equal(count_op(o, RLX_OP_REDUCE), 0);
  assert_false(rlx_graph_reads_param(o, "p"));
  float xv[6] = {0.5f, -1, 2, 0.25f, 3, -0.5f};
  rlx_tensor *in;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 2, (int64_t[]){2, 3}, xv, sizeof xv, &in));
  rlx_tensor *r = run1(o, 1, (const char *[]){"x"}, &in, NULL, NULL);
  for (int i = 0; i < 6; i++) {
    float want = xv[i] * (c1v[i] + c2v[i % 3]) * -pv[i % 3] + 4096;
    assert_float_equal(((const float *)rlx_tensor_cdata(r))[i], want, 1e-6 * fabsf(want));
  }
  rlx_tensor_free(r);
  rlx_graph_free(o);
  /* the Expand alone is not folded: 16 KiB from 4 bytes */
  rlx_graph *h;
  rlx_value e, xe;
  rlx_type tb = ttype(RLX_DTYPE_F32, 2, (int64_t[]){64, 64});
  OK(rlx_graph_create(&h));
  OK(rlx_graph_add_input(h, "x", &tb, &xe));
  OK(rlx_graph_add_constant(h, &t0, &one, 4, &sc));
  OK(rlx_graph_add1(h, RLX_OP_EXPAND, NULL, 1, &sc, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 2, ((int64_t[]){64, 64}))}, &e));
  OK(rlx_graph_add1(h, RLX_OP_ADD, NULL, 2, (rlx_value[]){xe, e}, 0, NULL, &e));
  OK(rlx_graph_set_outputs(h, 1, &e));
  OK(rlx_graph_optimize(h, "constfold", 0, NULL, NULL, &o));
  assert_int_equal(count_op(o, RLX_OP_EXPAND), 1);
  rlx_graph_free(o);
  rlx_graph_free(h);
  rlx_tensor_free(in);
  rlx_tensor_free(pt);
  rlx_graph_free(g);
}

static void test_specs_and_errors(void **state) {
  (void)state;
  OK(rlx_optimize_check("none"));
  OK(rlx_optimize_check("basic"));
  OK(rlx_optimize_check("all"));
  OK(rlx_optimize_check("cse,dce"));
  FAILS(rlx_optimize_check("fast"), INVALID_ARGUMENT, "'fast'");
  FAILS(rlx_optimize_check("dce,bogus"), INVALID_ARGUMENT, "'bogus'");
  FAILS(rlx_optimize_check(NULL), INVALID_ARGUMENT, "NULL");
  rlx_graph *g, *o = (rlx_graph *)&o;
  rlx_value x;
  rlx_type t = ttype(RLX_DTYPE_F32, 1, (int64_t[]){2});
  OK(rlx_graph_create(&g));
  OK(rlx_graph_add_input(g, "x", &t, &x));
  FAILS(rlx_graph_optimize(g, "all", 0, NULL, NULL, &o), INVALID_ARGUMENT, "no outputs");
  OK(rlx_graph_set_outputs(g, 1, &x));
  FAILS(rlx_graph_optimize(g, "dce,nope", 0, NULL, NULL, &o), INVALID_ARGUMENT, "'nope'");
  FAILS(rlx_graph_optimize(NULL, "all", 0, NULL, NULL, &o), INVALID_ARGUMENT, "NULL");
  FAILS(rlx_graph_optimize(g, "all", 1, NULL, NULL, &o), INVALID_ARGUMENT, "param");
  assert_ptr_equal(o, (rlx_graph *)&o); /* untouched on failure */
  OK(rlx_graph_optimize(g, "none", 0, NULL, NULL, &o));
  assert_int_equal(rlx_graph_num_nodes(o), 1);
  rlx_graph_free(o);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dce),
      cmocka_unit_test(test_constfold),
      cmocka_unit_test(test_specs_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
