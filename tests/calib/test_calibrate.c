/* test_calibrate.c: calibration, its cache (corrupt, truncated, mismatched files; concurrent
 * writers) and the cost model (FLOPs, bytes and times checked against hand-computed values).
 * usage: test_calibrate RLX_CLI (the rlx binary, for the two-process case). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/test_util.h"

extern char **environ;

static const char *rlx_cli;
static char dir[256];
static char path[512];
static rlx_calibration measured; /* one quick measurement, shared by the cases */

static int n_warnings;
static char last_warning[1024];
static void on_warn(void *ud, const char *msg) {
  n_warnings++;
  snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static rlx_calibrate_options quick_opts(void) {
  return (rlx_calibrate_options){.quick = true, .cache_dir = dir, .warn = on_warn};
}

static void write_text(const char *p, const char *text, size_t n) {
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, n, f), n);
  fclose(f);
}

static char *read_text(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  char *buf = calloc(1, 65536);
  *n = fread(buf, 1, 65535, f);
  fclose(f);
  return buf;
}

static size_t files_in_dir(void) {
  DIR *d = opendir(dir);
  size_t n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

/* The reference's plausibility bounds (rlx-mlx tests calibration_records_memory_bw_and_attention,
 * calibration_returns_plausible_numbers), loosened for a loaded 2-core machine under ASan. */
static void test_measure_plausible(void **state) {
  rlx_calibrate_options o = quick_opts();
  OK(rlx_calibration_measure(RLX_DEVICE_CPU, &o, &measured));
  assert_true(measured.sgemm_large_flops > 1e8 && measured.sgemm_large_flops < 1e14);
  assert_true(measured.sgemm_small_flops > 1e7);
  assert_true(measured.roundtrip_overhead_ns > 100 && measured.roundtrip_overhead_ns < 1e8);
  assert_true(measured.memory_bw_gbps > 0.1 && measured.memory_bw_gbps < 2000);
  assert_true(measured.attention_flops > 1e7);
  assert_true(measured.reduce_gbps > 0.01 && measured.reduce_gbps < 2000);
  assert_true(measured.dispatch_overhead_ns >= 1 && measured.dispatch_overhead_ns < 1e8);
  assert_true(measured.transfer_gbps > 0.01 && measured.transcendental_gbps > 0.01 && measured.strided_copy_gbps > 0.01 &&
              measured.softmax_gbps > 0.01 && measured.pool_gbps > 0.001);
  assert_true(measured.erf_gbps > 0.01 && measured.tanh_gbps > 0.01 && measured.resize_gbps > 0.001);
  assert_true(measured.stream_gbps > 0.01 && measured.stream_gbps < 2000);
  assert_true(measured.conv_overhead_ns >= 1 && measured.conv_overhead_ns < 1e8);
  assert_true(measured.run_overhead_ns > 100 && measured.run_overhead_ns < 1e8);
  assert_true(measured.conv_flops > 1e7 && measured.conv_depthwise_flops > 1e6 && measured.conv_pointwise_flops > 1e7);
  assert_string_equal(measured.mlx_version, rlx_mlx_version());
  /* RLX_VERSION and the build: a rebuilt library measures again */
  assert_int_equal(strncmp(measured.rlx_version, RLX_VERSION "+", strlen(RLX_VERSION) + 1), 0);
  assert_int_equal(strlen(measured.rlx_version), strlen(RLX_VERSION) + 17);
  assert_true(!strncmp(measured.device_name, "cpu", 3));
  FAILS(rlx_calibration_measure(RLX_DEVICE_CPU, &o, NULL), INVALID_ARGUMENT, "NULL");
  if (!rlx_gpu_available()) FAILS(rlx_calibration_measure(RLX_DEVICE_GPU, &o, &measured), UNAVAILABLE, "no GPU");
}

/* The file holds the reference's keys (and rlx's) as numbers, read back exactly. */
static void test_save_load(void **state) {
  OK(rlx_calibration_save(&measured, path));
  size_t n;
  char *text = read_text(path, &n);
  cJSON *root = cJSON_Parse(text);
  assert_non_null(root);
  const char *keys[] = {"sgemm_large_flops", "sgemm_small_flops", "roundtrip_overhead_ns", "memory_bw_gbps", "attention_flops",
                        "reduce_gbps", "run_overhead_ns", "dispatch_overhead_ns", "transfer_gbps", "transcendental_gbps",
                        "strided_copy_gbps", "softmax_gbps", "pool_gbps", "conv_flops", "conv_depthwise_flops", "conv_pointwise_flops"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) assert_true(cJSON_IsNumber(cJSON_GetObjectItem(root, keys[i])));
  assert_string_equal(cJSON_GetObjectItem(root, "device_name")->valuestring, measured.device_name);
  /* cJSON prints 15 significant digits when they read back within an epsilon: compare to 1e-14 */
  assert_true(fabs(cJSON_GetObjectItem(root, "sgemm_large_flops")->valuedouble / measured.sgemm_large_flops - 1) < 1e-14);
  cJSON_Delete(root);
  free(text);
  rlx_calibration back;
  OK(rlx_calibration_load(path, RLX_DEVICE_CPU, &back));
  assert_true(fabs(back.memory_bw_gbps / measured.memory_bw_gbps - 1) < 1e-14 && fabs(back.conv_flops / measured.conv_flops - 1) < 1e-14);
  /* get() uses the cache: no measuring, no warning */
  rlx_calibrate_options o = quick_opts();
  bool was_measured = true;
  n_warnings = 0;
  OK(rlx_calibration_get(RLX_DEVICE_CPU, &o, &back, &was_measured));
  assert_false(was_measured);
  assert_int_equal(n_warnings, 0);
  assert_true(fabs(back.reduce_gbps / measured.reduce_gbps - 1) < 1e-14);
  FAILS(rlx_calibration_load("/nonexistent/rlx/calib.json", RLX_DEVICE_CPU, &back), NOT_FOUND, "/nonexistent/rlx/calib.json");
  char p2[600];
  OK(rlx_calibration_cache_path(RLX_DEVICE_CPU, dir, p2, sizeof p2));
  assert_string_equal(p2, path);
  FAILS(rlx_calibration_cache_path(RLX_DEVICE_CPU, dir, p2, 8), OUT_OF_RANGE, "longer");
  assert_int_equal(files_in_dir(), 1);
}

/* Each bad file: load fails with `code` naming the problem; with `get`, get() warns once, measures
 * again and leaves a good file (a whole calibration: once per kind of problem, as each takes a
 * quarter of a minute under ASan). */
static void check_bad_file(const char *text, size_t n, rlx_status_code code, const char *needle, bool get) {
  write_text(path, text, n);
  rlx_calibration c;
  rlx_status *st = rlx_calibration_load(path, RLX_DEVICE_CPU, &c);
  assert_non_null(st);
  if (rlx_status_code_of(st) != code || !strstr(rlx_status_message(st), needle))
    fail_msg("expected %s with '%s', got %s: %s", rlx_status_code_name(code), needle, rlx_status_code_name(rlx_status_code_of(st)),
             rlx_status_message(st));
  rlx_status_free(st);
  if (!get) return;
  rlx_calibrate_options o = quick_opts();
  bool was_measured = false;
  n_warnings = 0;
  OK(rlx_calibration_get(RLX_DEVICE_CPU, &o, &c, &was_measured));
  assert_true(was_measured);
  assert_int_equal(n_warnings, 1);
  assert_non_null(strstr(last_warning, needle));
  assert_non_null(strstr(last_warning, "measuring again"));
  OK(rlx_calibration_load(path, RLX_DEVICE_CPU, &c));
  assert_int_equal(files_in_dir(), 1);
}

static void check_bad_json(const cJSON *root, rlx_status_code code, const char *needle, bool get) {
  char *t = cJSON_Print(root);
  check_bad_file(t, strlen(t), code, needle, get);
  cJSON_free(t);
}

static void test_corrupt_cache(void **state) {
  OK(rlx_calibration_save(&measured, path));
  size_t n;
  char *good = read_text(path, &n);
  check_bad_file(good, n / 2, RLX_STATUS_DATA_LOSS, "not valid JSON", true); /* truncated */
  check_bad_file("", 0, RLX_STATUS_DATA_LOSS, "not valid JSON", false);
  check_bad_file("\x89PNG\r\n\x1a\n\0\0garbage", 16, RLX_STATUS_DATA_LOSS, "not valid JSON", false);
  check_bad_file("[1, 2, 3]", 9, RLX_STATUS_DATA_LOSS, "not a JSON object", false);
  /* valid JSON with a figure missing, or not a finite positive number */
  cJSON *root = cJSON_Parse(good);
  cJSON_DeleteItemFromObject(root, "attention_flops");
  check_bad_json(root, RLX_STATUS_DATA_LOSS, "\"attention_flops\"", true);
  cJSON_AddNumberToObject(root, "attention_flops", -5);
  check_bad_json(root, RLX_STATUS_DATA_LOSS, "\"attention_flops\"", false);
  cJSON_ReplaceItemInObject(root, "attention_flops", cJSON_CreateString("fast"));
  check_bad_json(root, RLX_STATUS_DATA_LOSS, "\"attention_flops\"", false);
  /* from another device, MLX or rlx */
  cJSON_Delete(root);
  const char *mismatch[][3] = {{"device_name", "cpu: some other CPU", "some other CPU"}, {"mlx_version", "0.0.1", "MLX '0.0.1'"},
                               {"rlx_version", RLX_VERSION, "rlx build '" RLX_VERSION "'"}};
  for (size_t i = 0; i < 3; i++) {
    root = cJSON_Parse(good);
    cJSON_ReplaceItemInObject(root, mismatch[i][0], cJSON_CreateString(mismatch[i][1]));
    check_bad_json(root, RLX_STATUS_FAILED_PRECONDITION, mismatch[i][2], i == 2);
    cJSON_Delete(root);
  }
  /* a CPU calibration claiming another precision loads, but get() measures again */
  root = cJSON_Parse(good);
  cJSON_ReplaceItemInObject(root, "precision", cJSON_CreateString("tf32"));
  char *t = cJSON_Print(root);
  write_text(path, t, strlen(t));
  cJSON_free(t);
  cJSON_Delete(root);
  rlx_calibration c;
  OK(rlx_calibration_load(path, RLX_DEVICE_CPU, &c));
  rlx_calibrate_options po = quick_opts();
  bool remeasured = false;
  n_warnings = 0;
  OK(rlx_calibration_get(RLX_DEVICE_CPU, &po, &c, &remeasured));
  assert_true(remeasured);
  assert_int_equal(n_warnings, 1);
  assert_non_null(strstr(last_warning, "precision 'tf32', not 'fp32'"));
  assert_string_equal(c.precision, "fp32");
  free(good);
  /* force measures even with a good cache */
  rlx_calibrate_options o = quick_opts();
  o.force = true;
  bool was_measured = false;
  OK(rlx_calibration_get(RLX_DEVICE_CPU, &o, &c, &was_measured));
  assert_true(was_measured);
  /* an unwritable cache is a warning, not an error */
  o = quick_opts();
  o.cache_dir = "/proc/rlx-cannot-create";
  n_warnings = 0;
  OK(rlx_calibration_get(RLX_DEVICE_CPU, &o, &c, &was_measured));
  assert_int_equal(n_warnings, 1);
  assert_non_null(strstr(last_warning, "/proc/rlx-cannot-create"));
}

/* Two writer processes rewrite the file as fast as they can while this process reads it: every
 * read sees one whole file (every figure equal to the writer's counter, never a mix), never a
 * torn one, and no temporary file is left behind. The children only write files (no MLX work
 * after fork). */
static void test_concurrent_writers(void **state) {
  unlink(path);
  pid_t kids[2];
  enum { WRITES = 400 };
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    assert_true(kids[k] >= 0);
    if (kids[k] == 0) {
      rlx_calibration c = measured;
      for (int i = 0; i < WRITES; i++) {
        double v = 1e6 * (k + 1) + i + 1;
#define RLX_X(field, unit, what) c.field = v;
        RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
        rlx_status *st = rlx_calibration_save(&c, path);
        if (st) _exit(3);
      }
      _exit(0);
    }
  }
  int reads = 0, running = 2;
  while (running) {
    rlx_calibration c;
    rlx_status *st = rlx_calibration_load(path, RLX_DEVICE_CPU, &c);
    if (st && rlx_status_code_of(st) != RLX_STATUS_NOT_FOUND) fail_msg("read a bad file: %s", rlx_status_message(st));
    if (!st) {
      reads++;
      assert_true(c.sgemm_large_flops == c.conv_pointwise_flops && c.reduce_gbps == c.sgemm_large_flops);
    }
    rlx_status_free(st);
    running = 0;
    for (int k = 0; k < 2; k++) {
      int ws;
      if (kids[k] > 0 && waitpid(kids[k], &ws, WNOHANG) == kids[k]) {
        assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        kids[k] = 0;
      }
      running += kids[k] > 0;
    }
  }
  assert_true(reads > 0);
  rlx_calibration c;
  OK(rlx_calibration_load(path, RLX_DEVICE_CPU, &c));
  assert_true(c.sgemm_large_flops == 1e6 + WRITES || c.sgemm_large_flops == 2e6 + WRITES);
  assert_int_equal(files_in_dir(), 1);
}

