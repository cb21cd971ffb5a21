// rlx from C++17 (before C++20's designated initializers): the headers compile with -pedantic,
// the RLX_ATTR_* macros work, arrays of tensors and names pass without casts, a dropped status
// would be a [[nodiscard]] warning. y = cast<float16>(transpose(x)) is checked against values
// computed here. Exit status 0 when every check passes.
#include <cstdio>
#include <cstring>

#include <rlx/rlx.h>

static int fail(rlx_status *st) {
  std::fprintf(stderr, "rlx: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

static rlx_status *build(rlx_graph *g) {
  const int64_t dims[2] = {2, 3}, perm[2] = {1, 0};
  rlx_type tx;
  rlx_value x, t, y;
  RLX_RETURN_IF_ERROR(rlx_type_make(RLX_DTYPE_F32, 2, dims, &tx));
  RLX_RETURN_IF_ERROR(rlx_graph_add_input(g, "x", &tx, &x));
  const rlx_attr tattrs[1] = {RLX_ATTR_IS("perm", 2, perm)};
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_TRANSPOSE, "t", 1, &x, 1, tattrs, &t));
  const rlx_attr cattrs[1] = {RLX_ATTR_I("to", RLX_DTYPE_F16)};
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_CAST, "c", 1, &t, 1, cattrs, &y));
  RLX_RETURN_IF_ERROR(rlx_graph_set_outputs(g, 1, &y));
  return rlx_graph_set_output_name(g, 0, "y");
}

int main() {
  const float xv[6] = {1.5f, -2, 0.1f, 65504, 3, 1e-3f};
  rlx_graph *g = nullptr;
  rlx_executable *ex = nullptr;
  rlx_tensor *x = nullptr, *outs[1] = {nullptr};
  const int64_t dims[2] = {2, 3};
  rlx_status *st = rlx_graph_create(&g);
  if (!st) st = build(g);
  if (!st) st = rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_LAZY, &ex);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, dims, xv, sizeof xv, &x);
  const char *names[1] = {"x"};
  rlx_tensor *values[1] = {x};
  if (!st) st = rlx_executable_run(ex, 1, names, values, 1, outs);
  size_t iy = 1;
  if (!st) st = rlx_graph_output_index(g, "y", &iy);
  int bad = 0;
  if (!st) {
    const uint16_t *y = static_cast<const uint16_t *>(rlx_tensor_cdata(outs[iy]));
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++) {
        float want = xv[j * 3 + i], got = rlx_f16_to_f32(y[i * 2 + j]);
        if (y[i * 2 + j] != rlx_f32_to_f16(want)) {
          std::fprintf(stderr, "y[%d,%d] = %g, expected float16(%g)\n", i, j, static_cast<double>(got), static_cast<double>(want));
          bad = 1;
        }
      }
    if (!bad) std::printf("c++17 ok\n");
  }
  rlx_tensor_free(outs[0]);
  rlx_tensor_free(x);
  rlx_executable_free(ex);
  rlx_graph_free(g);
  return st ? fail(st) : bad;
}
