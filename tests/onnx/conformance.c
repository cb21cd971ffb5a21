/* conformance: runs ONNX backend test cases (model.onnx + test_data_set_N/{input,output}_K.pb)
 * through the rlx importer and MLX, and compares with the expected outputs.
 *
 * usage: conformance SUITE DIR [--expect FILE] [--results FILE] [--timeout SECONDS] [--filter SUBSTR]
 *                    [--progress SECONDS]
 *
 * Each case runs in a forked child (the parent never touches MLX), so a crash or a hang is
 * counted for that case and the run goes on. Outcomes: passed, failed (wrong result or an error
 * other than UNIMPLEMENTED), unsupported (UNIMPLEMENTED: an op, attribute or type rlx does not
 * support), crashed, timed out. Comparison: |got - want| <= atol + rtol |want| with the ONNX
 * backend's defaults rtol 1e-3, atol 1e-7 (NaN matches NaN; integers and bools exact).
 * --expect FILE lists cases that must pass (regression guard): any of them not passing makes the
 * exit status 1. Prints "SUITE: P/T passed, F failed, U unsupported, C crashed, H timed out".
 * A progress line ("SUITE: i/N cases, P passed (T s)") goes to stderr every --progress seconds
 * (default 10; 0: after every case). RLX_TEST_DEVICE=gpu runs the cases on MLX's GPU backend.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rlx/rlx.h"

enum { PASS, FAIL, UNSUP, CRASH, TIMEOUT, N_OUTCOMES };
static const char *outcome_names[] = {"PASS", "FAIL", "UNSUPPORTED", "CRASH", "TIMEOUT"};

static bool compare(const rlx_tensor *got, const rlx_tensor *want, char *why, size_t cap) {
  const rlx_type *a = rlx_tensor_type(got), *b = rlx_tensor_type(want);
  bool same = a->rank == b->rank && a->dtype == b->dtype;
  for (int i = 0; same && i < a->rank; i++) same = a->dims[i] == b->dims[i];
  if (!same) {
    char s1[160], s2[160];
    snprintf(why, cap, "got %s, expected %s", rlx_type_str(a, s1, sizeof s1), rlx_type_str(b, s2, sizeof s2));
    return false;
  }
  bool exact = !rlx_dtype_is_float(a->dtype) && a->dtype != RLX_DTYPE_C64; /* low-precision types: their exact values (NaN codes alike) */
  int64_t n = rlx_tensor_numel(got);
  for (int64_t i = 0; i < n; i++) {
    double x = rlx_tensor_get_f64(got, i), y = rlx_tensor_get_f64(want, i);
    bool ok = (isnan(x) && isnan(y)) || (exact ? x == y : x == y || fabs(x - y) <= 1e-7 + 1e-3 * fabs(y));
    if (!ok) {
      snprintf(why, cap, "element %lld: got %.9g, expected %.9g", (long long)i, x, y);
      return false;
    }
  }
  return true;
}

static int status_outcome(rlx_status *st, char *why, size_t cap) {
  snprintf(why, cap, "%s: %s", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  int o = rlx_status_code_of(st) == RLX_STATUS_UNIMPLEMENTED ? UNSUP : FAIL;
  rlx_status_free(st);
  return o;
}

static int load_set(const char *dir, const char *prefix, rlx_tensor **t, char **names, size_t *n) {
  *n = 0;
  for (size_t k = 0; k < 64; k++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, prefix, k);
    if (access(path, R_OK)) break;
    rlx_status *st = rlx_onnx_tensor_load(path, &t[k], &names[k]);
    if (st) return -1 - (int)(rlx_status_free(st), 0);
    (*n)++;
  }
  return 0;
}

