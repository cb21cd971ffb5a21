/* bench.c: `rlx bench MODEL`: the latency of a model's runs, as ONNX Runtime's performance test
 * tool (onnxruntime_perf_test) reports it: the first run apart, then `--warmup` untimed runs and
 * `--runs` timed ones; latency mean, min, max and percentiles p50/p90/p99 (nearest rank on the
 * sorted times), throughput (runs per second of the timed runs' total), peak memory (MLX's peak
 * allocation since the process started, mlx::core::get_peak_memory, and the process' peak
 * resident set, getrusage; both include the model's params).
 * Inputs come from --input files; inputs without one get data of their declared type, which
 * must be static after --dim/--shape (floats uniform in [-1, 1), integers 0, bools false). */
#include "bench.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef struct bench_stats {
  double first_ms, mean_ms, min_ms, max_ms, p50_ms, p90_ms, p99_ms, per_s;
  size_t mlx_peak, rss_peak;
} bench_stats;

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* Nearest-rank percentile of n sorted samples. */
static double percentile(const double *sorted, int n, double p) {
  int k = (int)((p / 100.0) * n + 0.999999999);
  return sorted[(k < 1 ? 1 : k > n ? n : k) - 1];
}

/* Data for every graph input: the --input file's tensor, or generated (see above). */
static rlx_status *bench_inputs(const cli_args *a, cli_session *s, const char **names, rlx_tensor **values, rlx_tensor **owned) {
  size_t n = rlx_graph_num_inputs(s->g);
  uint32_t seed = 12345;
  for (size_t i = 0; i < n; i++) {
    names[i] = rlx_graph_input_name(s->g, i);
    for (size_t k = 0; k < a->n_in; k++)
      if (!strcmp(a->in_names[k], names[i])) values[i] = s->inputs[k];
    if (values[i]) continue;
    const rlx_type *t = rlx_graph_value_type(s->g, rlx_graph_input_value(s->g, i));
    if (!rlx_type_is_static(t)) {
      char ts[128];
      return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "input '%s' is %s: give it a file (--input) or its sizes (--dim/--shape)",
                             names[i], rlx_type_str(t, ts, sizeof ts));
    }
    RLX_RETURN_IF_ERROR(rlx_tensor_create(t->dtype, t->rank, t->dims, NULL, 0, &owned[i]));
    values[i] = owned[i];
    for (int64_t e = 0; rlx_dtype_is_float(t->dtype) && e < rlx_tensor_numel(owned[i]); e++) {
      seed = seed * 1664525u + 1013904223u; /* LCG (Numerical Recipes) */
      float v = (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
      unsigned char *p = (unsigned char *)rlx_tensor_data(owned[i]) + (size_t)e * rlx_dtype_size(t->dtype);
      double d = v;
      uint16_t h = t->dtype == RLX_DTYPE_F16 ? rlx_f32_to_f16(v) : rlx_f32_to_bf16(v);
      if (t->dtype == RLX_DTYPE_F32) memcpy(p, &v, 4);
      else if (t->dtype == RLX_DTYPE_F64) memcpy(p, &d, 8);
      else memcpy(p, &h, 2);
    }
  }
  return NULL;
}

