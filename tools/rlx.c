/* rlx: command-line front end. Parses arguments and calls the library.
 *
 *   rlx run MODEL.onnx [--input NAME=FILE.npy]... [--mode lazy|eager|compiled] [--device cpu|gpu|auto]
 *           [--precision fp32|tf32]
 *           [--output-dir DIR] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]... [--repeat N]
 *           [--optimize none|basic|all|PASS,...]
 *   rlx info MODEL.onnx [--graph] [--cost] [--dim NAME=SIZE]... [--shape NAME=D0,...]... [--optimize ...]
 *   rlx calibrate [--device cpu|gpu|all] [--force] [--json] (tools/cli_calibrate.c)
 *   rlx version
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "launch.h"
#include "cli_calibrate.h"
#include "rlx/rlx.h"

#define RLX_CLI_TRY(expr)            \
  do {                               \
    rlx_status *cli_st_ = (expr);    \
    if (cli_st_) return cli_st_;     \
  } while (0)

/* Output names may hold '/' or ':'; file names get '_' instead. */
static void file_safe_name(const char *s, char *buf, size_t cap) {
  size_t i = 0;
  for (; s[i] && i + 1 < cap; i++) buf[i] = (s[i] == '/' || s[i] == ':' || s[i] == ' ') ? '_' : s[i];
  buf[i] = '\0';
}

static int fail(rlx_status *st) {
  fprintf(stderr, "rlx: error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: rlx run MODEL.onnx [--input NAME=FILE.npy]... [--mode lazy|eager|compiled] [--device cpu|gpu|auto]\n"
          "               [--precision fp32|tf32]\n"
          "               [--output-dir DIR] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]... [--repeat N]\n"
          "               [--optimize none|basic|all|PASS,...]\n"
          "       rlx info MODEL.onnx [--graph] [--cost] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]... [--optimize ...]\n"
          "       rlx calibrate [--device cpu|gpu|all] [--force] [--json]\n"
          "       rlx version\n");
  return 2;
}

typedef struct args {
  const char *model, *out_dir;
  const char *in_names[64], *in_files[64];
  size_t n_in;
  rlx_mode mode;
  rlx_device device;
  rlx_precision precision;
  int repeat;
  bool graph, cost, auto_device;
  rlx_onnx_options *opts;
} args;

/* Splits "NAME=VALUE" at the last '='. */
static rlx_status *split_kv(char *s, const char *flag, char **val) {
  char *eq = strrchr(s, '=');
  if (!eq || eq == s || !eq[1]) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "%s expects NAME=VALUE, got '%s'", flag, s);
  *eq = '\0';
  *val = eq + 1;
  return NULL;
}

static rlx_status *parse_dims(const char *s, int32_t *rank, int64_t *dims) {
  *rank = 0;
  while (*s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno || v < 0 || *rank == RLX_MAX_RANK) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "bad dims '%s'", s);
    dims[(*rank)++] = v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "bad dims '%s'", s);
  }
  return NULL;
}

