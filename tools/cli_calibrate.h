/* cli_calibrate.h: the calibration and cost-model commands of the rlx CLI (tools/cli_calibrate.c). */
#ifndef RLX_TOOLS_CLI_CALIBRATE_H
#define RLX_TOOLS_CLI_CALIBRATE_H

#include "rlx/calibrate.h"

/* rlx calibrate [--device cpu|gpu|all] [--precision fp32|tf32] [--force] [--json] [--quick]: argv after "calibrate". Returns
 * the exit code. */
int rlx_cli_calibrate(int argc, char **argv);
/* rlx info --cost: prints the predicted time of g per device, per cost family and in total (GPU
 * figures at `precision`). */
rlx_status *rlx_cli_print_cost(const rlx_graph *g, rlx_precision precision);
/* rlx run --device auto: picks the device for g (GPU figures at `precision`) and prints which and
 * why. */
rlx_status *rlx_cli_pick_device(const rlx_graph *g, rlx_precision precision, rlx_device *out);

#endif
