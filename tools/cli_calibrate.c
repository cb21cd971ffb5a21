/* cli_calibrate.c: `rlx calibrate`, `rlx info --cost` and `rlx run --device auto` (see cli_calibrate.h). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli_calibrate.h"
#include "rlx/calibrate.h"
#include "rlx/rlx.h"

static int cal_fail(rlx_status *st) {
  fprintf(stderr, "rlx: error: %s: %s\n", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  rlx_status_free(st);
  return 1;
}

/* A progress line on stderr, rewritten in place on a terminal. */
static void progress(void *ud, rlx_device device, const char *figure, int index, int count) {
  bool tty = isatty(2);
  if (figure) fprintf(stderr, "%scalibrating %s: %d/%d %-24s%s", tty ? "\r" : "", rlx_device_name(device), index + 1, count, figure, tty ? "" : "\n");
  else if (tty) fprintf(stderr, "\r%*s\r", 60, "");
  fflush(stderr);
}

static void print_table(const rlx_calibration *cal, rlx_device device, bool measured) {
  printf("%s (%s, %s): %s, MLX %s, rlx %s\n", rlx_device_name(device), cal->device_name, cal->precision,
         measured ? "measured now" : "cached", cal->mlx_version, cal->rlx_version);
#define RLX_X(field, unit, what)                                                                       \
  {                                                                                                     \
    double v = cal->field;                                                                              \
    const char *u = unit;                                                                               \
    if (!strcmp(u, "FLOP/s")) v *= 1e-9, u = "GFLOP/s";                                                 \
    else if (!strcmp(u, "ns")) v *= 1e-3, u = "us";                                                     \
    printf("  %-22s %10.3f %-8s %s\n", #field, v, u, what);                                              \
  }
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
}

/* Appends cal to the JSON array `arr` with the keys of the cache file. false when out of memory. */
static bool add_json(cJSON *arr, const rlx_calibration *cal) {
  cJSON *o = cJSON_CreateObject();
  bool ok = o && cJSON_AddItemToArray(arr, o) && cJSON_AddStringToObject(o, "device_name", cal->device_name) &&
            cJSON_AddStringToObject(o, "mlx_version", cal->mlx_version) && cJSON_AddStringToObject(o, "rlx_version", cal->rlx_version) &&
            cJSON_AddStringToObject(o, "precision", cal->precision);
#define RLX_X(field, unit, what) ok = ok && cJSON_AddNumberToObject(o, #field, cal->field);
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
  return ok;
}

int rlx_cli_calibrate(int argc, char **argv) {
  rlx_calibrate_options opts = {.progress = progress};
  const char *which = "all";
  bool json = false;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--force")) opts.force = true;
    else if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--quick")) opts.quick = true;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) which = argv[++i];
    else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
      rlx_status *st = rlx_precision_from_name(argv[++i], &opts.precision);
      if (st) return cal_fail(st);
    }
    else return cal_fail(rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "calibrate: unknown option '%s' (usage: rlx calibrate [--device cpu|gpu|all] [--precision fp32|tf32] [--force] [--json] [--quick])", argv[i]));
  }
  rlx_device devs[2];
  int n = 0;
  if (!strcmp(which, "all")) {
    devs[n++] = RLX_DEVICE_CPU;
    if (rlx_gpu_available()) devs[n++] = RLX_DEVICE_GPU;
    else if (!json) printf("gpu: not available (MLX %s)\n", rlx_mlx_version());
  } else {
    rlx_status *st = rlx_device_from_name(which, &devs[n++]);
    if (st) return cal_fail(rlx_status_annotate(st, "calibrate --device (cpu, gpu or all)"));
  }
  cJSON *arr = cJSON_CreateArray();
  rlx_status *st = arr ? NULL : rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; !st && i < n; i++) {
    rlx_calibration cal;
    bool measured = false;
    st = rlx_calibration_get(devs[i], &opts, &cal, &measured);
    if (!st && json && !add_json(arr, &cal)) st = rlx_status_make(RLX_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    if (!st && !json) print_table(&cal, devs[i], measured);
  }
  char *text = !st && json ? cJSON_Print(arr) : NULL;
  if (text) printf("%s\n", text);
  cJSON_free(text);
  cJSON_Delete(arr);
  return st ? cal_fail(st) : 0;
}

static void print_estimate(const rlx_cost_estimate *e) {
  printf("predicted on %s: %.3f ms per run (%zu nodes, %.3g GFLOP, %.3g MB moved)\n", rlx_device_name(e->device), e->total_s * 1e3,
         e->nodes, e->flops * 1e-9, e->bytes * 1e-6);
  for (int f = 0; f < RLX_COST_FAMILY_COUNT; f++) {
    if (!e->family_nodes[f] && e->family_s[f] == 0) continue;
    printf("  %-14s %10.3f ms %5.1f%%  %6zu nodes %10.4g GFLOP %10.4g MB\n", rlx_cost_family_name((rlx_cost_family)f),
           e->family_s[f] * 1e3, 100 * e->family_s[f] / e->total_s, e->family_nodes[f], e->family_flops[f] * 1e-9,
           e->family_bytes[f] * 1e-6);
  }
}

rlx_status *rlx_cli_print_cost(const rlx_graph *g, rlx_precision precision) {
  rlx_calibrate_options opts = {.progress = progress, .precision = precision};
  rlx_device dev;
  rlx_cost_estimate est[2];
  rlx_status *st = rlx_cost_pick_device(g, &opts, &dev, &est[0], &est[1]);
  if (st) return st;
  print_estimate(&est[0]);
  if (isinf(est[1].total_s)) printf("gpu: not available\n");
  else print_estimate(&est[1]);
  printf("faster: %s\n", rlx_device_name(dev));
  return NULL;
}

rlx_status *rlx_cli_pick_device(const rlx_graph *g, rlx_precision precision, rlx_device *out) {
  rlx_calibrate_options opts = {.progress = progress, .precision = precision};
  rlx_cost_estimate cpu, gpu;
  rlx_status *st = rlx_cost_pick_device(g, &opts, out, &cpu, &gpu);
  if (st) return st;
  if (isinf(gpu.total_s))
    printf("device auto: cpu (no GPU available; predicted %.3f ms per run)\n", cpu.total_s * 1e3);
  else
    printf("device auto: %s (predicted %.3f ms per run on the GPU vs %.3f ms on the CPU)\n", rlx_device_name(*out), gpu.total_s * 1e3,
           cpu.total_s * 1e3);
  return NULL;
}
