/* Thread safety: executables run concurrently from several threads; one executable shared by
 * threads; compiled traces per thread and their erasure (no stale trace reaches a later
 * executable); commits synced from another thread; rlx's CPU kernel thread pool split over its
 * workers and entered by several threads at once. Worker threads record failures; the main
 * thread asserts (cmocka asserts only on the main thread). scripts/tsan.sh runs this under
 * ThreadSanitizer. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "exec_test_util.h"

/* y = tanh(x @ w) + c: x [s0, 4], w [4, 2] param, c [2] constant. */
static rlx_graph *work_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(RLX_DIM_SYMBOL(0), 4));
  rlx_value w = g_param(g, "w", RLX_DTYPE_F32, 2, DIMS(4, 2));
  rlx_value c = g_const(g, RLX_DTYPE_F32, 1, DIMS(2), (const float[]){0.25f, -0.5f});
  rlx_value y = g_op(g, RLX_OP_ADD, 2, VALS(g_op(g, RLX_OP_TANH, 1, VALS(g_op(g, RLX_OP_MATMUL, 2, VALS(x, w), 0, NULL)), 0, NULL), c), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

static const float Wt[8] = {0.5f, -0.25f, 1, 0.75f, -1, 0.5f, 0.125f, 2};

/* Runs `runs` checked iterations on ex; returns the number of wrong or failed runs. */
static int hammer(rlx_executable *ex, int runs, uint32_t seed) {
  int bad = 0;
  for (int k = 0; k < runs; k++) {
    int64_t rows = 1 + (k + (int)seed) % 3;
    float x[3 * 4], want[3 * 2];
    fill_random(x, (size_t)rows * 4, seed * 1000 + (uint32_t)k);
    for (int64_t i = 0; i < rows; i++)
      for (int j = 0; j < 2; j++) {
        double h = 0;
        for (int q = 0; q < 4; q++) h += (double)x[i * 4 + q] * Wt[q * 2 + j];
        want[i * 2 + j] = (float)(tanh(h) + (j ? -0.5 : 0.25));
      }
    rlx_tensor *tx = NULL, *y = NULL;
    rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, 2, DIMS(rows, 4), x, sizeof(float) * (size_t)rows * 4, &tx);
    if (!st) st = rlx_executable_run(ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 1, &y);
    if (st) {
      fprintf(stderr, "run failed: %s\n", rlx_status_message(st));
      rlx_status_free(st);
      bad++;
    } else {
      const float *got = rlx_tensor_cdata(y);
      for (int64_t i = 0; i < rows * 2; i++)
        if (fabs((double)got[i] - want[i]) > 1e-5) {
          bad++;
          break;
        }
    }
    rlx_tensor_free(y);
    rlx_tensor_free(tx);
  }
  return bad;
}

static rlx_executable *work_exec(const rlx_graph *g, rlx_mode mode) {
  rlx_executable *ex = NULL;
  rlx_tensor *tw = NULL;
  rlx_status *st = rlx_executable_create(g, RLX_DEVICE_CPU, mode, &ex);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, DIMS(4, 2), Wt, sizeof Wt, &tw);
  if (!st) st = rlx_executable_set_param(ex, "w", tw);
  rlx_tensor_free(tw);
  if (st) {
    fprintf(stderr, "setup failed: %s\n", rlx_status_message(st));
    rlx_status_free(st);
    rlx_executable_free(ex);
    return NULL;
  }
  return ex;
}

typedef struct job {
  const rlx_graph *g;
  rlx_executable *shared; /* NULL: the thread makes its own executable */
  rlx_mode mode;
  uint32_t seed;
  int bad;
} job;

static void *job_main(void *arg) {
  job *j = arg;
  rlx_executable *ex = j->shared ? j->shared : work_exec(j->g, j->mode);
  j->bad = ex ? hammer(ex, 40, j->seed) : 1;
  if (!j->shared) rlx_executable_free(ex);
  return NULL;
}

static void run_jobs(job *jobs, int n) {
  pthread_t t[8];
  for (int i = 0; i < n; i++) assert_int_equal(pthread_create(&t[i], NULL, job_main, &jobs[i]), 0);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < n; i++)
    if (jobs[i].bad) fail_msg("thread %d: %d bad runs", i, jobs[i].bad);
}

/* Several executables (compiled and lazy) of one graph run at once on several threads. */
static void test_executables_in_parallel(void **state) {
  (void)state;
  rlx_graph *g = work_graph();
  job jobs[6];
  for (int i = 0; i < 6; i++) jobs[i] = (job){.g = g, .mode = i % 3 == 2 ? RLX_MODE_LAZY : RLX_MODE_COMPILED, .seed = (uint32_t)i + 1};
  run_jobs(jobs, 6);
  rlx_graph_free(g);
}

