/* The C API without friction: float16/bfloat16 helpers (against NumPy / ml_dtypes), outputs by
 * name for runs, feeds and slots, the readback default of fed outputs, the arena without casts,
 * and the active-extent fallback of a symbolic first dim. */
#include <stdint.h>

#include "exec_test_util.h"

/* float32 bits -> float16 and bfloat16 bits, from numpy 2 (np.float32(x).astype(np.float16)) and
 * ml_dtypes 0.6 (.astype(ml_dtypes.bfloat16)): overflow, subnormals, ties to even, NaN. */
static const struct {
  uint32_t f32;
  uint16_t f16, bf16;
} cases[] = {
    {0x00000000u, 0x0000, 0x0000}, /* 0.0 */
    {0x80000000u, 0x8000, 0x8000}, /* -0.0 */
    {0x3f800000u, 0x3c00, 0x3f80}, /* 1.0 */
    {0xc0200000u, 0xc100, 0xc020}, /* -2.5 */
    {0x477fe000u, 0x7bff, 0x4780}, /* 65504 (float16 max) */
    {0x477feffdu, 0x7bff, 0x4780}, /* 65519.99 */
    {0x477ff000u, 0x7c00, 0x4780}, /* 65520: overflows to inf */
    {0xc9742400u, 0xfc00, 0xc974}, /* -1e6 */
    {0x38800000u, 0x0400, 0x3880}, /* 2^-14 (smallest normal) */
    {0x33800000u, 0x0001, 0x3380}, /* 2^-24 (smallest subnormal) */
    {0x33000000u, 0x0000, 0x3300}, /* 2^-25: tie, to even (0) */
    {0x33000001u, 0x0001, 0x3300}, /* just above 2^-25 */
    {0x33c00000u, 0x0002, 0x33c0}, /* 1.5 * 2^-24: tie, to even (2) */
    {0x3f802000u, 0x3c01, 0x3f80}, /* 1 + 2^-10 */
    {0x3f801000u, 0x3c00, 0x3f80}, /* 1 + 2^-11: tie, to even */
    {0x3f803000u, 0x3c02, 0x3f80}, /* 1 + 3 * 2^-11: tie, to even */
    {0x40490fdbu, 0x4248, 0x4049}, /* pi */
    {0x000116c2u, 0x0000, 0x0001}, /* 1e-40 (float32 subnormal) */
    {0x7f800000u, 0x7c00, 0x7f80}, /* inf */
    {0xff800000u, 0xfc00, 0xff80}, /* -inf */
    {0x3dcccccdu, 0x2e66, 0x3dcd}, /* 0.1 */
    {0x43a6aaa0u, 0x5d35, 0x43a7}, /* 333.333 */
    {0x3eaaaaabu, 0x3555, 0x3eab}, /* 1/3 */
    {0x7f7f0000u, 0x7c00, 0x7f7f}, /* 3.3895314e38 */
    {0x7f7fc99eu, 0x7c00, 0x7f80}, /* 3.4e38: bfloat16 rounds to inf */
    {0xbbe56042u, 0x9f2b, 0xbbe5}, /* -0.007 */
    {0x7fc00000u, 0x7e00, 0x7fc0}, /* quiet NaN */
    {0xffc00001u, 0xfe00, 0xffc0}, /* -NaN with payload */
    {0x7f800001u, 0x7c01, 0x7fc0}, /* signalling NaN: stays a NaN */
};

