/* Random streams of Sample (rlx/op_table.h, src/mlx/exec_random.c): with a seed, the k-th run of an
 * executable draws the same tokens in eager, lazy and compiled mode (compiled runs take the keys as
 * inputs instead of replaying the traced ones); successive runs draw fresh keys; without a seed,
 * compiled runs and separate executables draw fresh keys too; warmup leaves the streams alone. */
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

#define V 64
#define ROWS 4
#define RUNS 6

static const rlx_mode modes[] = {RLX_MODE_EAGER, RLX_MODE_LAZY, RLX_MODE_COMPILED};

/* logits [ROWS, V] -> Sample(seed) [ROWS], plus an argmax of the same logits (not random). */
static rlx_graph *sample_graph(int64_t seed) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_type t = ttype(RLX_DTYPE_F32, 2, (int64_t[]){ROWS, V});
  rlx_value x, y;
  OK(rlx_graph_add_input(g, "logits", &t, &x));
  rlx_attr a[2] = {RLX_ATTR_F("temperature", 1.0), RLX_ATTR_I("seed", seed)};
  OK(rlx_graph_add1(g, RLX_OP_SAMPLE, "s", 1, &x, 2, a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_tensor *flat_logits(void) {
  float v[ROWS * V];
  for (int i = 0; i < ROWS * V; i++) v[i] = (float)(i % 7) * 0.01f; /* close to uniform: many likely tokens */
  rlx_tensor *t;
  OK(rlx_tensor_create(RLX_DTYPE_F32, 2, (int64_t[]){ROWS, V}, v, sizeof v, &t));
  return t;
}

/* Runs ex RUNS times on the logits, writing the tokens of every run to toks[RUNS][ROWS]. */
static void draw(rlx_executable *ex, rlx_tensor *logits, int64_t toks[RUNS][ROWS]) {
  for (int r = 0; r < RUNS; r++) {
    rlx_tensor *out;
    OK(rlx_executable_run(ex, 1, (const char *[]){"logits"}, &logits, 1, &out));
    const int64_t *p = rlx_tensor_cdata(out);
    for (int i = 0; i < ROWS; i++) {
      assert_true(p[i] >= 0 && p[i] < V);
      toks[r][i] = p[i];
    }
    rlx_tensor_free(out);
  }
}

static bool runs_all_equal(int64_t toks[RUNS][ROWS]) {
  for (int r = 1; r < RUNS; r++)
    if (memcmp(toks[r], toks[0], sizeof toks[0])) return false;
  return true;
}

static void test_seeded_same_in_every_mode(void **state) {
  (void)state;
  rlx_graph *g = sample_graph(1234);
  rlx_tensor *logits = flat_logits();
  int64_t toks[3][RUNS][ROWS];
  for (int m = 0; m < 3; m++) {
    rlx_executable *ex;
    OK(rlx_executable_create(g, RLX_DEVICE_CPU, modes[m], &ex));
    if (modes[m] == RLX_MODE_COMPILED) /* warmup traces but draws nothing from the stream */
      OK(rlx_executable_warmup(ex, 1, (const char *[]){"logits"}, &logits));
    draw(ex, logits, toks[m]);
    if (modes[m] == RLX_MODE_COMPILED) assert_int_equal(rlx_executable_num_traces(ex), 1);
    rlx_executable_free(ex);
  }
  for (int m = 1; m < 3; m++)
    for (int r = 0; r < RUNS; r++)
      for (int i = 0; i < ROWS; i++)
        if (toks[m][r][i] != toks[0][r][i])
          fail_msg("%s run %d row %d drew %lld, eager drew %lld", rlx_mode_name(modes[m]), r, i, (long long)toks[m][r][i],
                   (long long)toks[0][r][i]);
  /* the stream advances: six runs over near-uniform logits of 64 tokens do not all repeat */
  assert_false(runs_all_equal(toks[0]));
  /* a new executable starts the stream again */
  rlx_executable *ex;
  int64_t again[RUNS][ROWS];
  OK(rlx_executable_create(g, RLX_DEVICE_CPU, RLX_MODE_COMPILED, &ex));
  draw(ex, logits, again);
  rlx_executable_free(ex);
  assert_memory_equal(again, toks[0], sizeof again);
  rlx_tensor_free(logits);
  rlx_graph_free(g);
}

static void test_unseeded_fresh_keys(void **state) {
  (void)state;
  rlx_graph *g = sample_graph(0);
  rlx_tensor *logits = flat_logits();
  for (int m = 0; m < 3; m++) {
    rlx_executable *a, *b;
    int64_t ta[RUNS][ROWS], tb[RUNS][ROWS];
    OK(rlx_executable_create(g, RLX_DEVICE_CPU, modes[m], &a));
    OK(rlx_executable_create(g, RLX_DEVICE_CPU, modes[m], &b));
    draw(a, logits, ta);
    draw(b, logits, tb);
    if (runs_all_equal(ta)) fail_msg("%s: six runs without a seed drew the same tokens", rlx_mode_name(modes[m]));
    if (!memcmp(ta, tb, sizeof ta)) fail_msg("%s: two executables without a seed drew the same tokens", rlx_mode_name(modes[m]));
    rlx_executable_free(a);
    rlx_executable_free(b);
  }
  rlx_tensor_free(logits);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seeded_same_in_every_mode),
      cmocka_unit_test(test_unseeded_fresh_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
