/* run.c: `rlx run` (import, run, print and write the outputs, time the runs) and `rlx info`
 * (describe a model, and the output types it gets after --dim/--shape). */
#include "run.h"

#include "cli_calibrate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An output name as a file name: '/', ':', ' ' and '\\' become '_'. */
static void safe_name(const char *name, char *buf, size_t cap) {
  size_t n = 0;
  for (; name[n] && n + 1 < cap; n++) buf[n] = strchr("/: \\", name[n]) ? '_' : name[n];
  buf[n] = '\0';
}

/* The file output i is written to: DIR/<safe name>.npy ("encoder/out:0" -> "encoder_out_0.npy");
 * when an earlier output maps to the same file, "~<output index>" is appended ("a_b~3.npy"). */
static void output_path(const rlx_graph *g, size_t i, const char *dir, char *path, size_t cap) {
  char safe[256], other[256];
  safe_name(rlx_graph_output_name(g, i), safe, sizeof safe);
  bool clash = false;
  for (size_t j = 0; j < i && !clash; j++) {
    safe_name(rlx_graph_output_name(g, j), other, sizeof other);
    clash = strcmp(safe, other) == 0;
  }
  if (clash) snprintf(path, cap, "%s/%s~%zu.npy", dir, safe, i);
  else snprintf(path, cap, "%s/%s.npy", dir, safe);
}

int rlx_cli_run(cli_args *a) {
  cli_session s;
  rlx_tensor **outs = NULL;
  size_t n_out = 0;
  rlx_status *st = cli_session_open(a, &s);
  if (!st) {
    n_out = rlx_graph_num_outputs(s.g);
    if (!(outs = calloc(n_out, sizeof *outs))) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  double first = 0, total = 0;
  if (!st) st = cli_first_run(a, &s, a->n_in, a->in_names, s.inputs, n_out, outs, &first);
  for (int r = 0; !st && r < a->repeat; r++) {
    for (size_t i = 0; i < n_out; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    double t0 = cli_now_s();
    st = rlx_executable_run(s.ex, a->n_in, a->in_names, s.inputs, n_out, outs);
    total += cli_now_s() - t0;
  }
  if (!st && a->out_dir && mkdir(a->out_dir, 0777) && errno != EEXIST)
    st = rlx_status_make(RLX_STATUS_UNAVAILABLE, "cannot create '%s': %s", a->out_dir, strerror(errno));
  for (size_t i = 0; !st && i < n_out; i++) {
    char summary[256], path[4096];
    rlx_tensor_summary(outs[i], summary, sizeof summary);
    if (a->out_dir) {
      output_path(s.g, i, a->out_dir, path, sizeof path);
      st = rlx_npy_save(path, outs[i]);
      if (!st) printf("%s: %s -> %s\n", rlx_graph_output_name(s.g, i), summary, path);
    } else {
      printf("%s: %s\n", rlx_graph_output_name(s.g, i), summary);
    }
  }
  if (!st)
    printf("mode %s, device %s: import %.3f ms, first run %.3f ms, then %.3f ms per run (mean of %d)\n",
           rlx_mode_name(rlx_executable_mode(s.ex)), rlx_device_name(a->device), s.import_s * 1e3, first * 1e3,
           total / a->repeat * 1e3, a->repeat);
  for (size_t i = 0; outs && i < n_out; i++) rlx_tensor_free(outs[i]);
  free(outs);
  cli_session_free(&s);
  return st ? cli_fail(st) : 0;
}

static bool is_gguf(const char *path) {
  size_t n = strlen(path);
  return n >= 5 && !strcmp(path + n - 5, ".gguf");
}

int rlx_cli_info(cli_args *a) {
  if (is_gguf(a->model)) { /* metadata and tensors of a GGUF file */
    rlx_status *st = rlx_gguf_describe(a->model, stdout);
    return st ? cli_fail(st) : 0;
  }
  rlx_status *st = rlx_onnx_describe(a->model, stdout);
  if (st) return cli_fail(st);
  /* the output types rlx infers, at the sizes --dim/--shape fix */
  rlx_onnx_model *m = NULL;
  st = rlx_onnx_import(a->model, a->opts, &m);
  if (!st) {
    const rlx_graph *g = rlx_onnx_model_graph(m);
    printf("outputs as imported%s:\n", a->dims_given ? " (after --dim/--shape)" : "");
    for (size_t i = 0; i < rlx_graph_num_outputs(g); i++) {
      char t[128];
      printf("  %s: %s\n", rlx_graph_output_name(g, i), rlx_type_str(rlx_graph_value_type(g, rlx_graph_output_value(g, i)), t, sizeof t));
    }
    if (a->graph) rlx_graph_print(g, stdout);
    if (a->cost) st = rlx_cli_print_cost(g, a->precision);
  } else if (!a->graph && !a->cost && !a->dims_given) { /* describing is all that was asked */
    printf("outputs as imported: rlx cannot import this model: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)),
           rlx_status_message(st));
    rlx_status_free(st);
    st = NULL;
  }
  rlx_onnx_model_free(m);
  return st ? cli_fail(st) : 0;
}