static float f32_of(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

static void test_half_conversions(void **state) {
  (void)state;
  for (size_t i = 0; i < LEN(cases); i++) {
    float x = f32_of(cases[i].f32);
    if (rlx_f32_to_f16(x) != cases[i].f16) fail_msg("f32 0x%08x -> f16 0x%04x, numpy 0x%04x", cases[i].f32, rlx_f32_to_f16(x), cases[i].f16);
    if (rlx_f32_to_bf16(x) != cases[i].bf16)
      fail_msg("f32 0x%08x -> bf16 0x%04x, ml_dtypes 0x%04x", cases[i].f32, rlx_f32_to_bf16(x), cases[i].bf16);
  }
  /* widening is exact: every float16 / bfloat16 that is not a NaN narrows back to itself */
  for (uint32_t h = 0; h < 0x10000; h++) {
    bool nan16 = (h & 0x7c00) == 0x7c00 && (h & 0x3ff), nanb = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (!nan16 && rlx_f32_to_f16(rlx_f16_to_f32((uint16_t)h)) != h) fail_msg("f16 0x%04x does not round-trip", h);
    if (!nanb && rlx_f32_to_bf16(rlx_bf16_to_f32((uint16_t)h)) != h) fail_msg("bf16 0x%04x does not round-trip", h);
    if (nan16 != isnan(rlx_f16_to_f32((uint16_t)h)) || nanb != isnan(rlx_bf16_to_f32((uint16_t)h))) fail_msg("NaN 0x%04x", h);
  }
  assert_true(rlx_f16_to_f32(0x0001) == 0x1p-24f);    /* smallest subnormal */
  assert_true(rlx_f16_to_f32(0x7bff) == 65504.0f);     /* largest finite */
  assert_int_equal(bits_of(rlx_f16_to_f32(0x8000)), 0x80000000u);
  assert_true(rlx_bf16_to_f32(0x3f80) == 1.0f);
}

/* y = x * 2 (float32 [2]), state = state_in + x: two outputs, one fed back into input state_in. */
static rlx_graph *state_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value s = g_input(g, "state_in", RLX_DTYPE_F32, 1, DIMS(2));
  rlx_value two = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){2});
  rlx_value y = g_op(g, RLX_OP_MUL, 2, VALS(x, two), 0, NULL);
  rlx_value s2 = g_op(g, RLX_OP_ADD, 2, VALS(s, x), 0, NULL);
  OK(rlx_graph_set_outputs(g, 2, VALS(s2, y)));
  OK(rlx_graph_set_output_name(g, 0, "state"));
  OK(rlx_graph_set_output_name(g, 1, "y"));
  return g;
}

/* Low-precision codes against values from the format definitions (OCP 8-bit FP spec, FNUZ, OCP MX
 * E2M1, two's complement int4/int2; the same as ml_dtypes). */
