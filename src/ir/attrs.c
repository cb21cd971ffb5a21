/* attrs.c: op metadata from the op table, attribute schemas, validation and access. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static rlx_op_info infos[RLX_OP_COUNT] = {
#define RLX_X(e, nm, fam, lo, hi, spec) {nm, #fam, lo, hi, spec, 0, NULL, false, false},
    RLX_OP_TABLE(RLX_X)
#undef RLX_X
};

static const rlx_infer_fn infer_fns[RLX_OP_COUNT] = {
#define RLX_X(e, nm, fam, lo, hi, spec) rlx_infer_##fam,
    RLX_OP_TABLE(RLX_X)
#undef RLX_X
};

rlx_infer_fn rlx_infer_fn_of(rlx_op op) { return infer_fns[op]; }

const char *rlx_op_name(rlx_op op) { return (unsigned)op < RLX_OP_COUNT ? infos[op].name : "invalid"; }

rlx_status *rlx_op_from_name(const char *name, rlx_op *out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_op_from_name: out is NULL");
  for (int i = 0; name && i < RLX_OP_COUNT; i++)
    if (strcmp(infos[i].name, name) == 0) {
      *out = (rlx_op)i;
      return NULL;
    }
  return RLX_ERR(NOT_FOUND, "unknown op '%s'", name ? name : "(null)");
}

/* ---- schema parsing (once, at first use; the table is static so failures are bugs) ---- */

/* The parsed schema text and default values live for the whole process. An allocation failure
 * marks the op (info->oom), which rlx_attrs_build then reports. */
static bool parse_list(const char *s, rlx_attr_val *v, bool floats) {
  size_t n = 0;
  for (const char *p = s; *p; p++) n += *p == ',';
  n = *s ? n + 1 : 0;
  if (floats) v->floats = n ? calloc(n, sizeof(double)) : NULL;
  else v->ints = n ? calloc(n, sizeof(int64_t)) : NULL;
  if (n && !(floats ? (void *)v->floats : (void *)v->ints)) return false;
  v->n = n;
  const char *p = s;
  for (size_t i = 0; i < n; i++) {
    char *end;
    if (floats) v->floats[i] = strtod(p, &end);
    else v->ints[i] = strtoll(p, &end, 10);
    p = *end == ',' ? end + 1 : end;
  }
  return true;
}

static void parse_schema(rlx_op_info *info) {
  const char *s = info->schema;
  size_t count = 0;
  for (const char *p = s; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    if (*p == '*') {
      info->open = true;
      p++;
      continue;
    }
    count++;
    while (*p && *p != ' ') p++;
  }
  info->specs = count ? calloc(count, sizeof(rlx_attr_spec)) : NULL;
  if (count && !info->specs) {
    info->oom = true;
    return;
  }
  info->n_specs = count;
  size_t k = 0;
  for (const char *p = s; *p && k < count;) {
    while (*p == ' ') p++;
    if (*p == '*') {
      p++;
      continue;
    }
    const char *start = p;
    while (*p && *p != ' ') p++;
    size_t len = (size_t)(p - start);
    char *tok = malloc(len + 1);
    if (!tok) {
      info->oom = true;
      info->n_specs = k;
      return;
    }
    memcpy(tok, start, len);
    tok[len] = '\0';
    rlx_attr_spec *sp = &info->specs[k++];
    char *colon = strchr(tok, ':');
    *colon = '\0';
    sp->name = tok; /* owns tok for the life of the process */
    char *type = colon + 1, *eq = strchr(type, '=');
    if (eq) {
      *eq = '\0';
      sp->has_default = true;
    }
    const char *dv = eq ? eq + 1 : "";
    if (strcmp(type, "i") == 0) {
      sp->kind = RLX_ATTR_INT;
      sp->dflt.i = strtoll(dv, NULL, 10);
    } else if (strcmp(type, "f") == 0) {
      sp->kind = RLX_ATTR_FLOAT;
      sp->dflt.f = strtod(dv, NULL);
    } else if (strcmp(type, "is") == 0) {
      sp->kind = RLX_ATTR_INTS;
      info->oom |= !parse_list(dv, &sp->dflt, false);
    } else if (strcmp(type, "fs") == 0) {
      sp->kind = RLX_ATTR_FLOATS;
      info->oom |= !parse_list(dv, &sp->dflt, true);
    } else if (strcmp(type, "s") == 0) {
      sp->kind = RLX_ATTR_STRING;
      sp->dflt.s = (char *)dv;
    } else {
      sp->kind = RLX_ATTR_GRAPH;
    }
    sp->dflt.kind = sp->kind;
    sp->dflt.name = (char *)sp->name;
  }
}