/* Two `rlx calibrate --force --quick` processes measuring into one cache at once. */
static void test_two_processes_calibrate(void **state) {
  unlink(path);
  /* this process' environment (sanitizer options included) with the cache home replaced */
  char env_xdg[300], *envp[512];
  snprintf(env_xdg, sizeof env_xdg, "XDG_CACHE_HOME=%s/xdg", dir);
  size_t ne = 0;
  envp[ne++] = env_xdg;
  envp[ne++] = "RLX_CALIBRATE_QUICK=1";
  for (char **e = environ; *e && ne + 1 < 512; e++)
    if (strncmp(*e, "XDG_CACHE_HOME=", 15) && strncmp(*e, "RLX_CALIBRATE_QUICK=", 20)) envp[ne++] = *e;
  envp[ne] = NULL;
  char *argv[] = {(char *)rlx_cli, "calibrate", "--device", "cpu", "--force", NULL};
  pid_t pids[2];
  for (int k = 0; k < 2; k++) assert_int_equal(posix_spawn(&pids[k], rlx_cli, NULL, NULL, argv, envp), 0);
  for (int k = 0; k < 2; k++) {
    int ws;
    assert_int_equal(waitpid(pids[k], &ws, 0), pids[k]);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  }
  char xdg_dir[300], p[700];
  snprintf(xdg_dir, sizeof xdg_dir, "%s/xdg/rlx", dir);
  OK(rlx_calibration_cache_path(RLX_DEVICE_CPU, xdg_dir, p, sizeof p));
  rlx_calibration c;
  OK(rlx_calibration_load(p, RLX_DEVICE_CPU, &c));
  DIR *d = opendir(xdg_dir);
  size_t n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  assert_int_equal(n, 1);
}

