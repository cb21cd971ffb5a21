/* dist_fault.c: a rank that dies or hangs mid-run must make the others fail, not wait forever.
 *
 *   dist_fault --victim R --at K --how exit|stop [--timeout S] [--commit 1]   (under rlx launch)
 *
 * Every rank runs a compiled AllReduce graph step after step (with --commit 1, each step is an
 * asynchronous rlx_executable_commit and the rlx_executable_sync that waits for it: the sync is
 * where a committed run's failure or timeout surfaces). At step K rank R kills itself
 * (SIGKILL, `exit`) or stops itself (SIGSTOP, `stop`: alive, sockets open, silent). The other
 * ranks must get an error status from a run: at once for `exit` (the connections close), within
 * the group timeout S (rlx_dist_group_set_timeout) for `stop`. Each survivor prints "detected
 * after T s: <message>" and exits with status 3 when T <= S + 5 (the expected outcome), 1 when the
 * error came later or a step gave a wrong sum. The victim never returns. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlx/rlx.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int fail(rlx_status *st) {
  printf("error: %s\n", rlx_status_message(st));
  rlx_status_free(st);
  return 2;
}

int main(int argc, char **argv) {
  int victim = 1, at = 3;
  double timeout = 10;
  const char *how = "exit";
  bool commit = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--victim")) victim = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--at")) at = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--how")) how = argv[i + 1];
    else if (!strcmp(argv[i], "--timeout")) timeout = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--commit")) commit = atoi(argv[i + 1]) != 0;
  }
  rlx_dist_group *g = NULL;
  rlx_status *st = rlx_dist_init(RLX_DIST_ANY, true, &g);
  if (st) return fail(st);
  st = rlx_dist_group_set_timeout(g, timeout);
  if (st) return fail(st);
  int rank = rlx_dist_group_rank(g), size = rlx_dist_group_size(g);
  /* y = AllReduce(x), x = rank everywhere: y = size (size - 1) / 2 */
  enum { N = 4096 };
  rlx_graph *gr = NULL;
  rlx_value x, y;
  rlx_type t = {.dtype = RLX_DTYPE_F32, .rank = 1, .dims = {N}};
  st = rlx_graph_create(&gr);
  if (!st) st = rlx_graph_add_input(gr, "x", &t, &x);
  if (!st) st = rlx_graph_add1(gr, RLX_OP_ALL_REDUCE, "sum", 1, &x, 1, (rlx_attr[]){RLX_ATTR_S("kind", "sum")}, &y);
  if (!st) st = rlx_graph_set_outputs(gr, 1, &y);
  rlx_executable *ex = NULL;
  if (!st) st = rlx_executable_create(gr, RLX_DEVICE_CPU, RLX_MODE_COMPILED, &ex);
  if (!st) st = rlx_executable_set_group(ex, g);
  static float data[N];
  for (int i = 0; i < N; i++) data[i] = (float)rank;
  rlx_tensor *in = NULL;
  if (!st) st = rlx_tensor_wrap(RLX_DTYPE_F32, 1, t.dims, data, sizeof data, &in);
  if (st) return fail(st);
  int rc = 1;
  double last_ok = now_s();
  for (int step = 0;; step++) {
    if (rank == victim && step == at) {
      printf("rank %d: %s at step %d\n", rank, strcmp(how, "stop") ? "killing itself" : "stopping itself", step);
      fflush(stdout);
      raise(strcmp(how, "stop") ? SIGKILL : SIGSTOP);
    }
    rlx_tensor *out = NULL;
    const char *const names[] = {"x"};
    rlx_tensor *const values[] = {in};
    if (commit) {
      st = rlx_executable_commit(ex, 1, names, values);
      if (!st) st = rlx_executable_sync(ex, 1, &out);
    } else {
      st = rlx_executable_run(ex, 1, names, values, 1, &out);
    }
    if (st) {
      double dt = now_s() - last_ok;
      printf("rank %d: detected after %.2f s at step %d: %s: %s\n", rank, dt, step, rlx_status_code_name(rlx_status_code_of(st)),
             rlx_status_message(st));
      rlx_status_free(st);
      /* the group stays failed: later calls fail at once, naming the first failure */
      st = rlx_dist_barrier(g);
      printf("rank %d: a later barrier: %s\n", rank, st ? rlx_status_message(st) : "succeeded (unexpected)");
      rc = st && dt <= timeout + 5 ? 3 : 1;
      rlx_status_free(st);
      break;
    }
    float want = (float)(size * (size - 1) / 2);
    bool ok = ((const float *)rlx_tensor_cdata(out))[N - 1] == want;
    rlx_tensor_free(out);
    if (!ok) {
      printf("rank %d: wrong sum at step %d\n", rank, step);
      break;
    }
    last_ok = now_s();
  }
  rlx_tensor_free(in);
  rlx_executable_free(ex);
  rlx_graph_free(gr);
  rlx_dist_group_free(g);
  return rc;
}
