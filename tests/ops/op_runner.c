/* op_runner: runs graph cases written by tests/ops/run_cases.py and checks rlx's outputs against
 * the expected outputs computed by an independent oracle (numpy / the ONNX reference evaluator).
 *
 * usage: op_runner CASE_DIR...   (each holding case.json plus .npy inputs and expected outputs)
 *
 * case.json:
 *   {"inputs":  [{"name": "x", "file": "x.npy", "dims": [optional dims, symbols as -2-k]}],
 *    "params":  [{"name": "w", "file": "w.npy"}],
 *    "nodes":   [{"op": "Softmax", "inputs": ["x"], "outputs": ["y"], "attrs": {"axis": {"i": 1}}}],
 *    "outputs": [{"name": "y", "file": "y.npy", "atol": 1e-6, "rtol": 1e-5}],
 *    "modes":   ["eager", "lazy", "compiled"],
 *    "expect_error": "INVALID_ARGUMENT" (optional: building or running must fail with this code),
 *    "expect_message": "text" (optional, with expect_error: the error message must contain it),
 *    "reset": {"params": [...], "outputs": [...]} (optional: after the checked run, these params are
 *             set again and one more run must give these outputs; compiled mode without tracing again),
 *    "cpu_only": "why" (optional: skipped, and counted as skipped, on the GPU),
 *    "gpu_only": "why" (optional: skipped, and counted as skipped, on the CPU)}
 * Attribute values: {"i": int}, {"f": float}, {"is": [ints]}, {"fs": [floats]}, {"s": "text"},
 * {"dtype": "float32"} (an int attribute holding an rlx_dtype), {"g": {graph}} (a sub-graph with
 * the same inputs/params/constants/nodes/outputs layout, inputs typed by {"dtype", "dims"}; the
 * values of its params are set on the executable like the graph's own).
 * Prints one line per case and mode; exits 1 when any case fails. RLX_TEST_DEVICE=gpu runs the cases
 * on MLX's GPU backend instead of the CPU (exit status 77, "skipped", when there is no GPU);
 * RLX_TEST_MODES (e.g. "eager,lazy") restricts the modes run.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/rlx.h"

#define MAX_VALS 512

typedef struct scope {
  const char *names[MAX_VALS];
  rlx_value vals[MAX_VALS];
  size_t n;
} scope;

static rlx_status *err(const char *fmt, const char *a) { return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, fmt, a); }

static rlx_status *find(const scope *s, const char *name, rlx_value *out) {
  for (size_t i = s->n; i-- > 0;) /* the latest binding of a name wins */
    if (!strcmp(s->names[i], name)) return *out = s->vals[i], NULL;
  return err("case: unknown value '%s'", name);
}

static rlx_status *bind(scope *s, const char *name, rlx_value v) {
  if (s->n == MAX_VALS) return err("case: too many values at '%s'", name);
  s->names[s->n] = name;
  s->vals[s->n++] = v;
  return NULL;
}

static rlx_status *load(const char *dir, const char *file, rlx_tensor **out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  return rlx_npy_load(path, out);
}

/* Param values of a case (of the graph and its sub-graphs, one per name), set on the executable. */
typedef struct plist {
  rlx_tensor *t[64];
  const char *name[64];
  size_t n;
} plist;

static void plist_free(plist *p) {
  for (size_t i = 0; i < p->n; i++) rlx_tensor_free(p->t[i]);
  p->n = 0;
}

/* Takes x as the value of param `name` unless one is listed already (sub-graphs may share params). */
static void plist_add(plist *p, const char *name, rlx_tensor *x) {
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->name[i], name)) {
      rlx_tensor_free(x);
      return;
    }
  if (p->n == 64) {
    rlx_tensor_free(x);
    return;
  }
  p->t[p->n] = x;
  p->name[p->n++] = name;
}

static rlx_status *build_graph(const cJSON *js, const char *dir, rlx_graph **out, plist *ps);