/* ---- cost model ---- */

/* A calibration with round figures: rates 1e9 FLOP/s or GB/s scaled per figure. */
static rlx_calibration round_cal(void) {
  rlx_calibration c = measured;
  c.sgemm_large_flops = 100e9, c.sgemm_small_flops = 10e9, c.roundtrip_overhead_ns = 10000, c.memory_bw_gbps = 20;
  c.attention_flops = 50e9, c.reduce_gbps = 5, c.dispatch_overhead_ns = 2000, c.transfer_gbps = 10;
  c.run_overhead_ns = 30000, c.transcendental_gbps = 4, c.strided_copy_gbps = 8, c.softmax_gbps = 3, c.pool_gbps = 1;
  c.conv_flops = 40e9, c.conv_depthwise_flops = 2e9, c.conv_pointwise_flops = 30e9;
  c.erf_gbps = 0.5, c.tanh_gbps = 2, c.resize_gbps = 0.25, c.conv_overhead_ns = 5000;
  c.stream_gbps = 40; /* a GPU's elementwise bandwidth: the CPU prices at memory_bw_gbps (20) */
  return c;
}

static rlx_value in_f32(rlx_graph *g, const char *name, int rank, const int64_t *dims) {
  rlx_type t = ttype(RLX_DTYPE_F32, rank, dims);
  rlx_value v;
  OK(rlx_graph_add_input(g, name, &t, &v));
  return v;
}