static void test_lowp_codes(void **state) {
  (void)state;
  static const struct { rlx_dtype dt; uint8_t code; float v; } codes[] = {
      {RLX_DTYPE_F8E4M3FN, 0x7E, 448.0f},    {RLX_DTYPE_F8E4M3FN, 0x01, 0x1p-9f},   {RLX_DTYPE_F8E4M3FN, 0x38, 1.0f},
      {RLX_DTYPE_F8E4M3FN, 0xC4, -3.0f},     {RLX_DTYPE_F8E4M3FNUZ, 0x7F, 240.0f},  {RLX_DTYPE_F8E4M3FNUZ, 0x01, 0x1p-10f},
      {RLX_DTYPE_F8E5M2, 0x7B, 57344.0f},    {RLX_DTYPE_F8E5M2, 0x01, 0x1p-16f},    {RLX_DTYPE_F8E5M2, 0x7C, INFINITY},
      {RLX_DTYPE_F8E5M2, 0xFC, -INFINITY},   {RLX_DTYPE_F8E5M2FNUZ, 0x7F, 57344.0f}, {RLX_DTYPE_F8E5M2FNUZ, 0x01, 0x1p-17f},
      {RLX_DTYPE_F4E2M1, 0x7, 6.0f},         {RLX_DTYPE_F4E2M1, 0x1, 0.5f},         {RLX_DTYPE_F4E2M1, 0xB, -1.5f},
      {RLX_DTYPE_I4, 0xF, -1.0f},            {RLX_DTYPE_I4, 0x8, -8.0f},            {RLX_DTYPE_I4, 0xF7, 7.0f},
      {RLX_DTYPE_U4, 0xF, 15.0f},            {RLX_DTYPE_I2, 0x2, -2.0f},            {RLX_DTYPE_U2, 0x3, 3.0f},
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (rlx_lowp_to_f32(codes[i].dt, codes[i].code) != codes[i].v)
      fail_msg("%s 0x%02x -> %g, expected %g", rlx_dtype_name(codes[i].dt), codes[i].code, rlx_lowp_to_f32(codes[i].dt, codes[i].code), codes[i].v);
  assert_true(isnan(rlx_lowp_to_f32(RLX_DTYPE_F8E4M3FN, 0x7F)) && isnan(rlx_lowp_to_f32(RLX_DTYPE_F8E4M3FN, 0xFF)));
  assert_true(isnan(rlx_lowp_to_f32(RLX_DTYPE_F8E4M3FNUZ, 0x80)) && isnan(rlx_lowp_to_f32(RLX_DTYPE_F8E5M2FNUZ, 0x80)));
  assert_true(isnan(rlx_lowp_to_f32(RLX_DTYPE_F8E5M2, 0x7D)) && signbit(rlx_lowp_to_f32(RLX_DTYPE_F8E4M3FN, 0x80)));
  assert_true(rlx_dtype_is_lowp(RLX_DTYPE_I4) && !rlx_dtype_is_lowp(RLX_DTYPE_U8) && !rlx_dtype_is_float(RLX_DTYPE_F8E5M2));
  assert_int_equal(rlx_dtype_size(RLX_DTYPE_F4E2M1), 1);
  assert_true(rlx_lowp_to_f32(RLX_DTYPE_F32, 1) == 0.0f);
}

static void test_outputs_by_name_and_readback(void **state) {
  (void)state;
  rlx_graph *g = state_graph();
  size_t iy = 9, is = 9;
  OK(rlx_graph_output_index(g, "y", &iy));
  OK(rlx_graph_output_index(g, "state", &is));
  assert_int_equal(iy, 1);
  assert_int_equal(is, 0);
  const float x[2] = {1, -3}, zero[2] = {0, 0};
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *tx = tf32(1, DIMS(2), x), *tz = tf32(1, DIMS(2), zero);
    OK(rlx_executable_bind_device_handle(ex, "state_in", tz));
    OK(rlx_executable_set_handle_feed(ex, "state_in", is));
    const char *names[1] = {"x"};
    rlx_tensor *values[1] = {tx}, *outs[2] = {NULL, NULL};
    /* default: the fed output is not read back */
    OK(rlx_executable_run(ex, 1, names, values, 2, outs));
    assert_null(outs[is]);
    expect_f32(outs[iy], 1, DIMS(2), (const float[]){2, -6}, 0);
    rlx_tensor_free(outs[iy]);
    /* asked for, it is: state = 0 + x + x after two runs */
    OK(rlx_executable_set_output_readback(ex, is, true));
    OK(rlx_executable_run(ex, 1, names, values, 2, outs));
    expect_f32(outs[is], 1, DIMS(2), (const float[]){2, -6}, 0);
    for (int i = 0; i < 2; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    /* and turned off explicitly, y is not read back even without a feed */
    OK(rlx_executable_set_output_readback(ex, iy, false));
    OK(rlx_executable_run(ex, 1, names, values, 2, outs));
    assert_null(outs[iy]);
    expect_f32(outs[is], 1, DIMS(2), (const float[]){3, -9}, 0);
    rlx_tensor_free(outs[is]);
    /* unwanted, y comes back NULL whatever its readback; the fed state, unwanted too, is still
     * evaluated (its handle moves on to 4 x) but not read back */
    OK(rlx_executable_set_output_readback(ex, iy, true));
    OK(rlx_executable_set_output_wanted(ex, iy, false));
    OK(rlx_executable_set_output_wanted(ex, is, false));
    OK(rlx_executable_run(ex, 1, names, values, 2, outs));
    assert_null(outs[iy]);
    assert_null(outs[is]);
    FAILS(rlx_executable_set_output_wanted(ex, 2, false), OUT_OF_RANGE, "output 2");
    /* wanted again: both are computed and read back */
    OK(rlx_executable_set_output_wanted(ex, iy, true));
    OK(rlx_executable_set_output_wanted(ex, is, true));
    OK(rlx_executable_run(ex, 1, names, values, 2, outs));
    expect_f32(outs[iy], 1, DIMS(2), (const float[]){2, -6}, 0);
    expect_f32(outs[is], 1, DIMS(2), (const float[]){5, -15}, 0);
    for (int i = 0; i < 2; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    /* slots by name, through an arena that needs no cast */
    rlx_arena arena = {0};
    OK(rlx_executable_arena(ex, &arena));
    size_t off = 0, nb = 0;
    OK(rlx_executable_output_slot(ex, is, &off, &nb));
    assert_int_equal(nb, 2 * sizeof(float));
    const unsigned char *base = arena.base;
    const void *slot_in[2] = {x, NULL};
    OK(rlx_executable_run_slots(ex, 2, slot_in));
    float got[2];
    memcpy(got, base + off, sizeof got);
    assert_true(got[0] == 6 && got[1] == -18);
    rlx_tensor_free(tx);
    rlx_tensor_free(tz);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

static void test_extent_symbolic_first_dim(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 3));
  OK(rlx_graph_set_outputs(g, 1, VALS(g_op(g, RLX_OP_RELU, 1, &x, 0, NULL))));
  rlx_executable *ex = make_exec(g, RLX_MODE_LAZY);
  OK(rlx_executable_set_active_extent(ex, 2, 8));
  const char *why = rlx_executable_active_extent_fallback(ex);
  assert_non_null(why);
  if (!strstr(why, "input 'x' has a symbolic dim 0")) fail_msg("fallback reason: %s", why);
  OK(rlx_executable_set_active_extent(ex, 0, 0));
  assert_null(rlx_executable_active_extent_fallback(ex));
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_half_conversions),
      cmocka_unit_test(test_lowp_codes),
      cmocka_unit_test(test_outputs_by_name_and_readback),
      cmocka_unit_test(test_extent_symbolic_first_dim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
