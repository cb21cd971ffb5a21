/* Asynchronous runs: commit without waiting, sync later, runs and commits around pending work. */
#include "exec_test_util.h"

/* y = x * x + 1 over x [3]. */
static rlx_graph *square_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(3));
  rlx_value one = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){1});
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MUL, 2, VALS(x, x), 0, NULL), one), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static rlx_status *commit1(rlx_executable *ex, rlx_tensor *x) {
  return rlx_executable_commit(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){x});
}

static void test_commit_then_sync(void **state) {
  (void)state;
  rlx_graph *g = square_graph();
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    rlx_tensor *out = NULL, *x1 = tf32(1, DIMS(3), (const float[]){1, 2, 3}), *x2 = tf32(1, DIMS(3), (const float[]){-1, 0, 4});
    /* nothing pending: a bare sync is a no-op, reading fails */
    assert_false(rlx_executable_pending(ex));
    OK(rlx_executable_sync(ex, 0, NULL));
    FAILS(rlx_executable_sync(ex, 1, &out), FAILED_PRECONDITION, "no committed run");
    assert_null(out);
    /* commit, then read after sync */
    OK(commit1(ex, x1));
    assert_true(rlx_executable_pending(ex));
    OK(rlx_executable_sync(ex, 1, &out));
    assert_false(rlx_executable_pending(ex));
    expect_f32(out, 1, DIMS(3), (const float[]){2, 5, 10}, 0);
    rlx_tensor_free(out);
    /* a run right after a commit is safe and the commit's results stay readable */
    OK(commit1(ex, x1));
    OK(run1(ex, "x", x2, &out));
    expect_f32(out, 1, DIMS(3), (const float[]){2, 1, 17}, 0);
    rlx_tensor_free(out);
    OK(rlx_executable_sync(ex, 1, &out));
    expect_f32(out, 1, DIMS(3), (const float[]){2, 5, 10}, 0);
    rlx_tensor_free(out);
    /* a second commit replaces the pending results; sync without outputs just waits */
    OK(commit1(ex, x1));
    OK(commit1(ex, x2));
    OK(rlx_executable_sync(ex, 1, &out));
    expect_f32(out, 1, DIMS(3), (const float[]){2, 1, 17}, 0);
    rlx_tensor_free(out);
    OK(commit1(ex, x2));
    OK(rlx_executable_sync(ex, 0, NULL));
    assert_false(rlx_executable_pending(ex));
    /* a failing commit keeps what is pending */
    OK(commit1(ex, x1));
    FAILS(rlx_executable_commit(ex, 0, NULL, NULL), INVALID_ARGUMENT, "input 'x' (float32[3]) was not given");
    out = NULL;
    FAILS(rlx_executable_sync(ex, 2, &out), INVALID_ARGUMENT, "n_outputs is 2");
    OK(rlx_executable_sync(ex, 1, &out));
    expect_f32(out, 1, DIMS(3), (const float[]){2, 5, 10}, 0);
    rlx_tensor_free(out);
    /* freeing with a run pending waits for it */
    OK(commit1(ex, x2));
    rlx_tensor_free(x1);
    rlx_tensor_free(x2);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* state' = state x * 0.5 + x over [n, n] (a product: some real work per step); with `doubled`, a
 * second output 2 state'. */
static rlx_graph *state_graph(int64_t n, bool doubled) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value s = g_input(g, "state", RLX_DTYPE_F32, 2, DIMS(n, n));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(n, n));
  rlx_value half = g_const(g, RLX_DTYPE_F32, 0, NULL, (const float[]){0.5f});
  rlx_value mm = g_op(g, RLX_OP_MATMUL, 2, VALS(s, x), 0, NULL);
  rlx_value y[2];
  y[0] = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_MUL, 2, VALS(mm, half), 0, NULL), x), 0, NULL);
  y[1] = g_op(g, RLX_OP_ADD, 2, VALS(y[0], y[0]), 0, NULL);
  OK(rlx_graph_set_outputs(g, doubled ? 2 : 1, y));
  return g;
}

/* An executable of state_graph with the state in a device handle fed by the output (read back or not). */
static rlx_executable *state_exec(rlx_graph *g, rlx_mode mode, const rlx_tensor *state, bool readback) {
  rlx_executable *ex = make_exec(g, mode);
  OK(rlx_executable_bind_device_handle(ex, "state", state));
  OK(rlx_executable_set_handle_feed(ex, "state", 0));
  OK(rlx_executable_set_output_readback(ex, 0, readback));
  return ex;
}