static rlx_value param_f32(rlx_graph *g, const char *name, int rank, const int64_t *dims) {
  rlx_type t = ttype(RLX_DTYPE_F32, rank, dims);
  rlx_value v;
  OK(rlx_graph_add_param(g, name, &t, &v));
  return v;
}

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-15)

static void test_cost_families(void **state) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  /* MatMul [64,128] @ [128,256]: 2*64*128*256 FLOPs (m k n = 2^21 >= 32768: the large rate) */
  rlx_value x = in_f32(g, "x", 2, (int64_t[]){64, 128}), w = param_f32(g, "w", 2, (int64_t[]){128, 256}), mm;
  OK(rlx_graph_add1(g, RLX_OP_MATMUL, "mm", 2, (rlx_value[]){x, w}, 0, NULL, &mm));
  /* Relu on [64,256]: 2 * 64*256*4 bytes at memory_bw; Tanh: the same at transcendental_gbps */
  rlx_value r0, r;
  OK(rlx_graph_add1(g, RLX_OP_RELU, "relu", 1, &mm, 0, NULL, &r0));
  OK(rlx_graph_add1(g, RLX_OP_TANH, "tanh", 1, &r0, 0, NULL, &r));
  /* depthwise Conv x[1,8,16,16] w[8,1,3,3] group 8 pads 1: 2*8*16*16*9 FLOPs */
  rlx_value cx = in_f32(g, "cx", 4, (int64_t[]){1, 8, 16, 16}), cw = param_f32(g, "cw", 4, (int64_t[]){8, 1, 3, 3}), cv;
  int64_t pads[4] = {1, 1, 1, 1};
  rlx_attr ca[] = {RLX_ATTR_IS("pads", 4, pads), RLX_ATTR_I("group", 8)};
  OK(rlx_graph_add1(g, RLX_OP_CONV, "dw", 2, (rlx_value[]){cx, cw}, 2, ca, &cv));
  /* Softmax over [64,256] (softmax rate), Reshape (a view: 0 bytes) */
  rlx_value sm, rs;
  OK(rlx_graph_add1(g, RLX_OP_SOFTMAX, "sm", 1, &r, 0, NULL, &sm));
  int64_t shape[] = {256, 64};
  rlx_attr ra[] = {RLX_ATTR_IS("shape", 2, shape)};
  OK(rlx_graph_add1(g, RLX_OP_RESHAPE, "rs", 1, &sm, 1, ra, &rs));
  OK(rlx_graph_set_outputs(g, 2, (rlx_value[]){rs, cv}));
  rlx_calibration cal = round_cal();
  rlx_cost_estimate e;
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  double mm_flops = 2.0 * 64 * 128 * 256, mm_bytes = 4.0 * (64 * 128 + 128 * 256 + 64 * 256);
  NEAR(e.family_flops[RLX_COST_MATMUL], mm_flops);
  NEAR(e.family_bytes[RLX_COST_MATMUL], mm_bytes);
  NEAR(e.family_s[RLX_COST_MATMUL], fmax(mm_flops / 100e9, mm_bytes / 20e9));
  double dw_flops = 2.0 * 8 * 16 * 16 * 9, dw_bytes = 4.0 * (8 * 16 * 16 * 2 + 8 * 9);
  NEAR(e.family_flops[RLX_COST_CONV], dw_flops);
  NEAR(e.family_s[RLX_COST_CONV], fmax(dw_flops / 2e9, dw_bytes / 20e9) + 5e-6);
  NEAR(e.family_s[RLX_COST_ELEMENTWISE], 2.0 * 64 * 256 * 4 / 20e9 + 2.0 * 64 * 256 * 4 / 2e9); /* Relu, Tanh */
  NEAR(e.family_s[RLX_COST_NORM_REDUCE], 2.0 * 64 * 256 * 4 / 3e9);
  NEAR(e.family_bytes[RLX_COST_MOVEMENT], 0);
  double transfer = 4.0 * (64 * 128 + 8 * 16 * 16 + 256 * 64 + 8 * 16 * 16);
  NEAR(e.family_s[RLX_COST_TRANSFER], transfer / 10e9);
  assert_int_equal(e.nodes, 6);
  NEAR(e.family_s[RLX_COST_OVERHEAD], 30000e-9 + 6 * 2000e-9);
  double sum = 0;
  for (int f = 0; f < RLX_COST_FAMILY_COUNT; f++) sum += e.family_s[f];
  NEAR(e.total_s, sum);
  assert_string_equal(rlx_cost_family_name(RLX_COST_NORM_REDUCE), "norm/reduce");
  assert_string_equal(rlx_cost_family_name(RLX_COST_FAMILY_COUNT), "invalid");
  /* the large matmul ignores the small rate; a small one ([8,64] @ [64,32], m k n = 16384 < 32768)
   * takes it */
  cal.sgemm_small_flops = 1e6;
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.family_s[RLX_COST_MATMUL], fmax(mm_flops / 100e9, mm_bytes / 20e9));
  rlx_graph *g2;
  OK(rlx_graph_create(&g2));
  rlx_value a = in_f32(g2, "a", 2, (int64_t[]){8, 64}), b = param_f32(g2, "b", 2, (int64_t[]){64, 32}), ab;
  OK(rlx_graph_add1(g2, RLX_OP_MATMUL, "small", 2, (rlx_value[]){a, b}, 0, NULL, &ab));
  OK(rlx_graph_set_outputs(g2, 1, &ab));
  OK(rlx_cost_predict(g2, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.family_s[RLX_COST_MATMUL], 2.0 * 8 * 64 * 32 / 1e6);
  rlx_graph_free(g2);
  cal.memory_bw_gbps = 0;
  FAILS(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e), INVALID_ARGUMENT, "memory_bw_gbps");
  rlx_graph_free(g);
}

