/* Index bounds at run time (lower.h, rlx_l_index): an out-of-range index fails the run with
 * OUT_OF_RANGE naming the node, the input, the index and the bound in every mode; a KV-cache append
 * at position == capacity fails (run: before any feed; commit: reported once, by the sync); the
 * async error contract (commit reports what fails before scheduling, sync what fails while
 * evaluating, each error once). The expected values are closed forms computed here. */
#include "exec_test_util.h"

/* y = Gather(x[5,2], i[3]) along axis 0. */
static rlx_graph *gather_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(5, 2)), i = g_input(g, "i", RLX_DTYPE_I64, 1, DIMS(3));
  rlx_value y;
  OK(rlx_graph_add1(g, RLX_OP_GATHER, "emb", 2, VALS(x, i), 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_status *run_gather(rlx_executable *ex, const int64_t *idx, rlx_tensor **y) {
  float xs[10];
  for (int k = 0; k < 10; k++) xs[k] = (float)k;
  rlx_tensor *x = tf32(2, DIMS(5, 2), xs), *i = tensor(RLX_DTYPE_I64, 1, DIMS(3), idx);
  rlx_status *st = rlx_executable_run(ex, 2, (const char *const[]){"x", "i"}, (rlx_tensor *const[]){x, i}, 1, y);
  rlx_tensor_free(x);
  rlx_tensor_free(i);
  return st;
}

static void test_gather_messages(void **state) {
  (void)state;
  rlx_graph *g = gather_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *y = NULL;
    OK(run_gather(ex, (const int64_t[]){4, -5, 0}, &y));
    expect_f32(y, 2, DIMS(3, 2), (const float[]){8, 9, 0, 1, 0, 1}, 0);
    rlx_tensor_free(y);
    y = NULL;
    FAILS(run_gather(ex, (const int64_t[]){0, 5, 1}, &y), OUT_OF_RANGE, "(Gather 'emb'): input 1 holds index 5, outside [-5, 5) for data axis 0");
    assert_null(y);
    FAILS(run_gather(ex, (const int64_t[]){-6, 0, 1}, &y), OUT_OF_RANGE, "index -6, outside [-5, 5)");
    FAILS(run_gather(ex, (const int64_t[]){INT64_MAX, 0, 1}, &y), OUT_OF_RANGE, "index 9223372036854775807");
    /* the executable stays usable */
    OK(run_gather(ex, (const int64_t[]){1, 2, 3}, &y));
    expect_f32(y, 2, DIMS(3, 2), (const float[]){2, 3, 4, 5, 6, 7}, 0);
    rlx_tensor_free(y);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* rlx_executable_set_index_checks(ex, false): out-of-range indices are taken modulo the axis
 * (x[5,2] rows 5 -> 0, -6 -> 4, 7 -> 2) instead of failing; on again, they fail as before. In every
 * mode, switched between runs (a compiled function traced again). */
static void test_index_checks_off(void **state) {
  (void)state;
  rlx_graph *g = gather_graph();
  FAILS(rlx_executable_set_index_checks(NULL, false), INVALID_ARGUMENT, "NULL executable");
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *y = NULL;
    FAILS(run_gather(ex, (const int64_t[]){0, 5, 1}, &y), OUT_OF_RANGE, "input 1 holds index 5");
    OK(rlx_executable_set_index_checks(ex, false));
    OK(run_gather(ex, (const int64_t[]){5, -6, 7}, &y));
    expect_f32(y, 2, DIMS(3, 2), (const float[]){0, 1, 8, 9, 4, 5}, 0);
    rlx_tensor_free(y);
    y = NULL;
    OK(run_gather(ex, (const int64_t[]){4, -5, 0}, &y));
    expect_f32(y, 2, DIMS(3, 2), (const float[]){8, 9, 0, 1, 0, 1}, 0);
    rlx_tensor_free(y);
    y = NULL;
    OK(rlx_executable_set_index_checks(ex, true));
    FAILS(run_gather(ex, (const int64_t[]){0, 5, 1}, &y), OUT_OF_RANGE, "input 1 holds index 5");
    assert_null(y);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* cache[4,2] <- ScatterND(cache, [[pos]], row[1,2]): output 0 feeds the cache's device handle. */
static rlx_graph *append_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value c = g_input(g, "cache", RLX_DTYPE_F32, 2, DIMS(4, 2)), p = g_input(g, "pos", RLX_DTYPE_I64, 2, DIMS(1, 1));
  rlx_value r = g_input(g, "row", RLX_DTYPE_F32, 2, DIMS(1, 2)), y;
  OK(rlx_graph_add1(g, RLX_OP_SCATTER_ND, "append", 3, VALS(c, p, r), 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_status *append(rlx_executable *ex, int64_t pos, bool commit) {
  rlx_tensor *p = tensor(RLX_DTYPE_I64, 2, DIMS(1, 1), &pos), *r = tf32(2, DIMS(1, 2), (const float[]){(float)pos, (float)-pos});
  const char *names[] = {"pos", "row"};
  rlx_tensor *vals[] = {p, r};
  rlx_tensor *out = NULL;
  rlx_status *st = commit ? rlx_executable_commit(ex, 2, names, vals) : rlx_executable_run(ex, 2, names, vals, 1, &out);
  rlx_tensor_free(out);
  rlx_tensor_free(p);
  rlx_tensor_free(r);
  return st;
}

static rlx_executable *append_exec(const rlx_graph *g, rlx_mode mode) {
  rlx_executable *ex = make_exec(g, mode);
  float zero[8] = {0};
  rlx_tensor *z = tf32(2, DIMS(4, 2), zero);
  OK(rlx_executable_bind_device_handle(ex, "cache", z));
  OK(rlx_executable_set_handle_feed(ex, "cache", 0));
  OK(rlx_executable_set_output_readback(ex, 0, false));
  rlx_tensor_free(z);
  return ex;
}

static void expect_cache(rlx_executable *ex, int filled) {
  rlx_tensor *t = NULL;
  float want[8] = {0};
  for (int k = 0; k < filled; k++) want[2 * k] = (float)k, want[2 * k + 1] = (float)-k;
  OK(rlx_executable_read_handle(ex, "cache", &t));
  expect_f32(t, 2, DIMS(4, 2), want, 0);
  rlx_tensor_free(t);
}

static void test_kv_append_at_capacity(void **state) {
  (void)state;
  rlx_graph *g = append_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    /* runs: the failing run applies no feed, the cache keeps its 4 rows */
    rlx_executable *ex = append_exec(g, all_modes[m]);
    for (int64_t pos = 0; pos < 4; pos++) OK(append(ex, pos, false));
    FAILS(append(ex, 4, false), OUT_OF_RANGE, "(ScatterND 'append'): input 1 holds index 4, outside [-4, 4) for data axis 0 of size 4");
    expect_cache(ex, 4);
    rlx_executable_free(ex);

    /* commits: the scheduled run cannot fail before evaluating; its sync reports it, once */
    ex = append_exec(g, all_modes[m]);
    for (int64_t pos = 0; pos < 4; pos++) OK(append(ex, pos, true));
    OK(rlx_executable_sync(ex, 0, NULL));
    expect_cache(ex, 4);
    if (all_modes[m] == RLX_MODE_EAGER) {
      /* eager mode evaluates each node while lowering: the commit itself fails, nothing pends */
      FAILS(append(ex, 4, true), OUT_OF_RANGE, "input 1 holds index 4");
      assert_false(rlx_executable_pending(ex));
    } else {
      OK(append(ex, 4, true));
      OK(append(ex, 1, true)); /* a later commit does not hide the failure */
      assert_true(rlx_executable_pending(ex));
      FAILS(rlx_executable_sync(ex, 0, NULL), OUT_OF_RANGE, "committed run: node");
      assert_false(rlx_executable_pending(ex));
      OK(rlx_executable_sync(ex, 0, NULL)); /* reported once */
      /* two runs pending: a sync reports the failures of the runs up to the one it reads */
      OK(rlx_executable_set_max_pending(ex, 2));
      OK(append(ex, 0, true));
      OK(append(ex, 4, true));
      OK(rlx_executable_sync(ex, 0, NULL));
      assert_true(rlx_executable_pending(ex));
      FAILS(rlx_executable_sync(ex, 0, NULL), OUT_OF_RANGE, "committed run: node");
      OK(append(ex, 4, true));
      OK(append(ex, 0, true));
      FAILS(rlx_executable_sync(ex, 0, NULL), OUT_OF_RANGE, "committed run: node");
      OK(rlx_executable_sync(ex, 0, NULL));
      assert_false(rlx_executable_pending(ex));
    }
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* A sync whose arguments are wrong does nothing: the run stays pending and its results readable. */
static void test_sync_argument_error_keeps_pending(void **state) {
  (void)state;
  rlx_graph *g = gather_graph();
  float xs[10];
  for (int k = 0; k < 10; k++) xs[k] = (float)k;
  rlx_tensor *x = tf32(2, DIMS(5, 2), xs), *i = tensor(RLX_DTYPE_I64, 1, DIMS(3), (const int64_t[]){2, 2, 2});
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *y[2] = {0};
    OK(rlx_executable_commit(ex, 2, (const char *const[]){"x", "i"}, (rlx_tensor *const[]){x, i}));
    FAILS(rlx_executable_sync(ex, 2, y), INVALID_ARGUMENT, "n_outputs is 2");
    assert_true(rlx_executable_pending(ex));
    OK(rlx_executable_sync(ex, 1, y));
    assert_false(rlx_executable_pending(ex));
    expect_f32(y[0], 2, DIMS(3, 2), (const float[]){4, 5, 4, 5, 4, 5}, 0);
    rlx_tensor_free(y[0]);
    rlx_executable_free(ex);
  }
  rlx_tensor_free(x);
  rlx_tensor_free(i);
  rlx_graph_free(g);
}

/* Constant indices are checked when the node is added. */
static void test_constant_indices_at_build(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(5, 2));
  rlx_value i = g_const(g, RLX_DTYPE_I32, 1, DIMS(2), (const int32_t[]){1, 7}), y;
  FAILS(rlx_graph_add1(g, RLX_OP_GATHER, "g", 2, VALS(x, i), 0, NULL, &y), OUT_OF_RANGE, "index 7, outside [-5, 5)");
  rlx_value j = g_const(g, RLX_DTYPE_I64, 2, DIMS(1, 2), (const int64_t[]){0, -3});
  FAILS(rlx_graph_add1(g, RLX_OP_GATHER_ND, "nd", 2, VALS(x, j), 0, NULL, &y), OUT_OF_RANGE, "index -3, outside [-2, 2)");
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gather_messages),
      cmocka_unit_test(test_index_checks_off),
      cmocka_unit_test(test_kv_append_at_capacity),
      cmocka_unit_test(test_sync_argument_error_keeps_pending),
      cmocka_unit_test(test_constant_indices_at_build),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