/* The state fed back through a device handle: commits chain without syncs. */
static void test_commits_chain_through_feeds(void **state) {
  (void)state;
  rlx_graph *g = state_graph(64, false);
  static float xv[64 * 64], sv[64 * 64], want[64 * 64];
  for (int i = 0; i < 64 * 64; i++) xv[i] = (i % 64 == i / 64) ? 0.25f : 0.0f; /* x = I/4 */
  for (int i = 0; i < 64 * 64; i++) sv[i] = (float)(i % 7) * 0.125f;
  /* s_{k+1} = s_k x / 2 + x = s_k / 8 + I/4 */
  for (int i = 0; i < 64 * 64; i++) {
    double v = sv[i];
    for (int k = 0; k < 5; k++) v = v / 8 + xv[i];
    want[i] = (float)v;
  }
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_tensor *ts = tf32(2, DIMS(64, 64), sv), *tx = tf32(2, DIMS(64, 64), xv), *out = NULL;
    rlx_executable *ex = state_exec(g, all_modes[m], ts, false);
    for (int k = 0; k < 5; k++) OK(rlx_executable_commit(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}));
    OK(rlx_executable_read_handle(ex, "state", &out)); /* waits for the chain */
    expect_f32(out, 2, DIMS(64, 64), want, 1e-6);
    rlx_tensor_free(out);
    out = (rlx_tensor *)1;
    OK(rlx_executable_sync(ex, 1, &out));
    assert_null(out); /* readback off */
    rlx_tensor_free(ts);
    rlx_tensor_free(tx);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
}

/* Two runs pending (rlx_executable_set_max_pending): the state chain of the test above, each sync
 * reading the oldest run's second output (2 state') while the next run is already committed. (Its
 * fed output is not read back, as rlx_llm_generate reads the sampled id and feeds its int32 copy:
 * reading the very buffer that the run in flight holds made TSan report the two threads' reference
 * counts, kept in uninstrumented MLX, as a race about once in 25 runs.) */
static void test_pipelined_commits(void **state) {
  (void)state;
  rlx_graph *g = state_graph(8, true);
  float xv[64], sv[64], want[7][64]; /* want[k]: the state after k + 1 runs */
  for (int i = 0; i < 64; i++) xv[i] = (i % 8 == i / 8) ? 0.25f : 0.0f, sv[i] = (float)(i % 5) * 0.5f;
  for (int i = 0; i < 64; i++) {
    double v = sv[i];
    for (int k = 0; k < 7; k++) v = v / 8 + xv[i], want[k][i] = (float)(2 * v); /* s x / 2 + x = s / 8 + I / 4 */
  }
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_tensor *ts = tf32(2, DIMS(8, 8), sv), *tx = tf32(2, DIMS(8, 8), xv), *out[2] = {NULL, NULL};
    rlx_executable *ex = state_exec(g, all_modes[m], ts, false);
    FAILS(rlx_executable_set_max_pending(ex, 0), INVALID_ARGUMENT, "expected 1 to 4");
    FAILS(rlx_executable_set_max_pending(ex, RLX_MAX_PENDING + 1), INVALID_ARGUMENT, "max pending runs 5");
    OK(rlx_executable_set_max_pending(ex, 2));
    const char *nm[] = {"x"};
    rlx_tensor *xs[] = {tx};
    OK(rlx_executable_commit(ex, 1, nm, xs)); /* run 1 */
    for (int k = 1; k < 5; k++) {             /* run k + 1 committed, then run k read */
      OK(rlx_executable_commit(ex, 1, nm, xs));
      FAILS(rlx_executable_set_max_pending(ex, 1), FAILED_PRECONDITION, "2 committed runs are pending");
      OK(rlx_executable_sync(ex, 2, out));
      assert_null(out[0]);
      expect_f32(out[1], 2, DIMS(8, 8), want[k - 1], 1e-6);
      rlx_tensor_free(out[1]);
      assert_true(rlx_executable_pending(ex));
    }
    OK(rlx_executable_sync(ex, 2, out)); /* run 5 */
    expect_f32(out[1], 2, DIMS(8, 8), want[4], 1e-6);
    rlx_tensor_free(out[1]);
    assert_false(rlx_executable_pending(ex));
    /* a third commit replaces the oldest pending results (runs 6 and 7 stay) */
    OK(rlx_executable_commit(ex, 1, nm, xs));
    OK(rlx_executable_commit(ex, 1, nm, xs));
    OK(rlx_executable_sync(ex, 2, out));
    expect_f32(out[1], 2, DIMS(8, 8), want[5], 1e-6);
    rlx_tensor_free(out[1]);
    OK(rlx_executable_commit(ex, 1, nm, xs));
    OK(rlx_executable_sync(ex, 0, NULL)); /* run 7, waited for, not read */
    OK(rlx_executable_set_max_pending(ex, 1));
    rlx_tensor_free(ts);
    rlx_tensor_free(tx);
    rlx_executable_free(ex); /* with run 8 pending: waits for it */
  }
  rlx_graph_free(g);
}

