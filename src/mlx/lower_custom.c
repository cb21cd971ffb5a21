/* lower_custom.c: Custom: a graph kernel's sub-graph lowered in place of the node, a host kernel
 * as an MLX primitive on the CPU stream, or a CUDA source kernel on the GPU (see rlx/registry.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/custom.h"
#include "mlx/lower.h"


/* Builds the kernel's sub-graph over the node's inputs and lowers it; outputs land in out. */
static rlx_status *expand(rlx_lower *L, const rlx_node *n, const rlx_custom_op_def *d, const rlx_attr *attrs, size_t na,
                          rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_graph *sub;
  RLX_TRY(rlx_graph_create(&sub));
  rlx_value ins[256], outs[RLX_MAX_NODE_OUTPUTS];
  rlx_status *st = NULL;
  for (uint32_t i = 0; !st && i < n->n_in; i++) {
    char name[16];
    snprintf(name, sizeof name, "in%u", i);
    st = rlx_graph_add_input(sub, name, rlx_in_type(L, n, i), &ins[i]);
  }
  if (!st) st = d->expand(d->user_data, sub, n->n_in, ins, na, attrs, n->n_out, outs);
  for (uint32_t i = 0; !st && i < n->n_out; i++) {
    const rlx_type *got = rlx_graph_value_type(sub, outs[i]), *want = rlx_out_type(L, n, i);
    if (!got) st = RLX_ERR(INVALID_ARGUMENT, "its graph kernel gave output %u as value %u, which is not in its graph", i, outs[i]);
    else if (!rlx_type_same(got, want))
      st = RLX_ERR(INVALID_ARGUMENT, "its graph kernel made output %u of type %s, but its infer function says %s", i, RLX_TYPE_STR(got),
                   RLX_TYPE_STR(want));
  }
  if (!st) st = rlx_graph_set_outputs(sub, n->n_out, outs);
  rlx_type in_types[256];
  for (uint32_t i = 0; i < n->n_in; i++) in_types[i] = *rlx_in_type(L, n, i);
  rlx_sub prepared;
  if (!st) st = rlx_sub_prepare(L, sub, in_types, n->n_in, &prepared);
  if (!st) {
    const rlx_graph *site_g = L->site_g;
    const rlx_node *site_n = L->site_n;
    if (!site_n) L->site_g = L->g, L->site_n = n; /* sub is freed below; the checks outlive it */
    st = rlx_sub_run(L, &prepared, in, out);
    L->site_g = site_g, L->site_n = site_n;
    rlx_sub_free(&prepared);
  }
  rlx_graph_free(sub);
  return st;
}

/* A host kernel call as MLX sees it (rlx_mx_host_call): the registration (a reference held until
 * MLX drops the call), the node's attributes and its concrete types. */
typedef struct host_call {
  const rlx_custom_entry *e;
  rlx_attr *attrs;
  size_t na;
  uint32_t n_in, n_out;
  rlx_type types[]; /* n_in inputs, then n_out outputs */
} host_call;

static void host_call_free(void *ud) {
  host_call *h = ud;
  rlx_custom_release(h->e);
  free(h->attrs);
  free(h);
}

/* Runs on MLX's CPU stream: wraps the buffers as tensors and calls the kernel. */
static rlx_status *host_call_run(void *ud, const void *const *in, void *const *out) {
  host_call *h = ud;
  const rlx_custom_op_def *d = rlx_custom_def(h->e);
  rlx_tensor *ti[256] = {0}, *to[RLX_MAX_NODE_OUTPUTS] = {0};
  rlx_status *st = NULL;
  for (uint32_t i = 0; !st && i < h->n_in + h->n_out; i++) {
    const rlx_type *t = &h->types[i];
    void *data = i < h->n_in ? (void *)in[i] : out[i - h->n_in];
    size_t nbytes = 0;
    st = rlx_type_nbytes(t, &nbytes);
    if (!st) st = rlx_tensor_wrap(t->dtype, t->rank, t->dims, data, nbytes, i < h->n_in ? &ti[i] : &to[i - h->n_in]);
  }
  if (!st) st = d->host(d->user_data, h->n_in, (const rlx_tensor *const *)ti, h->na, h->attrs, h->n_out, to);
  for (uint32_t i = 0; i < h->n_in; i++) rlx_tensor_free(ti[i]);
  for (uint32_t i = 0; i < h->n_out; i++) rlx_tensor_free(to[i]);
  return rlx_status_annotate(st, "custom op '%s'", d->name);
}