/* A graph of one node op(x[, w]) with float32 x (and a param w), attributes a. */
static rlx_graph *one_node(rlx_op op, int rx, const int64_t *dx, int rw, const int64_t *dw, size_t na, const rlx_attr *a) {
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value in[2] = {in_f32(g, "x", rx, dx)}, y;
  if (rw) in[1] = param_f32(g, "w", rw, dw);
  OK(rlx_graph_add1(g, op, "op", rw ? 2 : 1, in, na, a, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  return g;
}

/* The seconds family f gets for graph g on device d. */
static double family_s(rlx_graph *g, rlx_device d, rlx_cost_family f) {
  rlx_calibration cal = round_cal();
  rlx_cost_estimate e;
  OK(rlx_cost_predict(g, &cal, d, &e));
  rlx_graph_free(g);
  return e.family_s[f];
}

/* The FLOPs counted (not priced) for ops timed by their bytes whose work grows faster than their
 * operands: a FLOP per pooling tap, 2 per Resize tap, 2 per weight tap of every dy element of a
 * convolution gradient, a comparison per window tap of a max-pool gradient, 2/3 n^3 + 2 n^2 k per
 * dense solve; their seconds stay the bytes' (closed forms here). */
static void test_cost_work_flops(void **state) {
  rlx_calibration cal = round_cal();
  rlx_cost_estimate e;
  int64_t k3[2] = {3, 3}, k2[2] = {2, 2}, in_shape[4] = {1, 2, 8, 8}, sizes[4] = {1, 1, 4, 4};
  rlx_attr pool[] = {RLX_ATTR_S("kind", "max"), RLX_ATTR_IS("kernel_shape", 2, k3)};
  rlx_graph *g = one_node(RLX_OP_POOL, 4, (int64_t[]){1, 2, 8, 8}, 0, NULL, 2, pool); /* y [1,2,6,6] */
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.flops, 72 * 9);
  NEAR(e.family_s[RLX_COST_CONV], 4.0 * 72 * 9 / 1e9);
  rlx_graph_free(g);
  rlx_attr rs[] = {RLX_ATTR_IS("sizes", 4, sizes)};
  g = one_node(RLX_OP_RESIZE, 4, (int64_t[]){1, 1, 2, 2}, 0, NULL, 1, rs); /* nearest: [1,1,4,2] then [1,1,4,4] */
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.flops, 2.0 * (8 + 16));
  rlx_graph_free(g);
  rlx_attr ci[] = {RLX_ATTR_IS("input_shape", 4, in_shape)};
  g = one_node(RLX_OP_CONV2D_BACKWARD_INPUT, 4, (int64_t[]){1, 3, 6, 6}, 4, (int64_t[]){3, 2, 3, 3}, 1, ci);
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.flops, 2.0 * 108 * 18);
  rlx_graph_free(g);
  rlx_attr mp[] = {RLX_ATTR_IS("kernel_shape", 2, k2)};
  g = one_node(RLX_OP_MAXPOOL2D_BACKWARD, 4, (int64_t[]){1, 1, 4, 4}, 4, (int64_t[]){1, 1, 3, 3}, 1, mp);
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.flops, 9 * 4);
  double bytes = 4.0 * (16 + 9 + 16);
  NEAR(e.family_s[RLX_COST_OTHER], bytes / 20e9);
  rlx_graph_free(g);
  g = one_node(RLX_OP_DENSE_SOLVE, 2, (int64_t[]){4, 4}, 2, (int64_t[]){4, 2}, 0, NULL);
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.flops, 2.0 / 3 * 64 + 2 * 16 * 2);
  rlx_graph_free(g);
}