/* One compiled executable shared by four threads: calls serialize on it; each thread traces
 * once (MLX's compile cache is per thread) and replays afterwards. */
static void test_shared_compiled_executable(void **state) {
  (void)state;
  rlx_graph *g = work_graph();
  rlx_executable *ex = work_exec(g, RLX_MODE_COMPILED);
  assert_non_null(ex);
  job jobs[4];
  for (int i = 0; i < 4; i++) jobs[i] = (job){.g = g, .shared = ex, .seed = (uint32_t)i + 10};
  run_jobs(jobs, 4);
  /* rows take 3 sizes: each thread traces each size once */
  assert_int_equal(rlx_executable_num_traces(ex), 4 * 3);
  rlx_executable_free(ex);
  rlx_graph_free(g);
}

/* ---- rlx's CPU kernels on the thread pool (src/mlx/shim/kernel_threads.cpp) ---- */

enum { POOL_ROWS = 64, POOL_COLS = 1024 }; /* 65536 elements: split into chunks over the pool */

/* y = Softmax(Tanh(x)) over the last axis of x [64, 1024]: rlx's Unary and Softmax kernels. */
static rlx_graph *pool_graph(void) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 2, DIMS(POOL_ROWS, POOL_COLS));
  rlx_value y = g_op(g, RLX_OP_SOFTMAX, 1, VALS(g_op(g, RLX_OP_TANH, 1, VALS(x), 0, NULL)), 1, (rlx_attr[]){RLX_ATTR_I("axis", 1)});
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

typedef struct pool_job {
  const rlx_graph *g;
  rlx_mode mode;
  const float *x, *want;
  int bad;
} pool_job;

static void *pool_main(void *arg) {
  pool_job *j = arg;
  rlx_executable *ex = NULL;
  rlx_tensor *x = NULL;
  rlx_status *st = rlx_executable_create(j->g, RLX_DEVICE_CPU, j->mode, &ex);
  if (!st) st = rlx_tensor_create(RLX_DTYPE_F32, 2, DIMS(POOL_ROWS, POOL_COLS), j->x, sizeof(float) * POOL_ROWS * POOL_COLS, &x);
  for (int k = 0; !st && k < 8; k++) {
    rlx_tensor *y = NULL;
    st = run1(ex, "x", x, &y);
    const float *v = st ? NULL : rlx_tensor_cdata(y);
    for (int i = 0; v && i < POOL_ROWS * POOL_COLS; i++)
      if (fabsf(v[i] - j->want[i]) > 1e-6f + 1e-4f * j->want[i]) {
        j->bad++;
        break;
      }
    rlx_tensor_free(y);
  }
  if (st) {
    fprintf(stderr, "pool job: %s\n", rlx_status_message(st));
    j->bad++;
  }
  rlx_status_free(st);
  rlx_tensor_free(x);
  rlx_executable_free(ex);
  return NULL;
}

/* Four threads run the kernels at once (one job at a time on the pool: the others run inline),
 * with the pool sized to 4 (RLX_NUM_THREADS, set in main before anything starts it). */
