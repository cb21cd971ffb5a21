/* bench.h: `rlx bench` (tools/bench.c). */
#ifndef RLX_TOOLS_BENCH_H
#define RLX_TOOLS_BENCH_H

#include "cli.h"

/* Returns the subcommand's exit status (0, or 1 with the error printed). */
int rlx_cli_bench(cli_args *a);

#endif