/* Convolutions are priced by the path the lowering takes on the device, each with its fixed cost
 * (conv_overhead_ns, 5 us here); an activation rlx's CPU kernels fuse is free there. */
static void test_cost_conv_paths(void **state) {
  int64_t pads1[4] = {1, 1, 1, 1}, s2[2] = {2, 2};
  rlx_attr pad[] = {RLX_ATTR_IS("pads", 4, pads1)}, stride[] = {RLX_ATTR_IS("strides", 2, s2)};
  /* dense over 3 input channels: rlx's direct kernel on the CPU (conv_depthwise_flops), MLX's
   * convolution on a GPU (conv_flops) */
  int64_t x3[4] = {1, 3, 64, 64}, w3[4] = {16, 3, 3, 3};
  double f3 = 2.0 * 16 * 64 * 64 * 3 * 9, b3 = 4.0 * (3 * 64 * 64 + 16 * 3 * 9 + 16 * 64 * 64);
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x3, 4, w3, 1, pad), RLX_DEVICE_CPU, RLX_COST_CONV), fmax(f3 / 2e9, b3 / 20e9) + 5e-6);
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x3, 4, w3, 1, pad), RLX_DEVICE_GPU, RLX_COST_CONV), fmax(f3 / 40e9, b3 / 40e9) + 5e-6);
  /* 1x1 without stride: the GEMM kernel on the input itself (conv_pointwise_flops); with stride 2
   * it takes im2col tiles (conv_flops) */
  int64_t x1[4] = {1, 64, 32, 32}, w1[4] = {128, 64, 1, 1};
  double f1 = 2.0 * 128 * 32 * 32 * 64, f1s = f1 / 4;
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x1, 4, w1, 0, NULL), RLX_DEVICE_CPU, RLX_COST_CONV), f1 / 30e9 + 5e-6);
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x1, 4, w1, 1, stride), RLX_DEVICE_CPU, RLX_COST_CONV), f1s / 40e9 + 5e-6);
  /* an activation: fused on the CPU when the kernels have it (Relu), else its passes (Gelu: 4 and
   * an erf over y [1,128,32,32]); after MLX's convolution on a GPU */
  double pass = 2.0 * 128 * 32 * 32 * 4;
  rlx_attr relu[] = {RLX_ATTR_S("activation", "Relu")}, gelu[] = {RLX_ATTR_S("activation", "Gelu")};
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x1, 4, w1, 1, relu), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), 0);
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x1, 4, w1, 1, relu), RLX_DEVICE_GPU, RLX_COST_ELEMENTWISE), pass / 40e9);
  NEAR(family_s(one_node(RLX_OP_CONV, 4, x1, 4, w1, 1, gelu), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), 4 * pass / 20e9 + pass / 0.5e9);
  /* ConvTranspose with stride = kernel on the CPU: one matmul of x[64, 1024] by w^T */
  int64_t wt[4] = {64, 32, 2, 2};
  NEAR(family_s(one_node(RLX_OP_CONV_TRANSPOSE, 4, x1, 4, wt, 1, stride), RLX_DEVICE_CPU, RLX_COST_CONV),
       2.0 * 64 * 32 * 32 * 32 * 4 / 30e9 + 5e-6);
}