static void test_kernel_pool_from_threads(void **state) {
  (void)state;
  enum { N = POOL_ROWS * POOL_COLS };
  float *x = malloc(sizeof(float) * N), *want = malloc(sizeof(float) * N);
  assert_non_null(x);
  assert_non_null(want);
  fill_random(x, N, 77);
  for (int r = 0; r < POOL_ROWS; r++) { /* the oracle: libm in double */
    double sum = 0, m = -INFINITY;
    for (int i = 0; i < POOL_COLS; i++) m = fmax(m, tanh(x[r * POOL_COLS + i]));
    for (int i = 0; i < POOL_COLS; i++) sum += exp(tanh(x[r * POOL_COLS + i]) - m);
    for (int i = 0; i < POOL_COLS; i++) want[r * POOL_COLS + i] = (float)(exp(tanh(x[r * POOL_COLS + i]) - m) / sum);
  }
  rlx_graph *g = pool_graph();
  pthread_t t[4];
  pool_job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (pool_job){.g = g, .mode = i % 2 ? RLX_MODE_COMPILED : RLX_MODE_LAZY, .x = x, .want = want};
    assert_int_equal(pthread_create(&t[i], NULL, pool_main, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    if (jobs[i].bad) fail_msg("thread %d: %d bad runs", i, jobs[i].bad);
  rlx_graph_free(g);
  free(x);
  free(want);
}

/* ---- a worker thread that runs jobs on request (a thread with a lasting MLX compile cache) ---- */
typedef struct worker {
  pthread_t t;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  void (*fn)(void *);
  void *arg;
  bool quit;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->fn && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (w->quit) break;
    w->fn(w->arg);
    w->fn = NULL;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static void worker_start(worker *w) {
  *w = (worker){0};
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  assert_int_equal(pthread_create(&w->t, NULL, worker_main, w), 0);
}

static void worker_do(worker *w, void (*fn)(void *), void *arg) {
  pthread_mutex_lock(&w->mu);
  w->fn = fn;
  w->arg = arg;
  pthread_cond_broadcast(&w->cv);
  while (w->fn) pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

static void worker_stop(worker *w) {
  pthread_mutex_lock(&w->mu);
  w->quit = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->t, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
}

/* y = x op k for a constant k, x [4]. */
static rlx_graph *scale_graph(rlx_op op, float k) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = g_input(g, "x", RLX_DTYPE_F32, 1, DIMS(4));
  rlx_value c = g_const(g, RLX_DTYPE_F32, 0, NULL, &k);
  rlx_value y = g_op(g, op, 2, VALS(x, c), 0, NULL);
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

typedef struct scaled_run {
  rlx_executable *ex;
  float want; /* y[3] */
  int bad;
} scaled_run;

static void scaled_run_fn(void *arg) {
  scaled_run *r = arg;
  const float x[4] = {1, 2, 3, 4};
  rlx_tensor *tx = NULL, *y = NULL;
  rlx_status *st = rlx_tensor_create(RLX_DTYPE_F32, 1, DIMS(4), x, sizeof x, &tx);
  if (!st) st = rlx_executable_run(r->ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){tx}, 1, &y);
  if (st || ((const float *)rlx_tensor_cdata(y))[3] != r->want) r->bad++;
  rlx_status_free(st);
  rlx_tensor_free(y);
  rlx_tensor_free(tx);
}

/* A compiled executable traced by two threads and freed by one of them leaves no trace that a
 * later executable could find (MLX keys traces by function id per thread: ids are never reused). */
static void test_no_stale_trace_after_free(void **state) {
  (void)state;
  worker w;
  worker_start(&w);
  int bad = 0;
  for (int round = 0; round < 30; round++) {
    float k1 = (float)(round + 2), k2 = -(float)(round + 3);
    rlx_graph *g1 = scale_graph(RLX_OP_MUL, k1), *g2 = scale_graph(RLX_OP_ADD, k2);
    scaled_run r1 = {make_exec(g1, RLX_MODE_COMPILED), 4 * k1, 0};
    scaled_run_fn(&r1);              /* traces on this thread */
    worker_do(&w, scaled_run_fn, &r1); /* traces on the worker */
    rlx_executable_free(r1.ex);        /* freed here */
    scaled_run r2 = {make_exec(g2, RLX_MODE_COMPILED), 4 + k2, 0};
    scaled_run_fn(&r2);                /* a new function, likely at the freed one's address */
    worker_do(&w, scaled_run_fn, &r2); /* must trace x + k, not replay x * k */
    rlx_executable_free(r2.ex);
    bad += r1.bad + r2.bad;
    rlx_graph_free(g1);
    rlx_graph_free(g2);
  }
  worker_stop(&w);
  assert_int_equal(bad, 0);
}

typedef struct commit_job {
  rlx_executable *ex;
  rlx_tensor *x;
  rlx_status *st;
} commit_job;

static void commit_fn(void *arg) {
  commit_job *c = arg;
  c->st = rlx_executable_commit(c->ex, 1, (const char *const[]){"x"}, (rlx_tensor *const[]){c->x});
}

/* A commit made on one thread is synced and read on another. */
static void test_commit_on_one_thread_sync_on_another(void **state) {
  (void)state;
  worker w;
  worker_start(&w);
  rlx_graph *g = scale_graph(RLX_OP_MUL, 1.5f);
  for (size_t m = 0; m < LEN(all_modes); m++) {
    rlx_executable *ex = make_exec(g, all_modes[m]);
    commit_job c = {ex, tf32(1, DIMS(4), (const float[]){2, 4, 6, 8}), NULL};
    worker_do(&w, commit_fn, &c);
    OK(c.st);
    rlx_tensor *y = NULL;
    OK(rlx_executable_sync(ex, 1, &y));
    expect_f32(y, 1, DIMS(4), (const float[]){3, 6, 9, 12}, 0);
    rlx_tensor_free(y);
    rlx_tensor_free(c.x);
    rlx_executable_free(ex);
  }
  rlx_graph_free(g);
  worker_stop(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_executables_in_parallel),
      cmocka_unit_test(test_shared_compiled_executable),
      cmocka_unit_test(test_no_stale_trace_after_free),
      cmocka_unit_test(test_commit_on_one_thread_sync_on_another),
      cmocka_unit_test(test_kernel_pool_from_threads),
  };
  setenv("RLX_NUM_THREADS", "4", 0); /* a pool of 4 even on fewer cores (test_kernel_pool_from_threads) */
  return cmocka_run_group_tests(tests, NULL, NULL);
}