static pthread_once_t parse_once = PTHREAD_ONCE_INIT;
static void parse_all(void) {
  for (int i = 0; i < RLX_OP_COUNT; i++) parse_schema(&infos[i]);
}

const rlx_op_info *rlx_op_info_get(rlx_op op) {
  pthread_once(&parse_once, parse_all);
  return &infos[op];
}

/* ---- validation and copies ---- */

static const char *kind_name(rlx_attr_kind k) {
  static const char *names[] = {"int", "float", "ints", "floats", "string", "graph"};
  return (unsigned)k < 6 ? names[k] : "invalid";
}

static void val_clear(rlx_attr_val *v, bool free_graph) {
  free(v->name);
  free(v->ints);
  free(v->floats);
  free(v->s);
  if (free_graph) rlx_graph_free(v->graph);
}

void rlx_attrs_free(rlx_attr_val *a, uint32_t n, bool free_graphs) {
  if (!a) return;
  for (uint32_t i = 0; i < n; i++) val_clear(&a[i], free_graphs);
  free(a);
}

/* Copies `src` (a user attribute or a default) into dst; the graph pointer is shared (moved later). */
static bool val_copy(rlx_attr_val *dst, const char *name, rlx_attr_kind kind, int64_t i, double f,
                     size_t n, const int64_t *ints, const double *floats, const char *s, rlx_graph *g) {
  memset(dst, 0, sizeof *dst);
  dst->name = rlx_strdup(name);
  dst->kind = kind;
  dst->i = i;
  dst->f = f;
  dst->n = n;
  dst->graph = g;
  if (!dst->name) return false;
  if (kind == RLX_ATTR_INTS && n) {
    if (!(dst->ints = malloc(n * sizeof *ints))) return false;
    memcpy(dst->ints, ints, n * sizeof *ints);
  }
  if (kind == RLX_ATTR_FLOATS && n) {
    if (!(dst->floats = malloc(n * sizeof *floats))) return false;
    memcpy(dst->floats, floats, n * sizeof *floats);
  }
  if (kind == RLX_ATTR_STRING && !(dst->s = rlx_strdup(s ? s : ""))) return false;
  return true;
}