/* Converts one JSON attribute; sub-graphs are built into *sub (caller frees on failure). */
static rlx_status *make_attr(const cJSON *a, const char *dir, rlx_attr *out, int64_t *ibuf, double *fbuf, rlx_graph **sub, plist *ps) {
  const cJSON *v = a->child;
  if (!v) return err("case: attribute '%s' has no value", a->string);
  out->name = a->string;
  if (!strcmp(v->string, "i")) *out = RLX_ATTR_I(a->string, (int64_t)v->valuedouble);
  else if (!strcmp(v->string, "f")) *out = RLX_ATTR_F(a->string, v->valuedouble);
  else if (!strcmp(v->string, "s")) *out = RLX_ATTR_S(a->string, v->valuestring);
  else if (!strcmp(v->string, "dtype")) {
    rlx_dtype dt;
    rlx_status *st = rlx_dtype_from_name(v->valuestring, &dt);
    if (st) return st;
    *out = RLX_ATTR_I(a->string, dt);
  } else if (!strcmp(v->string, "is") || !strcmp(v->string, "fs")) {
    size_t n = 0;
    for (const cJSON *e = v->child; e && n < 256; e = e->next, n++) {
      if (v->string[0] == 'i') ibuf[n] = (int64_t)e->valuedouble;
      else fbuf[n] = e->valuedouble;
    }
    *out = v->string[0] == 'i' ? RLX_ATTR_IS(a->string, n, ibuf) : RLX_ATTR_FS(a->string, n, fbuf);
  } else if (!strcmp(v->string, "g")) {
    rlx_status *st = build_graph(v, dir, sub, ps);
    if (st) return st;
    *out = RLX_ATTR_G(a->string, *sub);
  } else {
    return err("case: unknown attribute kind '%s'", v->string);
  }
  return NULL;
}

/* Builds a graph from {"inputs", "params", "constants", "nodes", "outputs"}; the values of its
 * params and its sub-graphs' params go to ps (the caller frees them, also on failure). */
static rlx_status *build_graph(const cJSON *js, const char *dir, rlx_graph **out, plist *ps) {
  rlx_graph *g;
  rlx_status *st = rlx_graph_create(&g);
  if (st) return st;
  scope *s = calloc(1, sizeof *s);
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "inputs")) {
    if (st) break;
    const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
    const cJSON *file = cJSON_GetObjectItem(e, "file"), *dims = cJSON_GetObjectItem(e, "dims"), *dt = cJSON_GetObjectItem(e, "dtype");
    rlx_type t = {0};
    rlx_tensor *x = NULL;
    if (file) {
      st = load(dir, file->valuestring, &x);
      if (!st) t = *rlx_tensor_type(x);
      rlx_tensor_free(x);
    }
    if (!st && dt) st = rlx_dtype_from_name(dt->valuestring, &t.dtype);
    if (!st && dims) {
      t.rank = 0;
      cJSON *d;
      cJSON_ArrayForEach(d, dims) t.dims[t.rank++] = (int64_t)d->valuedouble;
    }
    rlx_value v;
    if (!st) st = rlx_graph_add_input(g, name, &t, &v);
    if (!st) st = bind(s, name, v);
  }
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "params")) {
    if (st) break;
    const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
    rlx_tensor *x = NULL;
    rlx_value v;
    st = load(dir, cJSON_GetObjectItem(e, "file")->valuestring, &x);
    if (!st) st = rlx_graph_add_param(g, name, rlx_tensor_type(x), &v);
    if (!st) st = bind(s, name, v);
    if (!st) plist_add(ps, name, x);
    else rlx_tensor_free(x);
  }
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "constants")) {
    if (st) break;
    rlx_tensor *x = NULL;
    rlx_value v;
    st = load(dir, cJSON_GetObjectItem(e, "file")->valuestring, &x);
    if (!st) st = rlx_graph_add_constant(g, rlx_tensor_type(x), rlx_tensor_cdata(x), rlx_tensor_nbytes(x), &v);
    if (!st) st = bind(s, cJSON_GetObjectItem(e, "name")->valuestring, v);
    rlx_tensor_free(x);
  }
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "nodes")) {
    if (st) break;
    rlx_op op;
    st = rlx_op_from_name(cJSON_GetObjectItem(e, "op")->valuestring, &op);
    rlx_value in[256], outs[64];
    size_t nin = 0, nout = 0, na = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(e, "inputs")) if (!st && nin < 256) st = find(s, x->valuestring, &in[nin++]);
    static int64_t ibuf[32][256];
    static double fbuf[32][256];
    rlx_attr attrs[32];
    rlx_graph *subs[32] = {0};
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(e, "attrs")) {
      if (st || na == 32) break;
      st = make_attr(x, dir, &attrs[na], ibuf[na], fbuf[na], &subs[na], ps);
      na++;
    }
    if (!st) st = rlx_graph_add(g, op, NULL, nin, in, na, attrs, 64, outs, &nout);
    if (st)
      for (size_t i = 0; i < na; i++) rlx_graph_free(subs[i]);
    size_t k = 0;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(e, "outputs")) if (!st && k < nout) st = bind(s, x->valuestring, outs[k++]);
  }
  rlx_value outs[64];
  size_t no = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "outputs")) if (!st && no < 64) st = find(s, cJSON_GetObjectItem(e, "name")->valuestring, &outs[no++]);
  if (!st) st = rlx_graph_set_outputs(g, no, outs);
  free(s);
  if (st) {
    rlx_graph_free(g);
    return st;
  }
  *out = g;
  return NULL;
}