/* Unary ops cost their passes; a fused matmul's bias and activation are elementwise; Resize
 * costs its per-axis passes. */
static void test_cost_passes(void **state) {
  int64_t d[2] = {64, 256};
  double pass = 2.0 * 64 * 256 * 4;
  NEAR(family_s(one_node(RLX_OP_GELU, 2, d, 0, NULL, 0, NULL), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), 4 * pass / 20e9 + pass / 0.5e9);
  NEAR(family_s(one_node(RLX_OP_GELU_APPROX, 2, d, 0, NULL, 0, NULL), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), 7 * pass / 20e9 + pass / 2e9);
  NEAR(family_s(one_node(RLX_OP_HARD_SWISH, 2, d, 0, NULL, 0, NULL), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), 5 * pass / 20e9);
  NEAR(family_s(one_node(RLX_OP_SILU, 2, d, 0, NULL, 0, NULL), RLX_DEVICE_CPU, RLX_COST_ELEMENTWISE), pass / 20e9 + pass / 4e9);
  /* FusedMatMulBiasAct x[64,128] @ w[128,256] + b, Gelu */
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value x = in_f32(g, "x", 2, (int64_t[]){64, 128}), w = param_f32(g, "w", 2, (int64_t[]){128, 256});
  rlx_value b = param_f32(g, "b", 1, (int64_t[]){256}), y;
  rlx_attr act = RLX_ATTR_S("activation", "Gelu");
  OK(rlx_graph_add1(g, RLX_OP_FUSED_MATMUL_BIAS_ACT, "fc", 3, (rlx_value[]){x, w, b}, 1, &act, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_calibration cal = round_cal();
  rlx_cost_estimate e;
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  NEAR(e.family_s[RLX_COST_ELEMENTWISE], pass / 20e9 + 4 * pass / 20e9 + pass / 0.5e9);
  assert_int_equal(e.family_nodes[RLX_COST_MATMUL], 1);
  assert_int_equal(e.family_nodes[RLX_COST_ELEMENTWISE], 0);
  rlx_graph_free(g);
  /* Resize nearest 2x of [1,8,16,16]: passes write [1,8,32,16] and [1,8,32,32] */
  int64_t xr[4] = {1, 8, 16, 16}, sizes[4] = {1, 8, 32, 32};
  rlx_attr ra[] = {RLX_ATTR_IS("sizes", 4, sizes), RLX_ATTR_S("mode", "nearest")};
  NEAR(family_s(one_node(RLX_OP_RESIZE, 4, xr, 0, NULL, 2, ra), RLX_DEVICE_CPU, RLX_COST_CONV), 4.0 * 8 * (32 * 16 + 32 * 32) / 0.25e9);
}

/* If computes both branches; Scan runs its body `length` times; symbolic dims are refused. */
static void test_cost_control(void **state) {
  rlx_graph *body;
  OK(rlx_graph_create(&body));
  rlx_value c = in_f32(body, "c", 1, (int64_t[]){1000}), xt = in_f32(body, "xt", 1, (int64_t[]){1000}), s;
  OK(rlx_graph_add1(body, RLX_OP_ADD, "acc", 2, (rlx_value[]){c, xt}, 0, NULL, &s));
  OK(rlx_graph_set_outputs(body, 1, &s));
  rlx_graph *g;
  OK(rlx_graph_create(&g));
  rlx_value init = in_f32(g, "init", 1, (int64_t[]){1000}), xs = in_f32(g, "xs", 2, (int64_t[]){7, 1000}), fin;
  rlx_attr sa[] = {RLX_ATTR_G("body", body), RLX_ATTR_I("length", 7), RLX_ATTR_I("num_xs", 1)};
  size_t n_out;
  OK(rlx_graph_add(g, RLX_OP_SCAN, "scan", 2, (rlx_value[]){init, xs}, 3, sa, 1, &fin, &n_out));
  OK(rlx_graph_set_outputs(g, 1, &fin));
  rlx_calibration cal = round_cal();
  rlx_cost_estimate e;
  OK(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e));
  assert_int_equal(e.nodes, 7);
  NEAR(e.family_bytes[RLX_COST_ELEMENTWISE], 7 * 3 * 4000.0);
  rlx_graph_free(g);

  OK(rlx_graph_create(&g));
  rlx_type sym = {.dtype = RLX_DTYPE_F32, .rank = 2, .dims = {RLX_DIM_SYMBOL(0), 4}};
  rlx_value v, y;
  OK(rlx_graph_add_input(g, "batch", &sym, &v));
  OK(rlx_graph_add1(g, RLX_OP_EXP, "e", 1, &v, 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  FAILS(rlx_cost_predict(g, &cal, RLX_DEVICE_CPU, &e), INVALID_ARGUMENT, "symbolic");
  rlx_device dev = RLX_DEVICE_GPU;
  rlx_graph_free(g);

  /* the pick: the CPU without a GPU, with an infinite GPU estimate */
  OK(rlx_graph_create(&g));
  v = in_f32(g, "x", 1, (int64_t[]){16});
  OK(rlx_graph_add1(g, RLX_OP_EXP, "e", 1, &v, 0, NULL, &y));
  OK(rlx_graph_set_outputs(g, 1, &y));
  rlx_cost_estimate cpu, gpu;
  rlx_calibrate_options o = quick_opts();
  OK(rlx_cost_pick_device(g, &o, &dev, &cpu, &gpu));
  if (!rlx_gpu_available()) {
    assert_int_equal(dev, RLX_DEVICE_CPU);
    assert_true(isinf(gpu.total_s));
  } else {
    assert_int_equal(dev, gpu.total_s < cpu.total_s ? RLX_DEVICE_GPU : RLX_DEVICE_CPU);
  }
  assert_true(cpu.total_s > 0 && isfinite(cpu.total_s));
  rlx_graph_free(g);
}

int main(int argc, char **argv) {
  rlx_cli = argc > 1 ? argv[1] : "rlx";
  snprintf(dir, sizeof dir, "/tmp/rlx-test-calibrate-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  OK(rlx_calibration_cache_path(RLX_DEVICE_CPU, dir, path, sizeof path));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_measure_plausible), cmocka_unit_test(test_save_load),
      cmocka_unit_test(test_corrupt_cache),     cmocka_unit_test(test_concurrent_writers),
      cmocka_unit_test(test_two_processes_calibrate), cmocka_unit_test(test_cost_families),
      cmocka_unit_test(test_cost_control),      cmocka_unit_test(test_cost_conv_paths),
      cmocka_unit_test(test_cost_passes),       cmocka_unit_test(test_cost_work_flops),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) rc = rc ? rc : 1;
  return rc;
}
