/* describe.c: looking into an ONNX model without importing it: rlx_onnx_describe (what the
 * CLI's `rlx info` prints), rlx_onnx_input_names and rlx_onnx_op_supported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import_ops.h"

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
  for (size_t k = 0; name && k < g->n_initializer; k++)
    if (g->initializer[k]->name && !strcmp(g->initializer[k]->name, name)) return true;
  return false;
}

static void print_value_info(FILE *f, const Onnx__ValueInfoProto *vi) {
  fprintf(f, "  %s: ", vi->name ? vi->name : "");
  if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    fprintf(f, "(not a tensor)\n");
    return;
  }
  const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
  rlx_dtype dt;
  rlx_status *st = rlx_onnx_dtype(tt->elem_type, &dt);
  fprintf(f, "%s[", st ? "unsupported-type" : rlx_dtype_name(dt));
  rlx_status_free(st);
  for (size_t i = 0; tt->shape && i < tt->shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) fprintf(f, "%s%lld", i ? "," : "", (long long)d->dim_value);
    else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) fprintf(f, "%s%s", i ? "," : "", d->dim_param);
    else fprintf(f, "%s?", i ? "," : "");
  }
  fprintf(f, "]%s\n", tt->shape ? "" : " (no shape)");
}

typedef struct op_count {
  char key[160];
  size_t count;
} op_count;

static void count_ops(const Onnx__GraphProto *g, op_count *counts, size_t *n, size_t cap) {
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *nd = g->node[i];
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", nd->domain && *nd->domain ? nd->domain : "", nd->domain && *nd->domain ? "." : "",
             nd->op_type ? nd->op_type : "(no op_type)");
    size_t j = 0;
    while (j < *n && strcmp(counts[j].key, key)) j++;
    if (j == *n && *n < cap) snprintf(counts[(*n)++].key, sizeof counts[0].key, "%s", key);
    if (j < *n) counts[j].count++;
    for (size_t a = 0; a < nd->n_attribute; a++) {
      if (nd->attribute[a]->g) count_ops(nd->attribute[a]->g, counts, n, cap);
      for (size_t k = 0; k < nd->attribute[a]->n_graphs; k++) count_ops(nd->attribute[a]->graphs[k], counts, n, cap);
    }
  }
}

/* Reads and parses the ModelProto at `path` (free with onnx__model_proto__free_unpacked). */
static rlx_status *load_model_proto(const char *path, Onnx__ModelProto **out) {
  unsigned char *buf;
  size_t len;
  RLX_TRY(rlx_read_file(path, &buf, &len));
  rlx_status *st = rlx_onnx_check_wire(buf, len, path);
  if (st) {
    free(buf);
    return st;
  }
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
  free(buf);
  if (!mp || !mp->graph) {
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    return RLX_ERR(DATA_LOSS, "%s: not a serialized ONNX ModelProto", path);
  }
  *out = mp;
  return NULL;
}

rlx_status *rlx_onnx_describe(const char *path, FILE *f) {
  if (!path || !f) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_describe: NULL argument");
  Onnx__ModelProto *mp;
  RLX_TRY(load_model_proto(path, &mp));
  const Onnx__GraphProto *g = mp->graph;
  int64_t opset = rlx_onnx_default_opset(mp);
  fprintf(f, "model: %s\nproducer: %s %s\nir_version: %lld\nopsets:", path, mp->producer_name ? mp->producer_name : "",
          mp->producer_version ? mp->producer_version : "", (long long)mp->ir_version);
  for (size_t i = 0; i < mp->n_opset_import; i++)
    fprintf(f, " %s=%lld", mp->opset_import[i]->domain && *mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "ai.onnx",
            (long long)mp->opset_import[i]->version);
  size_t nparams = 0, nbytes = 0;
  for (size_t i = 0; i < g->n_initializer; i++) {
    nparams++;
    nbytes += g->initializer[i]->raw_data.len + 4 * g->initializer[i]->n_float_data;
  }
  fprintf(f, "\ninitializers: %zu (%.1f MB)\ninputs:\n", nparams, (double)nbytes / 1e6);
  for (size_t i = 0; i < g->n_input; i++)
    if (!is_initializer(g, g->input[i]->name)) print_value_info(f, g->input[i]);
  fprintf(f, "outputs:\n");
  for (size_t i = 0; i < g->n_output; i++) print_value_info(f, g->output[i]);
  op_count counts[512];
  size_t n = 0, total = 0, unsupported = 0;
  count_ops(g, counts, &n, 512);
  fprintf(f, "ops:\n");
  for (size_t i = 0; i < n; i++) {
    char *dot = strrchr(counts[i].key, '.');
    char domain[160] = "";
    const char *type = counts[i].key;
    if (dot) {
      snprintf(domain, sizeof domain, "%.*s", (int)(dot - counts[i].key), counts[i].key);
      type = dot + 1;
    }
    const rlx_onnx_op *op = rlx_onnx_find_op(domain, type, opset);
    total += counts[i].count;
    if (!op) unsupported++;
    const char *note = op ? rlx_onnx_op_note(domain, type) : NULL;
    fprintf(f, "  %-28s %5zu%s%s%s\n", counts[i].key, counts[i].count, op ? "" : "  UNSUPPORTED", note ? "  " : "", note ? note : "");
  }
  fprintf(f, "nodes: %zu, op types: %zu, unsupported op types: %zu\n", total, n, unsupported);
  if (unsupported) {
    fprintf(f, "not supported by rlx yet:");
    for (size_t i = 0; i < n; i++) {
      char *dot = strrchr(counts[i].key, '.');
      char domain[160] = "";
      if (dot) snprintf(domain, sizeof domain, "%.*s", (int)(dot - counts[i].key), counts[i].key);
      if (!rlx_onnx_op_supported(domain, dot ? dot + 1 : counts[i].key, opset)) fprintf(f, " %s", counts[i].key);
    }
    fprintf(f, "\n");
  }
  onnx__model_proto__free_unpacked(mp, NULL);
  return NULL;
}

rlx_status *rlx_onnx_input_names(const char *path, char ***out_names, size_t *out_n) {
  if (!path || !out_names || !out_n) return RLX_ERR(INVALID_ARGUMENT, "rlx_onnx_input_names: NULL argument");
  Onnx__ModelProto *mp;
  RLX_TRY(load_model_proto(path, &mp));
  const Onnx__GraphProto *g = mp->graph;
  char **names = calloc(g->n_input ? g->n_input : 1, sizeof *names);
  size_t n = 0;
  rlx_status *st = names ? NULL : RLX_OOM();
  for (size_t i = 0; !st && i < g->n_input; i++) {
    if (is_initializer(g, g->input[i]->name)) continue;
    if (!(names[n++] = rlx_strdup(g->input[i]->name ? g->input[i]->name : ""))) st = RLX_OOM();
  }
  onnx__model_proto__free_unpacked(mp, NULL);
  if (st) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
  }
  *out_names = names;
  *out_n = n;
  return NULL;
}

bool rlx_onnx_op_supported(const char *domain, const char *op_type, int64_t opset) {
  return op_type && rlx_onnx_find_op(domain, op_type, opset) != NULL;
}