/* Runs every test_data_set of one case (in the child). */
static int run_case(const char *dir, char *why, size_t cap) {
  char model[4200];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  int outcome = PASS;
  for (int ds = 0; outcome == PASS && ds < 16; ds++) {
    char set[4200];
    snprintf(set, sizeof set, "%s/test_data_set_%d", dir, ds);
    if (access(set, R_OK)) {
      if (ds == 0) snprintf(why, cap, "no test_data_set_0"), outcome = FAIL;
      break;
    }
    rlx_tensor *in[64] = {0}, *want[64] = {0}, *got[64] = {0};
    char *in_names[64] = {0}, *out_names[64] = {0};
    size_t ni = 0, no = 0;
    rlx_onnx_options *opts = NULL;
    rlx_onnx_model *m = NULL;
    rlx_executable *ex = NULL;
    rlx_status *st = NULL;
    if (load_set(set, "input", in, in_names, &ni) || load_set(set, "output", want, out_names, &no)) {
      snprintf(why, cap, "cannot read the test data (an unsupported tensor type)");
      outcome = UNSUP;
    }
    /* Test data tensors name their input; older sets leave names empty: then they go by position. */
    char **gin = NULL;
    size_t ngin = 0;
    if (outcome == PASS) st = rlx_onnx_input_names(model, &gin, &ngin);
    for (size_t i = 0; !st && i < ni && i < ngin; i++)
      if (!in_names[i] || !*in_names[i]) free(in_names[i]), in_names[i] = strdup(gin[i]);
    for (size_t i = 0; i < ngin; i++) free(gin[i]);
    free(gin);
    if (!st && outcome == PASS) st = rlx_onnx_options_create(&opts);
    for (size_t i = 0; !st && outcome == PASS && i < ni; i++)
      st = rlx_onnx_options_set_input_value(opts, in_names[i], in[i]);
    if (!st && outcome == PASS) st = rlx_onnx_import(model, opts, &m);
    const rlx_graph *g = m ? rlx_onnx_model_graph(m) : NULL;
    if (!st && outcome == PASS) {
      if (rlx_graph_num_inputs(g) != ni || rlx_graph_num_outputs(g) != no) {
        snprintf(why, cap, "graph has %zu inputs / %zu outputs, test data %zu / %zu", rlx_graph_num_inputs(g),
                 rlx_graph_num_outputs(g), ni, no);
        outcome = FAIL;
      }
    }
    const char *dev = getenv("RLX_TEST_DEVICE"); /* "gpu": MLX's GPU backend */
    if (!st && outcome == PASS) st = rlx_executable_create(g, dev && !strcmp(dev, "gpu") ? RLX_DEVICE_GPU : RLX_DEVICE_CPU, RLX_MODE_DEFAULT, &ex);
    if (!st && outcome == PASS) st = rlx_onnx_model_set_params(m, ex);
    const char *names[64];
    for (size_t i = 0; i < ni; i++) names[i] = in_names[i];
    if (!st && outcome == PASS) st = rlx_executable_run(ex, ni, names, in, no, got);
    if (st) outcome = status_outcome(st, why, cap);
    for (size_t i = 0; outcome == PASS && i < no; i++) {
      char w[512];
      if (!compare(got[i], want[i], w, sizeof w)) {
        snprintf(why, cap, "data set %d output %zu ('%s'): %s", ds, i, rlx_graph_output_name(g, i), w);
        outcome = FAIL;
      }
    }
    for (size_t i = 0; i < 64; i++) {
      rlx_tensor_free(in[i]), rlx_tensor_free(want[i]), rlx_tensor_free(got[i]);
      free(in_names[i]), free(out_names[i]);
    }
    rlx_executable_free(ex);
    rlx_onnx_model_free(m);
    rlx_onnx_options_free(opts);
  }
  return outcome;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: conformance SUITE DIR [--expect FILE] [--results FILE] [--timeout S] [--filter SUBSTR] [--progress S]\n");
    return 2;
  }
  const char *suite = argv[1], *root = argv[2], *expect = NULL, *results = NULL, *filter = "";
  int timeout = 120, progress = 10;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--expect")) expect = argv[i + 1];
    else if (!strcmp(argv[i], "--results")) results = argv[i + 1];
    else if (!strcmp(argv[i], "--timeout")) timeout = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--filter")) filter = argv[i + 1];
    else if (!strcmp(argv[i], "--progress")) progress = atoi(argv[i + 1]);
  }
  DIR *d = opendir(root);
  if (!d) {
    fprintf(stderr, "conformance: cannot open '%s': %s\n", root, strerror(errno));
    return 2;
  }
  char **cases = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !strstr(e->d_name, filter)) continue;
    if (n == cap) cases = realloc(cases, (cap = cap ? 2 * cap : 256) * sizeof *cases);
    cases[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(cases, n, sizeof *cases, cmp_str);
  FILE *res = results ? fopen(results, "w") : NULL;
  int counts[N_OUTCOMES] = {0}, *outcome = calloc(n ? n : 1, sizeof *outcome);
  time_t t_start = time(NULL), t_progress = t_start;
  for (size_t i = 0; i < n; i++) {
    char dir[4096], why[1024] = "";
    snprintf(dir, sizeof dir, "%s/%s", root, cases[i]);
    int fd[2];
    if (pipe(fd)) return 2;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      close(fd[0]);
      int o = run_case(dir, why, sizeof why);
      char msg[1100];
      int len = snprintf(msg, sizeof msg, "%d %s", o, why);
      if (write(fd[1], msg, (size_t)len) < 0) _exit(3);
      exit(0); /* exit, not _exit: at-exit checks (LeakSanitizer) run in the child */
    }
    close(fd[1]);
    int st = 0, o = CRASH;
    time_t start = time(NULL);
    while (waitpid(pid, &st, WNOHANG) == 0) {
      if (time(NULL) - start > timeout) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        o = TIMEOUT;
        snprintf(why, sizeof why, "no result after %d s", timeout);
        break;
      }
      usleep(2000);
    }
    char msg[1100] = "";
    ssize_t r = read(fd[0], msg, sizeof msg - 1);
    close(fd[0]);
    if (o != TIMEOUT) {
      if (r > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        msg[r] = '\0';
        o = atoi(msg);
        const char *sp = strchr(msg, ' ');
        snprintf(why, sizeof why, "%s", sp ? sp + 1 : "");
      } else {
        snprintf(why, sizeof why, "child %s %d", WIFSIGNALED(st) ? "killed by signal" : "exited with", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
      }
    }
    outcome[i] = o;
    counts[o]++;
    if (res) fprintf(res, "%s %s%s%s\n", outcome_names[o], cases[i], *why ? ": " : "", why);
    if (time(NULL) - t_progress >= progress) {
      t_progress = time(NULL);
      fprintf(stderr, "conformance %s: %zu/%zu cases, %d passed (%lld s)\n", suite, i + 1, n, counts[PASS], (long long)(t_progress - t_start));
    }
  }
  if (res) fclose(res);
  int regressions = 0;
  if (expect) {
    FILE *f = fopen(expect, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
      line[strcspn(line, "\r\n")] = '\0';
      if (!*line || line[0] == '#') continue;
      for (size_t i = 0; i < n; i++)
        if (!strcmp(cases[i], line) && outcome[i] != PASS) {
          printf("REGRESSION %s: %s\n", line, outcome_names[outcome[i]]);
          regressions++;
        }
    }
    if (f) fclose(f);
    else printf("note: no expected-pass list at %s\n", expect);
  }
  printf("%s: %d/%zu passed, %d failed, %d unsupported, %d crashed, %d timed out\n", suite, counts[PASS], n, counts[FAIL],
         counts[UNSUP], counts[CRASH], counts[TIMEOUT]);
  for (size_t i = 0; i < n; i++) free(cases[i]);
  free(cases);
  free(outcome);
  return regressions ? 1 : 0;
}
