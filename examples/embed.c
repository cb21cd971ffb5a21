/* embed.c: rlx from C in one page. Builds y = relu(x @ w + b) as an rlx graph, runs it on MLX's
 * CPU backend, prints y, then shows what a failed call returns. Build against an installed rlx:
 *   cc embed.c $(pkg-config --cflags --libs rlx) -Wl,-rpath,$(pkg-config --variable=libdir rlx)
 * or in CMake: find_package(rlx) and target_link_libraries(app PRIVATE rlx::rlx). */
#include <stdio.h>

#include <rlx/rlx.h>

/* Prints a failed status (code and message naming what was wrong) and releases it. */
static int report(rlx_status *st) {
  fprintf(stderr, "rlx: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

/* Builds the graph: input x float32[2,3], param w float32[3,2], constant b float32[2]. */
static rlx_status *build(rlx_graph *g) {
  rlx_type tx, tw, tb;
  rlx_value x, w, b, xw, sum, y;
  const float bias[2] = {0.5f, -1.0f};
  RLX_RETURN_IF_ERROR(rlx_type_make(RLX_DTYPE_F32, 2, (const int64_t[]){2, 3}, &tx));
  RLX_RETURN_IF_ERROR(rlx_type_make(RLX_DTYPE_F32, 2, (const int64_t[]){3, 2}, &tw));
  RLX_RETURN_IF_ERROR(rlx_type_make(RLX_DTYPE_F32, 1, (const int64_t[]){2}, &tb));
  RLX_RETURN_IF_ERROR(rlx_graph_add_input(g, "x", &tx, &x));
  RLX_RETURN_IF_ERROR(rlx_graph_add_param(g, "w", &tw, &w));
  RLX_RETURN_IF_ERROR(rlx_graph_add_constant(g, &tb, bias, sizeof bias, &b));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_MATMUL, "xw", 2, (const rlx_value[]){x, w}, 0, NULL, &xw));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_ADD, "sum", 2, (const rlx_value[]){xw, b}, 0, NULL, &sum));
  RLX_RETURN_IF_ERROR(rlx_graph_add1(g, RLX_OP_RELU, "relu", 1, &sum, 0, NULL, &y));
  RLX_RETURN_IF_ERROR(rlx_graph_set_outputs(g, 1, &y));
  return rlx_graph_set_output_name(g, 0, "y");
}

static int run(rlx_graph *g) {
  const float xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {1, -1, 0, 1, 0.5f, -0.5f};
  rlx_executable *ex = NULL;
  rlx_tensor *w = NULL, *x = NULL, *outs[1] = {NULL};
  rlx_status *st = build(g);
  if (!st) st = rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_DEFAULT, &ex);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, (const int64_t[]){3, 2}, wv, sizeof wv, &w);
  if (!st) st = rlx_executable_set_param(ex, "w", w);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, (const int64_t[]){2, 3}, xv, sizeof xv, &x);
  const char *names[1] = {"x"};
  rlx_tensor *values[1] = {x};
  if (!st) st = rlx_executable_run(ex, 1, names, values, 1, outs);
  if (!st) {
    size_t iy = 0;
    st = rlx_graph_output_index(g, "y", &iy);
    const float *y = st ? NULL : rlx_tensor_cdata(outs[iy]);
    for (int64_t i = 0; y && i < rlx_tensor_numel(outs[iy]); i++) printf("y[%lld] = %g\n", (long long)i, y[i]);
  }
  if (!st) { /* a mistake: w given as int32. The status names the param and both types. */
    rlx_tensor *bad = NULL;
    st = rlx_tensor_create(RLX_DTYPE_I32, 2, (const int64_t[]){3, 2}, NULL, 0, &bad);
    rlx_status *err = st ? NULL : rlx_executable_set_param(ex, "w", bad);
    if (err) printf("expected error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(err)), rlx_status_message(err));
    rlx_status_free(err);
    rlx_tensor_free(bad);
  }
  rlx_tensor_free(outs[0]);
  rlx_tensor_free(x);
  rlx_tensor_free(w);
  rlx_executable_free(ex);
  return st ? report(st) : 0;
}

int main(void) {
  rlx_graph *g = NULL;
  rlx_status *st = rlx_graph_create(&g);
  if (st) return report(st);
  int rc = run(g);
  rlx_graph_free(g); /* after the executable that borrowed it */
  return rc;
}