/* A donated KV cache written in place while runs are in flight: rows scattered (ScatterElements,
 * axis 0) into a fed [6, 2] handle by runs committed two at a time, each sync reading the oldest
 * run's sum of the cache and (in the second round) a view of its cache, [12], which the next run,
 * already committed, must not have changed (rlx_exec_inplace_leaves gives that run a copy). The
 * expected values are the rows written so far, in C. Then donation off (a compiled function is
 * traced again) and on again: the same results. On the CPU (rlx's kernel) and, where there is
 * one, the GPU (MLX's put_along_axis, in place where MLX donates the handle's buffer). */
static void test_inplace_cache_pipelined(void **state) {
  (void)state;
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value c = g_input(g, "cache", RLX_DTYPE_F32, 2, DIMS(6, 2)), p = g_input(g, "pos", RLX_DTYPE_I32, 2, DIMS(1, 2));
  rlx_value r = g_input(g, "row", RLX_DTYPE_F32, 2, DIMS(1, 2));
  rlx_value y = g_op(g, RLX_OP_SCATTER_ELEMENTS, 3, VALS(c, p, r), 1, (rlx_attr[]){RLX_ATTR_I("axis", 0)});
  rlx_value total = g_op(g, RLX_OP_REDUCE, 1, &y, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")});
  rlx_value flat = g_op(g, RLX_OP_RESHAPE, 1, &y, 1, (rlx_attr[]){RLX_ATTR_IS("shape", 1, DIMS(12))});
  OK(rlx_graph_set_outputs(g, 3, VALS(y, total, flat)));
  float zero[12] = {0}, rows[6][2], want[6][12], sums[6];
  for (int k = 0; k < 6; k++) {
    rows[k][0] = (float)k + 1, rows[k][1] = -0.25f * (float)k - 0.5f;
    for (int i = 0; i < 12; i++) want[k][i] = k ? want[k - 1][i] : 0;
    want[k][2 * k] = rows[k][0], want[k][2 * k + 1] = rows[k][1];
    sums[k] = 0;
    for (int i = 0; i < 12; i++) sums[k] += want[k][i];
  }
  rlx_tensor *z = tf32(2, DIMS(6, 2), zero);
  for (int dev = 0; dev < (rlx_gpu_available() ? 2 : 1); dev++)
    for (size_t m = 0; m < LEN(all_modes); m++)
      for (int round = 0; round < 4; round++) {
        bool view = round == 1; /* read the view back: the in-place write goes to a copy */
        rlx_executable *ex = NULL;
        OK(rlx_executable_create(g, dev ? RLX_DEVICE_GPU : RLX_DEVICE_CPU, all_modes[m], &ex));
        OK(rlx_executable_bind_device_handle(ex, "cache", z));
        OK(rlx_executable_set_handle_feed(ex, "cache", 0));
        OK(rlx_executable_set_handle_donation(ex, "cache", round != 2));
        OK(rlx_executable_set_output_readback(ex, 2, view));
        OK(rlx_executable_set_max_pending(ex, 2));
        if (round == 3) { /* a run with donation off, then on: the plan changes between runs */
          OK(rlx_executable_set_handle_donation(ex, "cache", false));
          int32_t pv[2] = {5, 5};
          rlx_tensor *tp = tensor(RLX_DTYPE_I32, 2, DIMS(1, 2), pv), *tr = tf32(2, DIMS(1, 2), (const float[]){0, 0}), *outs[3] = {0};
          OK(rlx_executable_run(ex, 2, (const char *const[]){"pos", "row"}, (rlx_tensor *const[]){tp, tr}, 3, outs));
          expect_f32(outs[1], 0, NULL, (const float[]){0}, 0);
          for (int i = 0; i < 3; i++) rlx_tensor_free(outs[i]);
          rlx_tensor_free(tp);
          rlx_tensor_free(tr);
          OK(rlx_executable_set_handle_donation(ex, "cache", true));
        }
        for (int k = 0; k <= 6; k++) {
          if (k < 6) { /* commit run k, then read run k - 1 */
            int32_t pv[2] = {k, k};
            rlx_tensor *tp = tensor(RLX_DTYPE_I32, 2, DIMS(1, 2), pv), *tr = tf32(2, DIMS(1, 2), rows[k]);
            OK(rlx_executable_commit(ex, 2, (const char *const[]){"pos", "row"}, (rlx_tensor *const[]){tp, tr}));
            rlx_tensor_free(tp);
            rlx_tensor_free(tr);
          }
          if (k == 0) continue;
          rlx_tensor *outs[3] = {0};
          OK(rlx_executable_sync(ex, 3, outs));
          assert_null(outs[0]);
          expect_f32(outs[1], 0, NULL, &sums[k - 1], 1e-6);
          if (view) expect_f32(outs[2], 1, DIMS(12), want[k - 1], 0);
          else assert_null(outs[2]);
          for (int i = 0; i < 3; i++) rlx_tensor_free(outs[i]);
        }
        rlx_tensor *now = NULL;
        OK(rlx_executable_read_handle(ex, "cache", &now));
        expect_f32(now, 2, DIMS(6, 2), want[5], 0);
        rlx_tensor_free(now);
        rlx_executable_free(ex);
      }
  rlx_tensor_free(z);
  rlx_graph_free(g);
}

/* A layer's K and V caches written in place by two ScatterElements of one index array and read by
 * an Attention, as an LLM decode step: C = 6 positions, 4 query heads over 2 KV heads of 4 dims,
 * one query per run at position p, runs committed two at a time and each sync reading the oldest run's attention output against the
 * closed form computed here from the rows written so far. Both cache layouts of rlx_llm: positions
 * first [1, C, Hkv*D] (scatter axis 1, the CPU's) and heads first [1, Hkv, C, D] (axis 2, a GPU's);
 * on the CPU and, where there is one, the GPU; every mode. The caches are read back at the end. On
 * a GPU the positions-first caches are not written in place (exec_handles.c): written in place,
 * every run's attention output was wrong there on an H100 (2026-12-07; the write raced MLX's copy
 * of the transposed view). */
static void test_inplace_kv_pair(void **state) {
  (void)state;
  enum { C = 6, H = 4, HKV = 2, D = 4 };
  static float qv[C][H * D], kv[C][HKV * D], vv[C][HKV * D], want[C][H * D];
  for (int p = 0; p < C; p++) {
    for (int i = 0; i < H * D; i++) qv[p][i] = (float)(((p * 7 + i * 3) % 11) - 5) * 0.125f;
    for (int i = 0; i < HKV * D; i++) {
      kv[p][i] = (float)(((p * 5 + i * 7) % 13) - 6) * 0.1f;
      vv[p][i] = (float)(((p * 3 + i * 5) % 9) - 4) * 0.25f;
    }
    for (int h = 0; h < H; h++) { /* query head h reads kv head h / 2 over positions 0..p */
      int kh = h / (H / HKV);
      double sc[C], mx = -1e300, sum = 0;
      for (int c = 0; c <= p; c++) {
        sc[c] = 0;
        for (int d = 0; d < D; d++) sc[c] += (double)qv[p][h * D + d] * kv[c][kh * D + d];
        sc[c] *= 0.5; /* 1 / sqrt(D) */
        mx = sc[c] > mx ? sc[c] : mx;
      }
      for (int c = 0; c <= p; c++) sum += sc[c] = exp(sc[c] - mx);
      for (int d = 0; d < D; d++) {
        double y = 0;
        for (int c = 0; c <= p; c++) y += sc[c] / sum * vv[c][kh * D + d];
        want[p][h * D + d] = (float)y;
      }
    }
  }
  for (int heads_first = 0; heads_first < 2; heads_first++) {
    rlx_graph *g;
    OK(rlx_graph_create(&g));
    int rank = heads_first ? 4 : 3, axis = heads_first ? 2 : 1;
    const int64_t *cdims = heads_first ? DIMS(1, HKV, C, D) : DIMS(1, C, HKV * D), *udims = heads_first ? DIMS(1, HKV, 1, D) : DIMS(1, 1, HKV * D);
    const int64_t *qdims = heads_first ? DIMS(1, H, 1, D) : DIMS(1, 1, H * D);
    rlx_value kc = g_input(g, "k", RLX_DTYPE_F32, rank, cdims), vc = g_input(g, "v", RLX_DTYPE_F32, rank, cdims);
    rlx_value rows = g_input(g, "rows", RLX_DTYPE_I32, rank, udims), q = g_input(g, "q", RLX_DTYPE_F32, rank, qdims);
    rlx_value nk = g_input(g, "nk", RLX_DTYPE_F32, rank, udims), nv = g_input(g, "nv", RLX_DTYPE_F32, rank, udims);
    rlx_value mask = g_input(g, "mask", RLX_DTYPE_F32, 2, DIMS(1, C));
    rlx_attr ax = RLX_ATTR_I("axis", axis);
    rlx_value k2 = g_op(g, RLX_OP_SCATTER_ELEMENTS, 3, VALS(kc, rows, nk), 1, &ax);
    rlx_value v2 = g_op(g, RLX_OP_SCATTER_ELEMENTS, 3, VALS(vc, rows, nv), 1, &ax);
    rlx_value y = g_op(g, RLX_OP_ATTENTION, 4, VALS(q, k2, v2, mask), 3,
                       (rlx_attr[]){RLX_ATTR_I("num_heads", H), RLX_ATTR_I("num_kv_heads", HKV), RLX_ATTR_S("mask", "bias")});
    OK(rlx_graph_set_outputs(g, 3, VALS(y, k2, v2)));
    float zero[C * HKV * D] = {0};
    rlx_tensor *z = tf32(rank, cdims, zero);
    for (int dev = 0; dev < (rlx_gpu_available() ? 2 : 1); dev++)
      for (size_t m = 0; m < LEN(all_modes); m++) {
        rlx_executable *ex = NULL;
        OK(rlx_executable_create(g, dev ? RLX_DEVICE_GPU : RLX_DEVICE_CPU, all_modes[m], &ex));
        for (int j = 0; j < 2; j++) {
          const char *nm = j ? "v" : "k";
          OK(rlx_executable_bind_device_handle(ex, nm, z));
          OK(rlx_executable_set_handle_feed(ex, nm, 1 + (size_t)j));
          OK(rlx_executable_set_handle_donation(ex, nm, true));
        }
        OK(rlx_executable_set_max_pending(ex, 2));
        for (int p = 0; p <= C; p++) {
          if (p < C) { /* commit run p, then read run p - 1 */
            int32_t rv[HKV * D];
            float mv[C], qh[H * D], kh[HKV * D], vh[HKV * D];
            for (int i = 0; i < HKV * D; i++) rv[i] = p;
            for (int c = 0; c < C; c++) mv[c] = c <= p ? 0.0f : -INFINITY;
            /* heads first: the same values, [H, 1, D] is [H * D] */
            memcpy(qh, qv[p], sizeof qh), memcpy(kh, kv[p], sizeof kh), memcpy(vh, vv[p], sizeof vh);
            rlx_tensor *in[5] = {tensor(RLX_DTYPE_I32, rank, udims, rv), tf32(rank, qdims, qh), tf32(rank, udims, kh), tf32(rank, udims, vh),
                                 tf32(2, DIMS(1, C), mv)};
            OK(rlx_executable_commit(ex, 5, (const char *const[]){"rows", "q", "nk", "nv", "mask"}, in));
            for (int i = 0; i < 5; i++) rlx_tensor_free(in[i]);
          }
          if (p == 0) continue;
          rlx_tensor *outs[3] = {0};
          OK(rlx_executable_sync(ex, 3, outs));
          expect_f32(outs[0], rank, qdims, want[p - 1], 1e-5);
          for (int i = 0; i < 3; i++) rlx_tensor_free(outs[i]);
        }
        for (int j = 0; j < 2; j++) {
          float full[C * HKV * D];
          for (int c = 0; c < C; c++)
            for (int h = 0; h < HKV; h++)
              for (int d = 0; d < D; d++)
                full[heads_first ? (h * C + c) * D + d : (c * HKV + h) * D + d] = (j ? vv : kv)[c][h * D + d];
          rlx_tensor *now = NULL;
          OK(rlx_executable_read_handle(ex, j ? "v" : "k", &now));
          expect_f32(now, rank, cdims, full, 0);
          rlx_tensor_free(now);
        }
        rlx_executable_free(ex);
      }
    rlx_tensor_free(z);
    rlx_graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commit_then_sync),
      cmocka_unit_test(test_commits_chain_through_feeds),
      cmocka_unit_test(test_pipelined_commits),
      cmocka_unit_test(test_inplace_cache_pipelined),
      cmocka_unit_test(test_inplace_kv_pair),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
