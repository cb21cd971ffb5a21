/* cli.h: what the rlx subcommands share (tools/cli.c): arguments, progress lines, and the set-up
 * of a model for running (inputs loaded, model imported, executable created with its params). */
#ifndef RLX_TOOLS_CLI_H
#define RLX_TOOLS_CLI_H

#include "rlx/rlx.h"

#define RLX_CLI_MAX_INPUTS 64

typedef struct cli_args {
  const char *model, *out_dir;
  const char *in_names[RLX_CLI_MAX_INPUTS], *in_files[RLX_CLI_MAX_INPUTS];
  size_t n_in;
  rlx_mode mode; /* RLX_MODE_DEFAULT unless --mode: RLX_MLX_MODE decides */
  rlx_device device;
  rlx_precision precision;
  int repeat, warmup, runs;
  bool graph, cost, json, quiet, dims_given, auto_device;
  rlx_onnx_options *opts;
} cli_args;

/* Parses the options after the subcommand into *a (a->opts created by the caller). `flags`
 * lists the boolean options the subcommand accepts ("--graph", "--json", ...). INVALID_ARGUMENT
 * naming the option for anything else. */
RLX_MUST_USE rlx_status *cli_parse(int argc, char **argv, const char *const *flags, cli_args *a);

/* Prints a failed status as "rlx: error: CODE: message"; returns 1. */
int cli_fail(rlx_status *st);

/* Seconds on a monotonic clock. */
double cli_now_s(void);

/* A progress line on stderr ("rlx: ..."), unless --quiet. */
void cli_progress(const cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A model ready to run: the tensors of the --input files (inputs[i] for a->in_names[i]; their
 * values also serve the importer where an op must know an input at import time), the imported
 * model and an executable with its params set. Release with cli_session_free. */
typedef struct cli_session {
  rlx_tensor *inputs[RLX_CLI_MAX_INPUTS];
  rlx_onnx_model *model;
  const rlx_graph *g;
  rlx_executable *ex;
  double import_s;
} cli_session;

/* Runs the session once with the given inputs (as rlx_executable_run), with progress lines around
 * a compiled executable's first run (tracing, and MLX JIT-compiling kernels, can take seconds);
 * *out_s receives the time the run took. */
RLX_MUST_USE rlx_status *cli_first_run(const cli_args *a, cli_session *s, size_t n_in, const char *const *names,
                                       rlx_tensor *const *values, size_t n_out, rlx_tensor **outs, double *out_s);

/* Loads the inputs, imports the model (with progress lines), picks the device (--device auto,
 * tools/cli_calibrate.c) and creates the executable at the --precision. */
RLX_MUST_USE rlx_status *cli_session_open(cli_args *a, cli_session *s);
void cli_session_free(cli_session *s);

#endif
