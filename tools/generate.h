/* generate.h: `rlx generate` (tools/generate.c). */
#ifndef RLX_TOOLS_GENERATE_H
#define RLX_TOOLS_GENERATE_H

/* Runs `rlx generate` with the arguments after the subcommand; returns the exit status (0; 1
 * with the error printed; 2 for a usage error). */
int rlx_cli_generate(int argc, char **argv);

#endif
