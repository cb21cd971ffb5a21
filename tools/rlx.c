/* rlx: command-line front end; dispatches to the subcommands (tools/run.c, bench.c, launch.c).
 *
 *   rlx run MODEL.onnx [--input NAME=FILE.npy]... [--mode lazy|eager|compiled] [--device cpu|gpu|auto]
 *           [--precision fp32|tf32] [--output-dir DIR] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]...
 *           [--repeat N] [--optimize none|basic|all|PASS,...] [--quiet]
 *   rlx bench MODEL.onnx [--input NAME=FILE.npy]... [--warmup N] [--runs N] [--json] [--mode ...]
 *           [--device ...] [--precision ...] [--dim ...]... [--shape ...]... [--optimize ...] [--quiet]
 *   rlx info MODEL.gguf   (metadata and tensors of a GGUF file)
 *   rlx info MODEL.onnx [--graph] [--cost] [--dim NAME=SIZE]... [--shape NAME=D0,...]... [--optimize ...]
 *   rlx calibrate [--device cpu|gpu|all] [--precision fp32|tf32] [--force] [--json]  (tools/cli_calibrate.c)
 *   rlx launch ...  (tools/launch.c)
 *   rlx generate MODEL.gguf --prompt TEXT [--max-tokens N] [--temperature T --top-k K --top-p P --seed S] [--device cpu|gpu] [--float-activations]  (tools/generate.c)
 *   rlx version
 * Without --mode, RLX_MLX_MODE picks the mode (lazy when unset). Progress lines go to stderr.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli_calibrate.h"
#include "generate.h"
#include "launch.h"
#include "run.h"

static int usage(void) {
  fprintf(stderr,
          "usage: rlx run MODEL.onnx [--input NAME=FILE.npy]... [--mode lazy|eager|compiled] [--device cpu|gpu|auto]\n"
          "               [--precision fp32|tf32] [--output-dir DIR] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]...\n"
          "               [--repeat N] [--optimize none|basic|all|PASS,...] [--quiet]\n"
          "       rlx bench MODEL.onnx [--input NAME=FILE.npy]... [--warmup N] [--runs N] [--json] [--mode M] [--device D]\n"
          "               [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]... [--optimize ...] [--quiet]\n"
          "       rlx info MODEL.gguf\n"
          "       rlx info MODEL.onnx [--graph] [--cost] [--dim NAME=SIZE]... [--shape NAME=D0,D1,...]... [--optimize ...]\n"
          "       rlx calibrate [--device cpu|gpu|all] [--precision fp32|tf32] [--force] [--json]\n"
          "       rlx launch ...\n"
          "       rlx generate MODEL.gguf --prompt TEXT [--max-tokens N] [--temperature T --top-k K --top-p P --seed S] [--device cpu|gpu] [--float-activations]\n"
          "       rlx version\n");
  return 2;
}

static const struct {
  const char *name;
  int (*fn)(cli_args *a);
  const char *flags[3];
} commands[] = {
    {"run", rlx_cli_run, {"--quiet"}},
    {"bench", rlx_cli_bench, {"--json", "--quiet"}},
    {"info", rlx_cli_info, {"--graph", "--cost"}},
};

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
  if (!strcmp(cmd, "generate")) return rlx_cli_generate(argc - 2, argv + 2);
  if (!strcmp(cmd, "calibrate")) return rlx_cli_calibrate(argc - 2, argv + 2);
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
    if (strcmp(cmd, commands[c].name)) continue;
    cli_args a = {.mode = RLX_MODE_DEFAULT, .device = RLX_DEVICE_CPU, .repeat = 1, .warmup = 5, .runs = 50};
    rlx_status *st = rlx_onnx_options_create(&a.opts);
    if (!st) st = cli_parse(argc - 2, argv + 2, commands[c].flags, &a);
    int rc = st ? (cli_fail(st), 2) : commands[c].fn(&a);
    rlx_onnx_options_free(a.opts);
    return rc;
  }
  return usage();
}