/* Scalar i of a tensor as a double: element i, or for complex64 the i-th float of the
 * interleaved (re, im) pairs, so that both parts are compared. */
static double scalar_at(const rlx_tensor *t, int64_t i) {
  if (rlx_tensor_dtype(t) == RLX_DTYPE_C64) return ((const float *)rlx_tensor_cdata(t))[i];
  return rlx_tensor_get_f64(t, i);
}

/* |got - want| <= atol + rtol |want| elementwise (NaN matches NaN); exact for ints and bools. */
static bool compare(const rlx_tensor *got, const rlx_tensor *want, double atol, double rtol, char *why, size_t cap) {
  const rlx_type *a = rlx_tensor_type(got), *b = rlx_tensor_type(want);
  bool same = a->rank == b->rank;
  for (int i = 0; same && i < a->rank; i++) same = a->dims[i] == b->dims[i];
  if (!same || a->dtype != b->dtype) {
    char s1[160], s2[160];
    snprintf(why, cap, "type %s, expected %s", rlx_type_str(a, s1, sizeof s1), rlx_type_str(b, s2, sizeof s2));
    return false;
  }
  bool exact = !rlx_dtype_is_float(a->dtype) && a->dtype != RLX_DTYPE_C64;
  int64_t n = rlx_tensor_numel(got) * (a->dtype == RLX_DTYPE_C64 ? 2 : 1), bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = scalar_at(got, i), y = scalar_at(want, i);
    bool ok = exact ? x == y : (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= atol + rtol * fabs(y);
    if (!ok) {
      bad++;
      if (first < 0) first = i;
      if (fabs(x - y) > worst || isnan(x)) worst = fabs(x - y);
    }
  }
  if (bad) {
    snprintf(why, cap, "%lld of %lld elements differ; first at %lld: got %.9g expected %.9g; max abs diff %.3g", (long long)bad, (long long)n,
             (long long)first, scalar_at(got, first), scalar_at(want, first), worst);
    return false;
  }
  return true;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = '\0';
  fclose(f);
  return s;
}

/* Compares outs[] with the expected outputs listed in `list`; false with the reason in why. */
static bool check_outputs(const char *dir, const cJSON *list, rlx_tensor *const *outs, char *why, size_t cap) {
  size_t k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    rlx_tensor *want = NULL;
    const cJSON *atol = cJSON_GetObjectItem(e, "atol"), *rtol = cJSON_GetObjectItem(e, "rtol");
    rlx_status *ls = load(dir, cJSON_GetObjectItem(e, "file")->valuestring, &want);
    char w[512];
    bool ok = true;
    if (ls) {
      snprintf(why, cap, "%s", rlx_status_message(ls));
      rlx_status_free(ls);
      ok = false;
    } else if (!compare(outs[k], want, atol ? atol->valuedouble : 1e-6, rtol ? rtol->valuedouble : 1e-5, w, sizeof w)) {
      snprintf(why, cap, "output %zu ('%s'): %s", k, cJSON_GetObjectItem(e, "name")->valuestring, w);
      ok = false;
    }
    rlx_tensor_free(want);
    k++;
    if (!ok) return false;
  }
  return true;
}