/* The host kernel as an MLX primitive on the CPU stream: lazy, so it works in every mode. */
static rlx_status *host(rlx_lower *L, const rlx_node *n, const rlx_custom_entry *e, rlx_attr *attrs, size_t na, rlx_mx_arr *const *in,
                        rlx_mx_arr **out) {
  host_call *h = malloc(sizeof *h + sizeof(rlx_type) * (n->n_in + n->n_out));
  if (!h) return free(attrs), RLX_OOM();
  *h = (host_call){.e = rlx_custom_acquire(rlx_custom_def(e)->name), .attrs = attrs, .na = na, .n_in = n->n_in, .n_out = n->n_out};
  for (uint32_t i = 0; i < n->n_in; i++) h->types[i] = *rlx_in_type(L, n, i);
  for (uint32_t i = 0; i < n->n_out; i++) h->types[n->n_in + i] = *rlx_out_type(L, n, i);
  if (!h->e) { /* unregistered between the lookup and now */
    host_call_free(h);
    return RLX_ERR(NOT_FOUND, "it was unregistered while being lowered");
  }
  if (!rlx_mx_host_call(L->mx, host_call_run, h, host_call_free, in, n->n_in, h->types + n->n_in, n->n_out, out))
    return rlx_mx_take_error(L->mx);
  return NULL;
}

/* The CUDA source kernel through mx::fast::cuda_kernel. */
static rlx_status *cuda(rlx_lower *L, const rlx_node *n, const rlx_custom_op_def *d, const rlx_attr *attrs, size_t na,
                        rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const rlx_custom_cuda_kernel *k = d->cuda;
  if (n->n_out != k->n_outputs)
    return RLX_ERR(INVALID_ARGUMENT, "its infer function gave %u outputs, but its CUDA kernel names %zu", n->n_out, k->n_outputs);
  rlx_type ti[256], to[RLX_MAX_NODE_OUTPUTS];
  for (uint32_t i = 0; i < n->n_in; i++) ti[i] = *rlx_in_type(L, n, i);
  for (uint32_t i = 0; i < n->n_out; i++) to[i] = *rlx_out_type(L, n, i);
  rlx_custom_cuda_launch launch = k->launch;
  if (k->launch_fn) {
    memset(&launch, 0, sizeof launch);
    RLX_TRY(rlx_status_annotate(k->launch_fn(d->user_data, n->n_in, ti, na, attrs, n->n_out, to, &launch), "its launch function"));
    RLX_TRY(rlx_status_annotate(rlx_custom_check_launch(&launch), "its launch function's launch"));
  }
  char kname[128] = "rlx_";
  size_t len = strlen(kname);
  for (const char *p = d->name; *p && len + 1 < sizeof kname; p++)
    kname[len++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_';
  kname[len] = 0;
  rlx_mx_template_arg targs[RLX_CUSTOM_MAX_TEMPLATE_ARGS];
  for (size_t i = 0; i < launch.n_template_args; i++) {
    const rlx_custom_template_arg *t = &launch.template_args[i];
    targs[i] = (rlx_mx_template_arg){.name = t->name, .kind = (rlx_mx_targ_kind)t->kind, .i = t->i, .dtype = t->dtype};
  }
  rlx_mx_cuda_call call = {.name = kname, .source = k->source, .header = k->header, .in_names = k->input_names, .n_in = n->n_in,
                           .out_names = k->output_names, .out_types = to, .n_out = n->n_out,
                           .template_args = targs, .n_template_args = launch.n_template_args,
                           .has_init_value = launch.has_init_value, .init_value = launch.init_value,
                           .ensure_row_contiguous = !k->strided_inputs, .shared_memory = launch.shared_memory};
  for (int i = 0; i < 3; i++) call.grid[i] = (int)launch.grid[i], call.threadgroup[i] = (int)launch.threadgroup[i];
  if (!rlx_mx_cuda_kernel(L->mx, &call, in, out)) return rlx_mx_take_error(L->mx);
  return NULL;
}

void rlx_lower_custom(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  const char *name = rlx_node_s(n, "name");
  const rlx_custom_entry *e = rlx_custom_acquire(name);
  if (!e) {
    rlx_lower_fail(L, RLX_STATUS_NOT_FOUND, "custom op '%s' is not registered (rlx_custom_op_register)", name);
    return;
  }
  const rlx_custom_op_def *d = rlx_custom_def(e);
  rlx_attr *attrs = NULL;
  size_t na = 0;
  rlx_status *st = rlx_custom_attrs(n, &attrs, &na);
  if (!st) {
    if (d->cuda && rlx_mx_get_device(L->mx) == RLX_MX_GPU) st = cuda(L, n, d, attrs, na, in, out);
    else if (d->expand) st = expand(L, n, d, attrs, na, in, out);
    else if (d->host) st = host(L, n, e, attrs, na, in, out), attrs = NULL; /* the host call owns attrs */
    else st = RLX_ERR(UNAVAILABLE, "it has only a CUDA kernel, and this executable runs on the CPU (create it on RLX_DEVICE_GPU)");
  }
  free(attrs);
  rlx_custom_release(e);
  if (st) rlx_mx_fail(L->mx, rlx_status_annotate(st, "custom op '%s'", name));
}
