/* run.h: `rlx run` and `rlx info` (tools/run.c). */
#ifndef RLX_TOOLS_RUN_H
#define RLX_TOOLS_RUN_H

#include "cli.h"

/* Each returns the subcommand's exit status (0, or 1 with the error printed). */
int rlx_cli_run(cli_args *a);
int rlx_cli_info(cli_args *a);

#endif
