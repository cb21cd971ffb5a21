/* launch.h: `rlx launch` (tools/launch.c). */
#ifndef RLX_TOOLS_LAUNCH_H
#define RLX_TOOLS_LAUNCH_H

/* Runs `rlx launch` with the arguments after the subcommand; returns the exit status. */
int rlx_cli_launch(int argc, char **argv);

#endif