/* The case's "reset" stage: sets its params again and runs once more; outs receive the outputs. */
static rlx_status *run_reset(const char *dir, const cJSON *reset, rlx_executable *ex, size_t ni, const char *const *inames,
                             rlx_tensor *const *inputs, size_t no, rlx_tensor **outs) {
  const cJSON *e;
  rlx_status *st = NULL;
  size_t traces = rlx_executable_num_traces(ex);
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(reset, "params")) {
    rlx_tensor *x = NULL;
    st = load(dir, cJSON_GetObjectItem(e, "file")->valuestring, &x);
    if (!st) st = rlx_executable_set_param(ex, cJSON_GetObjectItem(e, "name")->valuestring, x);
    rlx_tensor_free(x);
    if (st) return st;
  }
  for (size_t i = 0; i < no; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
  st = rlx_executable_run(ex, ni, inames, inputs, no, outs);
  if (!st && rlx_executable_num_traces(ex) != traces)
    st = rlx_status_make(RLX_STATUS_INTERNAL, "the run after setting params again traced again (%zu traces)", rlx_executable_num_traces(ex));
  return st;
}

/* true when some value of g (at its declared types) has no elements: a compiled executable runs
 * such a binding without a trace (exec_pipeline.c). */
static bool some_value_empty(const rlx_graph *g) {
  for (size_t v = 0; v < rlx_graph_num_values(g); v++) {
    const rlx_type *t = rlx_graph_value_type(g, (rlx_value)v);
    for (int d = 0; d < t->rank; d++)
      if (t->dims[d] == 0) return true;
  }
  return false;
}