static rlx_status *measure(const cli_args *a, cli_session *s, bench_stats *out) {
  size_t n_in = rlx_graph_num_inputs(s->g), n_out = rlx_graph_num_outputs(s->g);
  const char **names = calloc(n_in + 1, sizeof *names);
  rlx_tensor **values = calloc(n_in + 1, sizeof *values), **owned = calloc(n_in + 1, sizeof *owned);
  rlx_tensor **outs = calloc(n_out, sizeof *outs);
  double *ms = calloc((size_t)a->runs, sizeof *ms);
  rlx_status *st = names && values && owned && outs && ms ? NULL : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  if (!st) st = bench_inputs(a, s, names, values, owned);
  double first = 0, total = 0;
  if (!st) st = cli_first_run(a, s, n_in, names, values, n_out, outs, &first);
  for (int r = 0; !st && r < a->warmup + a->runs; r++) {
    for (size_t i = 0; i < n_out; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    double t0 = cli_now_s();
    st = rlx_executable_run(s->ex, n_in, names, values, n_out, outs);
    double dt = cli_now_s() - t0;
    if (r >= a->warmup) ms[r - a->warmup] = dt * 1e3, total += dt;
  }
  if (!st) {
    qsort(ms, (size_t)a->runs, sizeof *ms, cmp_double);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *out = (bench_stats){.first_ms = first * 1e3, .mean_ms = total * 1e3 / a->runs, .min_ms = ms[0], .max_ms = ms[a->runs - 1],
                         .p50_ms = percentile(ms, a->runs, 50), .p90_ms = percentile(ms, a->runs, 90),
                         .p99_ms = percentile(ms, a->runs, 99), .per_s = a->runs / total, .mlx_peak = rlx_mlx_peak_memory(),
                         .rss_peak = (size_t)ru.ru_maxrss * 1024};
  }
  for (size_t i = 0; outs && i < n_out; i++) rlx_tensor_free(outs[i]);
  for (size_t i = 0; owned && i < n_in; i++) rlx_tensor_free(owned[i]);
  free(names);
  free(values);
  free(owned);
  free(outs);
  free(ms);
  return st;
}

static rlx_status *print_json(const cli_args *a, const cli_session *s, const bench_stats *b) {
  cJSON *j = cJSON_CreateObject(), *lat = cJSON_CreateObject(), *mem = cJSON_CreateObject();
  if (!j || !lat || !mem) {
    cJSON_Delete(j);
    cJSON_Delete(lat);
    cJSON_Delete(mem);
    return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  cJSON_AddItemToObject(j, "latency_ms", lat);
  cJSON_AddItemToObject(j, "peak_memory_bytes", mem);
  cJSON_AddStringToObject(j, "model", a->model);
  cJSON_AddStringToObject(j, "mode", rlx_mode_name(rlx_executable_mode(s->ex)));
  cJSON_AddStringToObject(j, "device", rlx_device_name(a->device));
  cJSON_AddNumberToObject(j, "warmup", a->warmup);
  cJSON_AddNumberToObject(j, "runs", a->runs);
  cJSON_AddNumberToObject(j, "import_ms", s->import_s * 1e3);
  cJSON_AddNumberToObject(j, "first_run_ms", b->first_ms);
  cJSON_AddNumberToObject(lat, "mean", b->mean_ms);
  cJSON_AddNumberToObject(lat, "min", b->min_ms);
  cJSON_AddNumberToObject(lat, "p50", b->p50_ms);
  cJSON_AddNumberToObject(lat, "p90", b->p90_ms);
  cJSON_AddNumberToObject(lat, "p99", b->p99_ms);
  cJSON_AddNumberToObject(lat, "max", b->max_ms);
  cJSON_AddNumberToObject(j, "throughput_per_s", b->per_s);
  cJSON_AddNumberToObject(mem, "mlx", (double)b->mlx_peak);
  cJSON_AddNumberToObject(mem, "process_rss", (double)b->rss_peak);
  char *text = cJSON_Print(j);
  cJSON_Delete(j);
  if (!text) return rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  printf("%s\n", text);
  cJSON_free(text);
  return NULL;
}

int rlx_cli_bench(cli_args *a) {
  cli_session s;
  bench_stats b = {0};
  rlx_status *st = cli_session_open(a, &s);
  if (!st) st = measure(a, &s, &b);
  if (!st && a->json) st = print_json(a, &s, &b);
  else if (!st) {
    printf("model %s: mode %s, device %s; import %.1f ms\n", a->model, rlx_mode_name(rlx_executable_mode(s.ex)), rlx_device_name(a->device),
           s.import_s * 1e3);
    printf("first run: %.3f ms\n", b.first_ms);
    printf("latency over %d runs (after %d warm-up runs): mean %.3f ms, min %.3f, p50 %.3f, p90 %.3f, p99 %.3f, max %.3f\n", a->runs,
           a->warmup, b.mean_ms, b.min_ms, b.p50_ms, b.p90_ms, b.p99_ms, b.max_ms);
    printf("throughput: %.2f runs/s\n", b.per_s);
    printf("peak memory: MLX %.1f MiB, process resident %.1f MiB\n", (double)b.mlx_peak / (1 << 20), (double)b.rss_peak / (1 << 20));
  }
  cli_session_free(&s);
  return st ? cli_fail(st) : 0;
}
