/* Slot arena: positional raw-byte inputs, typed outputs at fixed offsets of one buffer. */
#include <stdint.h>

#include "exec_test_util.h"

/* Outputs of three dtypes: f = a * 2 (float32 [2,3]), h = cast(a) (float16 [2,3]), n = k + 1 (int32 [5]). */
static rlx_graph *typed_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value a = g_input(g, "a", RLX_DTYPE_F32, 2, DIMS(2, 3));
  rlx_value k = g_input(g, "k", RLX_DTYPE_I32, 1, DIMS(5));
  rlx_value two = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){2});
  rlx_value one = g_const(g, RLX_DTYPE_I32, 0, NULL, (const int32_t[]){1});
  rlx_value f = g_op(g, RLX_OP_MUL, 2, VALS(a, two), 0, NULL);
  rlx_value h = g_op(g, RLX_OP_CAST, 1, &a, 1, (rlx_attr[]){RLX_ATTR_I("to", RLX_DTYPE_F16)});
  rlx_value n = g_op(g, RLX_OP_ADD, 2, VALS(k, one), 0, NULL);
  OK(rlx_graph_set_outputs(g, 3, VALS(f, h, n)));
  return g;
}

static void test_slots_layout_and_runs(void **state) {
  (void)state;
  rlx_graph *g = typed_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    const unsigned char *arena = arena_of(ex);
    assert_non_null(arena);
    assert_int_equal((uintptr_t)arena % 64, 0);
    size_t off[3], nb[3];
    for (size_t i = 0; i < 3; i++) {
      OK(rlx_executable_output_slot(ex, i, &off[i], &nb[i]));
      assert_int_equal(off[i] % 64, 0);
    }
    assert_int_equal(nb[0], 24);
    assert_int_equal(nb[1], 12);
    assert_int_equal(nb[2], 20);
    assert_true(off[0] + nb[0] <= off[1] && off[1] + nb[1] <= off[2]);
    FAILS(rlx_executable_output_slot(ex, 3, &off[0], &nb[0]), OUT_OF_RANGE, "output 3");
    for (int run = 0; run < 3; run++) {
      float a[6];
      int32_t k[5];
      for (int i = 0; i < 6; i++) a[i] = (float)(i + run) * 0.5f;
      for (int i = 0; i < 5; i++) k[i] = i * 100 - run;
      OK(rlx_executable_run_slots(ex, 2, (const void *const[]){a, k}));
      assert_ptr_equal(arena_of(ex), arena); /* fixed */
      const float *f = (const float *)(arena + off[0]);
      const uint16_t *h = (const uint16_t *)(arena + off[1]);
      const int32_t *n = (const int32_t *)(arena + off[2]);
      for (int i = 0; i < 6; i++) assert_true(f[i] == a[i] * 2);
      /* halves of small integers are exact in float16: 0.5 * j as sign/exponent/mantissa bits */
      for (int i = 0; i < 6; i++) {
        float v = a[i];
        uint16_t want = 0;
        if (v != 0) {
          int e = 0;
          float mant = frexpf(v, &e); /* v = mant * 2^e, mant in [0.5, 1) */
          want = (uint16_t)(((e - 1 + 15) << 10) | (uint16_t)((mant * 2 - 1) * 1024));
        }
        assert_int_equal(h[i], want);
      }
      for (int i = 0; i < 5; i++) assert_int_equal(n[i], k[i] + 1);
    }
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

static void test_slots_handles_readback_errors(void **state) {
  (void)state;
  rlx_graph *g = typed_graph();
  rlx_executable *ex = make_exec(g, RLX_MODE_COMPILED);
  const unsigned char *arena = arena_of(ex);
  size_t off, nb;
  OK(rlx_executable_output_slot(ex, 2, &off, &nb));
  float a[6] = {1, 2, 3, 4, 5, 6};
  FAILS(rlx_executable_run_slots(ex, 1, (const void *const[]){a}), INVALID_ARGUMENT, "1 inputs given, the graph has 2");
  FAILS(rlx_executable_run_slots(ex, 2, (const void *const[]){a, NULL}), INVALID_ARGUMENT, "input 'k' (int32[5]) was not given");
  /* NULL takes the handle */
  rlx_tensor *tk = tensor(RLX_DTYPE_I32, 1, DIMS(5), (const int32_t[]){5, 4, 3, 2, 1});
  OK(rlx_executable_bind_device_handle(ex, "k", tk));
  OK(rlx_executable_run_slots(ex, 2, (const void *const[]){a, NULL}));
  assert_int_equal(((const int32_t *)(arena + off))[0], 6);
  /* readback off: the slot keeps its old contents */
  OK(rlx_executable_set_output_readback(ex, 2, false));
  int32_t k2[5] = {-10, -10, -10, -10, -10};
  OK(rlx_executable_run_slots(ex, 2, (const void *const[]){a, k2}));
  assert_int_equal(((const int32_t *)(arena + off))[0], 6);
  rlx_tensor_free(tk);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* Symbolic outputs have no fixed slot; symbolic inputs come from handles. */
static void test_slots_symbolic(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(RLX_DIM_SYMBOL(0)));
  rlx_value s = g_op(g, RLX_OP_REDUCE, 1, &x, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")});
  OK(rlx_graph_set_outputs(g, 1, &s));
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  float xv[4] = {1, 2, 3, 4.5f};
  FAILS(rlx_executable_run_slots(ex, 1, (const void *const[]){xv}), INVALID_ARGUMENT, "has symbolic dims: bind it as a handle");
  rlx_tensor *tx = tf32(1, DIMS(4), xv);
  OK(rlx_executable_bind_host_handle(ex, "x", tx));
  OK(rlx_executable_run_slots(ex, 1, (const void *const[]){NULL}));
  size_t off, nb;
  OK(rlx_executable_output_slot(ex, 0, &off, &nb));
  assert_true(*(const float *)(arena_of(ex) + off) == 10.5f);
  rlx_tensor_free(tx);
  rlx_executable_free(ex);
  /* a symbolic output: no arena */
  rlx_graph *g2;
  OK(rlx_graph_create(&g2));
  rlx_value y = g_input(g2, "y", RLX_DTYPE_F32, 1, DIMS(RLX_DIM_SYMBOL(0)));
  rlx_value e;
  OK(rlx_graph_add1(g2, RLX_OP_EXP, NULL, 1, &y, 0, NULL, &e));
  OK(rlx_graph_set_outputs(g2, 1, &e));
  OK(rlx_graph_set_output_name(g2, 0, "expy"));
  ex = make_exec(g2, RLX_MODE_LAZY);
  rlx_arena untouched = {.base = (void *)1, .nbytes = 7};
  FAILS(rlx_executable_arena(ex, &untouched), FAILED_PRECONDITION, "output 'expy' has symbolic dims");
  assert_ptr_equal(untouched.base, (void *)1);
  assert_int_equal(untouched.nbytes, 7);
  FAILS(rlx_executable_output_slot(ex, 0, &off, &nb), FAILED_PRECONDITION, "output 'expy' has symbolic dims");
  FAILS(rlx_executable_run_slots(ex, 1, (const void *const[]){xv}), FAILED_PRECONDITION, "no slot arena");
  rlx_executable_free(ex);
  rlx_graph_free(g2);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slots_layout_and_runs),
      cmocka_unit_test(test_slots_handles_readback_errors),
      cmocka_unit_test(test_slots_symbolic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
