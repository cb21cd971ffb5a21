/* pipeline.c: optimization levels and the pass order (rlx/optimize.h). */
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"

typedef struct pass_info {
  const char *name;
  rlx_pass_fn fn;
} pass_info;

static const pass_info passes[] = {
#define RLX_X(nm, doc) {#nm, rlx_pass_##nm},
    RLX_OPT_PASSES(RLX_X)
#undef RLX_X
};

static const char *const basic[] = {"constfold", "dce", "cse", "fold_affine", "epilogue", "dce"};
static const char *const all[] = {"constfold", "dce", "cse", "sink_reshape", "fold_affine", "activation", "norm", "attention",
                                  "transpose", "identity", "onehot", "epilogue", "channel_scale", "scalarize", "cse", "dce"};

static const pass_info *find_pass(const char *name, size_t len) {
  for (size_t i = 0; i < RLX_ARRAY_LEN(passes); i++)
    if (strlen(passes[i].name) == len && !strncmp(passes[i].name, name, len)) return &passes[i];
  return NULL;
}

/* The passes of spec into list (cap entries); *n their count. */
static rlx_status *parse(const char *spec, const pass_info **list, size_t cap, size_t *n) {
  *n = 0;
  if (!spec) return RLX_ERR(INVALID_ARGUMENT, "optimization spec is NULL");
  const char *const *names = NULL;
  size_t cnt = 0;
  if (!strcmp(spec, "none")) return NULL;
  if (!strcmp(spec, "basic")) names = basic, cnt = RLX_ARRAY_LEN(basic);
  if (!strcmp(spec, "all")) names = all, cnt = RLX_ARRAY_LEN(all);
  for (size_t i = 0; i < cnt; i++) list[(*n)++] = find_pass(names[i], strlen(names[i]));
  if (names) return NULL;
  for (const char *p = spec; *p;) {
    size_t len = strcspn(p, ",");
    const pass_info *pi = find_pass(p, len);
    if (!pi) {
      char known[512] = "";
      for (size_t i = 0; i < RLX_ARRAY_LEN(passes); i++) strcat(strcat(known, i ? ", " : ""), passes[i].name);
      return RLX_ERR(INVALID_ARGUMENT, "optimization '%.*s': not a level (none, basic, all) or a pass (%s)", (int)len, p, known);
    }
    if (*n == cap) return RLX_ERR(INVALID_ARGUMENT, "optimization spec '%s' lists more than %zu passes", spec, cap);
    list[(*n)++] = pi;
    p += len;
    if (*p == ',') p++;
  }
  return NULL;
}

rlx_status *rlx_optimize_check(const char *spec) {
  const pass_info *list[32];
  size_t n;
  return parse(spec, list, 32, &n);
}

rlx_status *rlx_graph_optimize(const rlx_graph *g, const char *spec, size_t n_params, const char *const *param_names,
                               const rlx_tensor *const *param_values, rlx_graph **out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_optimize: NULL argument");
  if (!g->n_outputs) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_optimize: the graph has no outputs (rlx_graph_set_outputs)");
  if (n_params && (!param_names || !param_values)) return RLX_ERR(INVALID_ARGUMENT, "rlx_graph_optimize: NULL param list");
  const pass_info *list[32];
  size_t n;
  RLX_TRY(parse(spec, list, 32, &n));
  rlx_opt_ctx cx = {.n_params = n_params, .pnames = param_names, .pvals = param_values};
  rlx_graph *cur;
  RLX_TRY(rlx_graph_clone(g, &cur));
  bool changed = n > 0;
  for (int round = 0; changed && round < 4; round++) {
    changed = false;
    for (size_t i = 0; i < n; i++) {
      rlx_graph *next = NULL;
      bool ch = false;
      rlx_status *st = list[i]->fn(cur, &cx, &next, &ch);
      if (st) {
        rlx_graph_free(cur);
        return rlx_status_annotate(st, "optimization pass %s", list[i]->name);
      }
      rlx_graph_free(cur);
      cur = next;
      changed |= ch;
    }
  }
  *out = cur;
  return NULL;
}

bool rlx_graph_reads_param(const rlx_graph *g, const char *name) {
  for (size_t i = 0; g && name && i < g->n_nodes; i++) {
    const rlx_node *n = &g->nodes[i];
    if (n->op == RLX_OP_PARAM && !strcmp(n->name, name)) return true;
    for (uint32_t a = 0; a < n->n_attrs; a++)
      if (n->attrs[a].kind == RLX_ATTR_GRAPH && rlx_graph_reads_param(n->attrs[a].graph, name)) return true;
  }
  return false;
}
