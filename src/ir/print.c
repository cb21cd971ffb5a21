/* print.c: readable dump of a graph (used by `rlx info --graph` and tests). */
#include <stdio.h>

#include "ir/ir.h"
#include "rlx/tensor.h"

static void print_graph(const rlx_graph *g, FILE *f, int indent);

static void print_attr(const rlx_attr_val *a, FILE *f, int indent) {
  fprintf(f, "%s=", a->name);
  switch (a->kind) {
    case RLX_ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
    case RLX_ATTR_FLOAT: fprintf(f, "%g", a->f); break;
    case RLX_ATTR_STRING: fprintf(f, "\"%s\"", a->s); break;
    case RLX_ATTR_INTS:
    case RLX_ATTR_FLOATS:
      fputc('[', f);
      for (size_t i = 0; i < a->n; i++) {
        if (a->kind == RLX_ATTR_INTS) fprintf(f, "%s%lld", i ? "," : "", (long long)a->ints[i]);
        else fprintf(f, "%s%g", i ? "," : "", a->floats[i]);
      }
      fputc(']', f);
      break;
    case RLX_ATTR_GRAPH:
      fprintf(f, "{\n");
      print_graph(a->graph, f, indent + 4);
      fprintf(f, "%*s}", indent + 2, "");
      break;
  }
}

static void print_constant(const rlx_graph *g, const rlx_node *n, FILE *f) {
  const rlx_type *t = &g->types[n->out0];
  rlx_tensor *view;
  if (rlx_tensor_wrap(t->dtype, t->rank, t->dims, n->data, n->nbytes, &view)) return; /* cannot happen: validated */
  int64_t cnt = rlx_tensor_numel(view);
  fprintf(f, " = [");
  for (int64_t i = 0; i < cnt && i < 8; i++) fprintf(f, "%s%g", i ? ", " : "", rlx_tensor_get_f64(view, i));
  fprintf(f, "%s]", cnt > 8 ? ", ..." : "");
  rlx_tensor_free(view);
}

static void print_graph(const rlx_graph *g, FILE *f, int indent) {
  char buf[160];
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    fprintf(f, "%*s", indent, "");
    for (uint32_t o = 0; o < n->n_out; o++) fprintf(f, "%s%%%u", o ? ", " : "", n->out0 + o);
    fprintf(f, " = %s", rlx_op_name(n->op));
    if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM) fprintf(f, " '%s'", n->name);
    if (n->n_in) {
      fputc('(', f);
      for (uint32_t i = 0; i < n->n_in; i++) fprintf(f, "%s%%%u", i ? ", " : "", n->in[i]);
      fputc(')', f);
    }
    if (n->n_attrs) {
      fprintf(f, " {");
      for (uint32_t i = 0; i < n->n_attrs; i++) {
        if (i) fprintf(f, ", ");
        print_attr(&n->attrs[i], f, indent);
      }
      fputc('}', f);
    }
    fprintf(f, " :");
    for (uint32_t o = 0; o < n->n_out; o++) fprintf(f, " %s", rlx_type_str(&g->types[n->out0 + o], buf, sizeof buf));
    if (n->op == RLX_OP_CONSTANT) print_constant(g, n, f);
    if (n->name && n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM) fprintf(f, "  # %s", n->name);
    fputc('\n', f);
  }
  fprintf(f, "%*soutputs:", indent, "");
  for (size_t i = 0; i < g->n_outputs; i++) fprintf(f, " %%%u '%s'", g->outputs[i], g->output_names[i]);
  fputc('\n', f);
}

void rlx_graph_print(const rlx_graph *g, FILE *f) {
  fprintf(f, "graph: %zu inputs, %zu params, %zu nodes, %zu outputs\n", g->n_inputs, g->n_params, g->n_nodes, g->n_outputs);
  print_graph(g, f, 2);
}