static rlx_status *parse(int argc, char **argv, args *a) {
  for (int i = 0; i < argc; i++) {
    char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL, *v2;
    bool takes = strcmp(arg, "--graph") && strcmp(arg, "--cost");
    if (arg[0] != '-') {
      if (a->model) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "unexpected argument '%s'", arg);
      a->model = arg;
      continue;
    }
    if (takes && !val) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "%s needs a value", arg);
    if (!strcmp(arg, "--graph")) {
      a->graph = true;
    } else if (!strcmp(arg, "--cost")) {
      a->cost = true;
    } else if (!strcmp(arg, "--input")) {
      if (a->n_in == 64) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "too many --input");
      RLX_CLI_TRY(split_kv(val, arg, &v2));
      a->in_names[a->n_in] = val;
      a->in_files[a->n_in++] = v2;
    } else if (!strcmp(arg, "--mode")) {
      RLX_CLI_TRY(rlx_mode_from_name(val, &a->mode));
    } else if (!strcmp(arg, "--precision")) {
      RLX_CLI_TRY(rlx_precision_from_name(val, &a->precision));
    } else if (!strcmp(arg, "--device")) {
      if (!(a->auto_device = !strcmp(val, "auto"))) RLX_CLI_TRY(rlx_device_from_name(val, &a->device));
    } else if (!strcmp(arg, "--optimize")) {
      RLX_CLI_TRY(rlx_onnx_options_set_optimize(a->opts, val));
    } else if (!strcmp(arg, "--output-dir")) {
      a->out_dir = val;
    } else if (!strcmp(arg, "--repeat")) {
      a->repeat = atoi(val);
      if (a->repeat < 1) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "--repeat needs a positive count");
    } else if (!strcmp(arg, "--dim")) {
      RLX_CLI_TRY(split_kv(val, arg, &v2));
      char *end;
      long long size = strtoll(v2, &end, 10);
      if (*end) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "--dim %s=%s: not a number", val, v2);
      RLX_CLI_TRY(rlx_onnx_options_set_dim(a->opts, val, size));
    } else if (!strcmp(arg, "--shape")) {
      RLX_CLI_TRY(split_kv(val, arg, &v2));
      int32_t rank;
      int64_t dims[RLX_MAX_RANK];
      RLX_CLI_TRY(parse_dims(v2, &rank, dims));
      RLX_CLI_TRY(rlx_onnx_options_set_shape(a->opts, val, rank, dims));
    } else {
      return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "unknown option '%s'", arg);
    }
    if (takes) i++;
  }
  if (!a->model) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "no model given");
  return NULL;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmd_run(args *a) {
  rlx_tensor *inputs[64] = {0};
  rlx_onnx_model *m = NULL;
  rlx_executable *ex = NULL;
  rlx_tensor **outs = NULL;
  rlx_status *st = NULL;
  size_t n_out = 0;
  /* Input files fix the input shapes, and their values serve where the importer needs an input
   * known at import time (a Reshape shape or a Loop trip count fed as an input): the graph is
   * specialized to this run's inputs. */
  for (size_t i = 0; !st && i < a->n_in; i++) {
    st = rlx_npy_load(a->in_files[i], &inputs[i]);
    if (!st) st = rlx_onnx_options_set_input_value(a->opts, a->in_names[i], inputs[i]);
  }
  double t_imp = now_s();
  if (!st) st = rlx_onnx_import(a->model, a->opts, &m);
  t_imp = now_s() - t_imp;
  const rlx_graph *g = m ? rlx_onnx_model_graph(m) : NULL;
  if (!st && a->auto_device) st = rlx_cli_pick_device(g, &a->device);
  if (!st) st = rlx_executable_create(g, a->device, a->mode, &ex);
  if (!st) st = rlx_executable_set_precision(ex, a->precision);
  if (!st) st = rlx_onnx_model_set_params(m, ex);
  if (!st) {
    n_out = rlx_graph_num_outputs(g);
    if (!(outs = calloc(n_out, sizeof *outs))) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  double first = 0, total = 0;
  for (int r = 0; !st && r < a->repeat + 1; r++) {
    for (size_t i = 0; i < n_out; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    double t0 = now_s();
    st = rlx_executable_run(ex, a->n_in, a->in_names, inputs, n_out, outs);
    double dt = now_s() - t0;
    if (r == 0) first = dt;
    else total += dt;
  }
  if (!st && a->out_dir && mkdir(a->out_dir, 0777) && errno != EEXIST)
    st = rlx_status_make(RLX_STATUS_UNAVAILABLE, "cannot create '%s': %s", a->out_dir, strerror(errno));
  for (size_t i = 0; !st && i < n_out; i++) {
    char summary[256], path[4096];
    rlx_tensor_summary(outs[i], summary, sizeof summary);
    printf("%s: %s\n", rlx_graph_output_name(g, i), summary);
    if (a->out_dir) {
      char safe[256];
      file_safe_name(rlx_graph_output_name(g, i), safe, sizeof safe);
      snprintf(path, sizeof path, "%s/%s.npy", a->out_dir, safe);
      st = rlx_npy_save(path, outs[i]);
    }
  }
  if (!st)
    printf("mode %s, device %s: import %.3f ms, first run %.3f ms, then %.3f ms per run (mean of %d)\n",
           rlx_mode_name(rlx_executable_mode(ex)), rlx_device_name(a->device), t_imp * 1e3, first * 1e3, total / a->repeat * 1e3,
           a->repeat);
  for (size_t i = 0; outs && i < n_out; i++) rlx_tensor_free(outs[i]);
  free(outs);
  for (size_t i = 0; i < a->n_in; i++) rlx_tensor_free(inputs[i]);
  rlx_executable_free(ex);
  rlx_onnx_model_free(m);
  return st ? fail(st) : 0;
}

static int cmd_info(args *a) {
  rlx_status *st = rlx_onnx_describe(a->model, stdout);
  if (!st && (a->graph || a->cost)) {
    rlx_onnx_model *m = NULL;
    st = rlx_onnx_import(a->model, a->opts, &m);
    if (!st && a->graph) rlx_graph_print(rlx_onnx_model_graph(m), stdout);
    if (!st && a->cost) st = rlx_cli_print_cost(rlx_onnx_model_graph(m));
    rlx_onnx_model_free(m);
  }
  return st ? fail(st) : 0;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *cmd = argv[1];
  if (!strcmp(cmd, "version")) {
    char gpu[128] = "";
    if (rlx_gpu_available()) rlx_device_describe(RLX_DEVICE_GPU, gpu, sizeof gpu);
    printf("rlx %s (MLX %s, GPU %s%s)\n", RLX_VERSION, rlx_mlx_version(), rlx_gpu_available() ? "available: " : "not available", gpu);
    return 0;
  }
  if (!strcmp(cmd, "launch")) return rlx_cli_launch(argc - 2, argv + 2);
  if (!strcmp(cmd, "calibrate")) return rlx_cli_calibrate(argc - 2, argv + 2);
  if (strcmp(cmd, "run") && strcmp(cmd, "info")) return usage();
  args a = {.mode = RLX_MODE_DEFAULT, .device = RLX_DEVICE_CPU, .repeat = 1};
  rlx_status *st = rlx_onnx_options_create(&a.opts);
  if (!st) st = parse(argc - 2, argv + 2, &a);
  int rc = st ? (fail(st), 2) : !strcmp(cmd, "run") ? cmd_run(&a) : cmd_info(&a);
  rlx_onnx_options_free(a.opts);
  return rc;
}