rlx_status *rlx_attrs_build(rlx_op op, size_t n, const rlx_attr *attrs, rlx_attr_val **out, uint32_t *n_out) {
  const rlx_op_info *info = rlx_op_info_get(op);
  if (info->oom) return RLX_ERR(RESOURCE_EXHAUSTED, "out of memory while parsing the attribute schema of %s", info->name);
  if (n && !attrs) return RLX_ERR(INVALID_ARGUMENT, "attrs is NULL with n_attrs %zu", n);
  for (size_t k = 0; k < n; k++) {
    const rlx_attr *a = &attrs[k];
    if (!a->name || !*a->name) return RLX_ERR(INVALID_ARGUMENT, "attribute %zu has no name", k);
    for (size_t j = 0; j < k; j++)
      if (strcmp(attrs[j].name, a->name) == 0) return RLX_ERR(INVALID_ARGUMENT, "attribute '%s' given twice", a->name);
    const rlx_attr_spec *sp = NULL;
    for (size_t j = 0; j < info->n_specs; j++)
      if (strcmp(info->specs[j].name, a->name) == 0) sp = &info->specs[j];
    if (!sp && !info->open) {
      return RLX_ERR(INVALID_ARGUMENT, "unknown attribute '%s' (%s takes: %s)", a->name, info->name,
                     *info->schema ? info->schema : "no attributes");
    }
    if (sp && sp->kind != a->kind)
      return RLX_ERR(INVALID_ARGUMENT, "attribute '%s' must be %s, got %s", a->name, kind_name(sp->kind), kind_name(a->kind));
    if ((a->kind == RLX_ATTR_INTS && a->n && !a->ints) || (a->kind == RLX_ATTR_FLOATS && a->n && !a->floats) ||
        (a->kind == RLX_ATTR_GRAPH && !a->graph))
      return RLX_ERR(INVALID_ARGUMENT, "attribute '%s' has a NULL payload", a->name);
  }
  /* Every schema attribute plus the extra ones of open schemas. */
  size_t total = info->n_specs;
  for (size_t k = 0; k < n; k++) {
    bool in_schema = false;
    for (size_t j = 0; j < info->n_specs; j++) in_schema |= strcmp(info->specs[j].name, attrs[k].name) == 0;
    total += !in_schema;
  }
  rlx_attr_val *vals = total ? calloc(total, sizeof *vals) : NULL;
  if (total && !vals) return RLX_OOM();
  size_t m = 0;
  rlx_status *st = NULL;
  for (size_t j = 0; j < info->n_specs && !st; j++) {
    const rlx_attr_spec *sp = &info->specs[j];
    const rlx_attr *a = NULL;
    for (size_t k = 0; k < n; k++)
      if (strcmp(attrs[k].name, sp->name) == 0) a = &attrs[k];
    bool ok;
    if (a) {
      ok = val_copy(&vals[m], a->name, a->kind, a->i, a->f, a->n, a->ints, a->floats, a->s, a->graph);
    } else if (sp->has_default) {
      const rlx_attr_val *d = &sp->dflt;
      ok = val_copy(&vals[m], sp->name, sp->kind, d->i, d->f, d->n, d->ints, d->floats, d->s, NULL);
    } else {
      st = RLX_ERR(INVALID_ARGUMENT, "missing required attribute '%s' (%s)", sp->name, kind_name(sp->kind));
      break;
    }
    m++;
    if (!ok) st = RLX_OOM();
  }
  for (size_t k = 0; k < n && !st; k++) {
    bool in_schema = false;
    for (size_t j = 0; j < info->n_specs; j++) in_schema |= strcmp(info->specs[j].name, attrs[k].name) == 0;
    if (in_schema) continue;
    const rlx_attr *a = &attrs[k];
    if (!val_copy(&vals[m++], a->name, a->kind, a->i, a->f, a->n, a->ints, a->floats, a->s, a->graph)) st = RLX_OOM();
  }
  if (st) {
    rlx_attrs_free(vals, (uint32_t)m, false);
    return st;
  }
  *out = vals;
  *n_out = (uint32_t)m;
  return NULL;
}

/* ---- access ---- */

const rlx_attr_val *rlx_node_attr(const rlx_node *n, const char *name) {
  for (uint32_t i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

int64_t rlx_node_i(const rlx_node *n, const char *name) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  return a && a->kind == RLX_ATTR_INT ? a->i : 0;
}

double rlx_node_f(const rlx_node *n, const char *name) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  return a && a->kind == RLX_ATTR_FLOAT ? a->f : 0.0;
}

const int64_t *rlx_node_is(const rlx_node *n, const char *name, size_t *count) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  *count = a && a->kind == RLX_ATTR_INTS ? a->n : 0;
  return *count ? a->ints : NULL;
}

const double *rlx_node_fs(const rlx_node *n, const char *name, size_t *count) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  *count = a && a->kind == RLX_ATTR_FLOATS ? a->n : 0;
  return *count ? a->floats : NULL;
}

const char *rlx_node_s(const rlx_node *n, const char *name) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  return a && a->kind == RLX_ATTR_STRING ? a->s : "";
}

const rlx_graph *rlx_node_g(const rlx_node *n, const char *name) {
  const rlx_attr_val *a = rlx_node_attr(n, name);
  return a && a->kind == RLX_ATTR_GRAPH ? a->graph : NULL;
}