/* Runs one case in one mode; returns true when it behaves as expected. */
static bool run_mode(const char *dir, const cJSON *js, rlx_mode mode, char *why, size_t cap) {
  const cJSON *expect = cJSON_GetObjectItem(js, "expect_error");
  rlx_graph *g = NULL;
  rlx_executable *ex = NULL;
  rlx_tensor *inputs[64] = {0}, *outs[64] = {0};
  const char *inames[64];
  plist ps = {.n = 0};
  size_t ni = 0, no = 0;
  rlx_status *st = build_graph(js, dir, &g, &ps);
  const char *dev = getenv("RLX_TEST_DEVICE"); /* "gpu" runs the cases on MLX's GPU backend */
  if (!st) st = rlx_executable_create(g, dev && !strcmp(dev, "gpu") ? RLX_DEVICE_GPU : RLX_DEVICE_CPU, mode, &ex);
  for (size_t i = 0; !st && i < ps.n; i++) st = rlx_executable_set_param(ex, ps.name[i], ps.t[i]);
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(js, "inputs")) {
    if (st || ni == 64) break;
    inames[ni] = cJSON_GetObjectItem(e, "name")->valuestring;
    st = load(dir, cJSON_GetObjectItem(e, "file")->valuestring, &inputs[ni++]);
  }
  if (!st) {
    no = rlx_graph_num_outputs(g);
    st = rlx_executable_run(ex, ni, inames, inputs, no, outs);
  }
  /* compiled mode: the outputs checked are those of a second run, which replays the first trace
   * (no trace at all when a value has no elements) */
  if (!st && mode == RLX_MODE_COMPILED) {
    for (size_t i = 0; i < no; i++) rlx_tensor_free(outs[i]), outs[i] = NULL;
    st = rlx_executable_run(ex, ni, inames, inputs, no, outs);
    if (!st && rlx_executable_num_traces(ex) != (some_value_empty(g) ? 0 : 1))
      st = rlx_status_make(RLX_STATUS_INTERNAL, "the second compiled run traced again (%zu traces)", rlx_executable_num_traces(ex));
  }
  bool ok;
  if (expect) {
    const cJSON *msg = cJSON_GetObjectItem(js, "expect_message");
    ok = st && !strcmp(rlx_status_code_name(rlx_status_code_of(st)), expect->valuestring) &&
         (!msg || strstr(rlx_status_message(st), msg->valuestring));
    snprintf(why, cap, "expected %s, got %s: %s", expect->valuestring, rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  } else if (st) {
    ok = false;
    snprintf(why, cap, "%s: %s", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
  } else {
    ok = check_outputs(dir, cJSON_GetObjectItem(js, "outputs"), outs, why, cap);
    const cJSON *reset = cJSON_GetObjectItem(js, "reset");
    if (ok && reset) {
      st = run_reset(dir, reset, ex, ni, inames, inputs, no, outs);
      if (st) {
        ok = false;
        snprintf(why, cap, "after setting params again: %s: %s", rlx_status_code_name(rlx_status_code_of(st)), rlx_status_message(st));
      } else {
        char w[800];
        ok = check_outputs(dir, cJSON_GetObjectItem(reset, "outputs"), outs, w, sizeof w);
        if (!ok) snprintf(why, cap, "after setting params again: %s", w);
      }
    }
  }
  rlx_status_free(st);
  for (size_t i = 0; i < no; i++) rlx_tensor_free(outs[i]);
  for (size_t i = 0; i < ni; i++) rlx_tensor_free(inputs[i]);
  plist_free(&ps);
  rlx_executable_free(ex);
  rlx_graph_free(g);
  return ok;
}

int main(int argc, char **argv) {
  int failed = 0, total = 0, skipped = 0;
  setvbuf(stdout, NULL, _IOLBF, 0); /* a case that crashes the process still shows in the log */
  const char *dev = getenv("RLX_TEST_DEVICE");
  if (dev && !strcmp(dev, "gpu") && !rlx_gpu_available()) {
    printf("RLX_TEST_DEVICE=gpu but MLX has no GPU here: skipped\n");
    return 77; /* CTest's skip code (SKIP_RETURN_CODE) */
  }
  for (int a = 1; a < argc; a++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/case.json", argv[a]);
    char *text = read_text(path);
    cJSON *js = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!js) {
      printf("FAIL %s: cannot read case.json\n", argv[a]);
      failed++;
      continue;
    }
    const cJSON *modes = cJSON_GetObjectItem(js, "modes"), *m;
    const cJSON *cpu_only = cJSON_GetObjectItem(js, "cpu_only");
    const cJSON *gpu_only = cJSON_GetObjectItem(js, "gpu_only");
    bool on_gpu = dev && !strcmp(dev, "gpu");
    if ((cpu_only && on_gpu) || (gpu_only && !on_gpu)) {
      printf("skip %s: %s only (%s)\n", argv[a], on_gpu ? "CPU" : "GPU", (on_gpu ? cpu_only : gpu_only)->valuestring);
      skipped++;
      cJSON_Delete(js);
      continue;
    }
    const char *only = getenv("RLX_TEST_MODES"); /* e.g. "eager,lazy": run just these modes */
    cJSON_ArrayForEach(m, modes) {
      if (only && !strstr(only, m->valuestring)) continue;
      rlx_mode mode;
      rlx_status *st = rlx_mode_from_name(m->valuestring, &mode);
      char why[1024] = "";
      bool ok = !st && run_mode(argv[a], js, mode, why, sizeof why);
      if (st) snprintf(why, sizeof why, "%s", rlx_status_message(st));
      rlx_status_free(st);
      total++;
      if (!ok) failed++;
      printf("%s %s [%s]%s%s\n", ok ? "ok  " : "FAIL", argv[a], m->valuestring, ok ? "" : ": ", ok ? "" : why);
    }
    cJSON_Delete(js);
  }
  printf("%d of %d case runs passed%s", total - failed, total, skipped ? "" : "\n");
  if (skipped) printf(", %d cases skipped\n", skipped);
  return failed ? 1 : 0;
}
