/* cli.c: argument parsing, progress lines and model set-up shared by the rlx subcommands. */
#include "cli.h"
#include "kernel_cache.h"

#include "cli_calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

static rlx_status *parse_count(const char *flag, const char *val, int lo, int *out) {
  char *end;
  long v = strtol(val, &end, 10);
  if (*end || end == val || v < lo || v > 1000000)
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "%s needs a count >= %d, got '%s'", flag, lo, val);
  *out = (int)v;
  return NULL;
}

static bool is_flag(const char *arg, const char *const *flags) {
  for (size_t i = 0; flags && flags[i]; i++)
    if (!strcmp(arg, flags[i])) return true;
  return false;
}

rlx_status *cli_parse(int argc, char **argv, const char *const *flags, cli_args *a) {
  for (int i = 0; i < argc; i++) {
    char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL, *v2;
    if (arg[0] != '-') {
      if (a->model) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "unexpected argument '%s'", arg);
      a->model = arg;
      continue;
    }
    if (is_flag(arg, flags)) {
      a->graph |= !strcmp(arg, "--graph");
      a->cost |= !strcmp(arg, "--cost");
      a->json |= !strcmp(arg, "--json");
      a->quiet |= !strcmp(arg, "--quiet");
      continue;
    }
    if (!val) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "%s needs a value", arg);
    if (!strcmp(arg, "--input")) {
      if (a->n_in == RLX_CLI_MAX_INPUTS) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "too many --input");
      RLX_RETURN_IF_ERROR(split_kv(val, arg, &v2));
      a->in_names[a->n_in] = val;
      a->in_files[a->n_in++] = v2;
    } else if (!strcmp(arg, "--mode")) {
      RLX_RETURN_IF_ERROR(rlx_mode_from_name(val, &a->mode));
    } else if (!strcmp(arg, "--device")) {
      if (!(a->auto_device = !strcmp(val, "auto"))) RLX_RETURN_IF_ERROR(rlx_device_from_name(val, &a->device));
    } else if (!strcmp(arg, "--precision")) {
      RLX_RETURN_IF_ERROR(rlx_precision_from_name(val, &a->precision));
    } else if (!strcmp(arg, "--optimize")) {
      RLX_RETURN_IF_ERROR(rlx_onnx_options_set_optimize(a->opts, val));
    } else if (!strcmp(arg, "--output-dir")) {
      a->out_dir = val;
    } else if (!strcmp(arg, "--repeat")) {
      RLX_RETURN_IF_ERROR(parse_count(arg, val, 1, &a->repeat));
    } else if (!strcmp(arg, "--warmup")) {
      RLX_RETURN_IF_ERROR(parse_count(arg, val, 0, &a->warmup));
    } else if (!strcmp(arg, "--runs")) {
      RLX_RETURN_IF_ERROR(parse_count(arg, val, 1, &a->runs));
    } else if (!strcmp(arg, "--dim")) {
      RLX_RETURN_IF_ERROR(split_kv(val, arg, &v2));
      char *end;
      long long size = strtoll(v2, &end, 10);
      if (*end) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "--dim %s=%s: not a number", val, v2);
      RLX_RETURN_IF_ERROR(rlx_onnx_options_set_dim(a->opts, val, size));
      a->dims_given = true;
    } else if (!strcmp(arg, "--shape")) {
      RLX_RETURN_IF_ERROR(split_kv(val, arg, &v2));
      int32_t rank;
      int64_t dims[RLX_MAX_RANK];
      RLX_RETURN_IF_ERROR(parse_dims(v2, &rank, dims));
      RLX_RETURN_IF_ERROR(rlx_onnx_options_set_shape(a->opts, val, rank, dims));
      a->dims_given = true;
    } else {
      return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "unknown option '%s'", arg);
    }
    i++;
  }
  if (!a->model) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "no model given");
  return NULL;
}

int cli_fail(rlx_status *st) {
  fprintf(stderr, "rlx: error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress(const cli_args *a, const char *fmt, ...) {
  if (a->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("rlx: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
  va_end(ap);
}

rlx_status *cli_session_open(cli_args *a, cli_session *s) {
  memset(s, 0, sizeof *s);
  rlx_status *st = NULL;
  for (size_t i = 0; !st && i < a->n_in; i++) {
    st = rlx_npy_load(a->in_files[i], &s->inputs[i]);
    if (!st) st = rlx_onnx_options_set_input_value(a->opts, a->in_names[i], s->inputs[i]);
  }
  struct stat sb;
  double mib = stat(a->model, &sb) ? 0 : (double)sb.st_size / (1 << 20);
  if (!st) cli_progress(a, "importing %s (%.1f MiB)", a->model, mib);
  double t0 = cli_now_s();
  if (!st) st = rlx_onnx_import(a->model, a->opts, &s->model);
  s->import_s = cli_now_s() - t0;
  if (!st) {
    s->g = rlx_onnx_model_graph(s->model);
    cli_progress(a, "imported in %.2f s: %zu nodes, %zu params", s->import_s, rlx_graph_num_nodes(s->g),
                 rlx_onnx_model_num_params(s->model));
    if (a->auto_device) st = rlx_cli_pick_device(s->g, a->precision, &a->device);
    if (!st) st = rlx_executable_create(s->g, a->device, a->mode, &s->ex);
  }
  if (!st) st = rlx_executable_set_precision(s->ex, a->precision);
  if (!st) st = rlx_onnx_model_set_params(s->model, s->ex);
  return st;
}

void cli_session_free(cli_session *s) {
  for (size_t i = 0; i < RLX_CLI_MAX_INPUTS; i++) rlx_tensor_free(s->inputs[i]);
  rlx_executable_free(s->ex);
  rlx_onnx_model_free(s->model);
  memset(s, 0, sizeof *s);
}

rlx_status *cli_first_run(const cli_args *a, cli_session *s, size_t n_in, const char *const *names, rlx_tensor *const *values,
                          size_t n_out, rlx_tensor **outs, double *out_s) {
  bool compiled = rlx_executable_mode(s->ex) == RLX_MODE_COMPILED;
  char cache[4096];
  cli_jit_watch *w = NULL;
  if (compiled && a->device == RLX_DEVICE_CPU) {
    RLX_RETURN_IF_ERROR(cli_kernel_cache_use(cache, sizeof cache));
    w = cli_jit_watch_start(a, cache);
  }
  if (compiled) cli_progress(a, "first run: tracing and compiling (compiled mode; MLX compiles fused kernels once)");
  double t0 = cli_now_s();
  rlx_status *st = rlx_executable_run(s->ex, n_in, names, values, n_out, outs);
  *out_s = cli_now_s() - t0;
  cli_jit_watch_stop(w);
  if (!st && (compiled || *out_s > 1.0)) cli_progress(a, "first run took %.2f s", *out_s);
  return st;
}
