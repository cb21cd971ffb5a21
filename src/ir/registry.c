/* registry.c: the process-wide custom-op registry (rlx/registry.h): a list of reference-counted
 * registrations under a reader-writer lock, the built-in ops (src/kernels/) registered first. A lookup takes a reference under the read lock and
 * releases it after the call, so replacing or unregistering an op never frees a registration in
 * use; the last release frees it and calls free_user_data. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ir/custom.h"

struct rlx_custom_entry {
  rlx_custom_op_def def; /* def.name and def.cuda point to the entry's own copies */
  rlx_custom_cuda_kernel cuda; /* the copy of *def.cuda (strings owned) */
  atomic_size_t refs;    /* one for the registry while registered, one per lookup in flight */
};

static void free_names(const char *const *names, size_t n) {
  for (size_t i = 0; names && i < n; i++) free((char *)names[i]);
  free((void *)names);
}

static void free_cuda(rlx_custom_cuda_kernel *k, size_t n_in) {
  free((char *)k->source);
  free((char *)k->header);
  free_names(k->input_names, n_in);
  free_names(k->output_names, k->n_outputs);
  for (size_t i = 0; i < k->launch.n_template_args; i++) free((char *)k->launch.template_args[i].name);
}

/* A copy of names[0..n) (NULL on allocation failure). */
static const char *const *copy_names(const char *const *names, size_t n) {
  char **c = calloc(n ? n : 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++)
    if (!(c[i] = rlx_strdup(names[i]))) {
      free_names((const char *const *)c, i);
      return NULL;
    }
  return (const char *const *)c;
}

/* Deep copy of src into dst (strings and name arrays); false on allocation failure. */
static bool copy_cuda(const rlx_custom_cuda_kernel *src, size_t n_in, rlx_custom_cuda_kernel *dst) {
  *dst = *src;
  dst->source = rlx_strdup(src->source);
  dst->header = src->header ? rlx_strdup(src->header) : NULL;
  dst->input_names = copy_names(src->input_names, n_in);
  dst->output_names = copy_names(src->output_names, src->n_outputs);
  bool ok = dst->source && (!src->header || dst->header) && dst->input_names && dst->output_names;
  for (size_t i = 0; i < src->launch.n_template_args; i++) {
    dst->launch.template_args[i].name = rlx_strdup(src->launch.template_args[i].name);
    ok = ok && dst->launch.template_args[i].name;
  }
  if (ok) return true;
  free_cuda(dst, n_in);
  return false;
}

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static rlx_custom_entry **entries;
static size_t n_entries, cap_entries;

static void entry_unref(rlx_custom_entry *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  if (e->def.free_user_data) e->def.free_user_data(e->def.user_data);
  if (e->def.cuda) free_cuda(&e->cuda, (size_t)e->def.max_inputs);
  free((char *)e->def.name);
  free(e);
}

/* Index of `name` in the list (lock held), or n_entries. */
static size_t find(const char *name) {
  size_t i = 0;
  while (i < n_entries && strcmp(entries[i]->def.name, name)) i++;
  return i;
}

static bool is_identifier(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return false;
  return true;
}

static rlx_status *check_names(const char *what, const char *const *names, size_t n) {
  if (n && !names) return RLX_ERR(INVALID_ARGUMENT, "%s names are NULL", what);
  for (size_t i = 0; i < n; i++)
    if (!is_identifier(names[i]))
      return RLX_ERR(INVALID_ARGUMENT, "%s name %zu ('%s') is not a C identifier", what, i, names[i] ? names[i] : "(null)");
  return NULL;
}

rlx_status *rlx_custom_check_launch(const rlx_custom_cuda_launch *l) {
  int64_t threads = 1;
  for (int d = 0; d < 3; d++) {
    if (l->grid[d] < 1 || l->grid[d] > INT32_MAX)
      return RLX_ERR(INVALID_ARGUMENT, "grid[%d] is %lld; expected 1 to 2^31-1 threads", d, (long long)l->grid[d]);
    if (l->threadgroup[d] < 1 || l->threadgroup[d] > 1024)
      return RLX_ERR(INVALID_ARGUMENT, "threadgroup[%d] is %lld; expected 1 to 1024", d, (long long)l->threadgroup[d]);
    threads *= l->threadgroup[d];
  }
  if (threads > 1024) return RLX_ERR(INVALID_ARGUMENT, "a threadgroup of %lld threads; at most 1024", (long long)threads);
  if (l->shared_memory < 0 || l->shared_memory > 227 * 1024)
    return RLX_ERR(INVALID_ARGUMENT, "shared_memory is %d bytes; expected 0 to 227 KiB", (int)l->shared_memory);
  if (l->n_template_args > RLX_CUSTOM_MAX_TEMPLATE_ARGS)
    return RLX_ERR(INVALID_ARGUMENT, "%zu template arguments; at most %d", l->n_template_args, RLX_CUSTOM_MAX_TEMPLATE_ARGS);
  for (size_t i = 0; i < l->n_template_args; i++) {
    const rlx_custom_template_arg *t = &l->template_args[i];
    if (!is_identifier(t->name))
      return RLX_ERR(INVALID_ARGUMENT, "template argument %zu's name ('%s') is not a C identifier", i, t->name ? t->name : "(null)");
    if (t->kind == RLX_CUSTOM_TEMPLATE_INT ? t->i < INT32_MIN || t->i > INT32_MAX
                                           : t->kind == RLX_CUSTOM_TEMPLATE_DTYPE ? (unsigned)t->dtype >= RLX_DTYPE_COUNT
                                                                                  : t->kind != RLX_CUSTOM_TEMPLATE_BOOL)
      return RLX_ERR(INVALID_ARGUMENT, "template argument '%s' has a bad kind or value", t->name);
  }
  return NULL;
}

static rlx_status *check_cuda(const rlx_custom_cuda_kernel *k, int32_t min_in, int32_t max_in) {
  if (!k->source || !*k->source) return RLX_ERR(INVALID_ARGUMENT, "source is empty");
  if (min_in != max_in) return RLX_ERR(INVALID_ARGUMENT, "the op's arity [%d, %d] varies; a CUDA kernel needs a fixed one", (int)min_in, (int)max_in);
  if (k->n_outputs < 1 || k->n_outputs > RLX_MAX_NODE_OUTPUTS)
    return RLX_ERR(INVALID_ARGUMENT, "n_outputs is %zu; expected 1 to %d", k->n_outputs, RLX_MAX_NODE_OUTPUTS);
  RLX_TRY(check_names("input", k->input_names, (size_t)max_in));
  RLX_TRY(check_names("output", k->output_names, k->n_outputs));
  return k->launch_fn ? NULL : rlx_custom_check_launch(&k->launch);
}

static rlx_status *check_def(const rlx_custom_op_def *d) {
  if (!d) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_register: def is NULL");
  if (!d->name || !*d->name) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_register: the op needs a non-empty name");
  if (!d->infer) return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': infer (shape inference) is required", d->name);
  if (d->expand && d->host)
    return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': give a graph kernel (expand) or a host kernel, not both", d->name);
  if (!d->expand && !d->host && !d->cuda)
    return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': give a kernel (expand, host or cuda), got none", d->name);
  if (d->min_inputs < 0 || d->min_inputs > d->max_inputs || d->max_inputs > 256)
    return RLX_ERR(INVALID_ARGUMENT, "custom op '%s': arity [%d, %d] is outside 0 <= min <= max <= 256", d->name, (int)d->min_inputs,
                   (int)d->max_inputs);
  return d->cuda ? rlx_status_annotate(check_cuda(d->cuda, d->min_inputs, d->max_inputs), "custom op '%s': CUDA kernel", d->name)
                 : NULL;
}

static rlx_status *do_register(const rlx_custom_op_def *def, bool *out_replaced);

/* The built-in ops (src/kernels/) are registered once, before the registry is first used. */
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static rlx_status *builtins_error;
static void register_builtins(void) { builtins_error = rlx_kernel_register_batched_dense_solve(); }
static void builtins(void) { pthread_once(&builtins_once, register_builtins); }

rlx_status *rlx_custom_register_builtin(const rlx_custom_op_def *def) { return do_register(def, NULL); }

rlx_status *rlx_custom_op_register(const rlx_custom_op_def *def, bool *out_replaced) {
  builtins();
  return do_register(def, out_replaced);
}

static rlx_status *do_register(const rlx_custom_op_def *def, bool *out_replaced) {
  RLX_TRY(check_def(def));
  rlx_custom_entry *e = calloc(1, sizeof *e);
  char *name = rlx_strdup(def->name);
  if (!e || !name) {
    free(e);
    free(name);
    return RLX_OOM();
  }
  e->def = *def;
  e->def.name = name;
  if (def->cuda) {
    if (!copy_cuda(def->cuda, (size_t)def->max_inputs, &e->cuda)) {
      free(e);
      free(name);
      return RLX_OOM();
    }
    e->def.cuda = &e->cuda;
  }
  atomic_init(&e->refs, 1);
  rlx_custom_entry *old = NULL;
  pthread_rwlock_wrlock(&lock);
  size_t i = find(name);
  bool ok = i < n_entries || rlx_grow((void **)&entries, &cap_entries, n_entries + 1, sizeof *entries);
  if (ok) {
    if (i < n_entries) old = entries[i];
    else n_entries++;
    entries[i] = e;
  }
  pthread_rwlock_unlock(&lock);
  if (!ok) {
    e->def.free_user_data = NULL; /* the caller keeps user_data on failure */
    entry_unref(e);
    return RLX_OOM();
  }
  if (out_replaced) *out_replaced = old != NULL;
  if (old) entry_unref(old);
  return NULL;
}

rlx_status *rlx_custom_op_unregister(const char *name) {
  builtins();
  if (!name) return RLX_ERR(INVALID_ARGUMENT, "rlx_custom_op_unregister: name is NULL");
  rlx_custom_entry *old = NULL;
  pthread_rwlock_wrlock(&lock);
  size_t i = find(name);
  if (i < n_entries) {
    old = entries[i];
    entries[i] = entries[--n_entries];
    if (!n_entries) { /* nothing registered: release the list too */
      free(entries);
      entries = NULL;
      cap_entries = 0;
    }
  }
  pthread_rwlock_unlock(&lock);
  if (!old) return RLX_ERR(NOT_FOUND, "no custom op named '%s' is registered", name);
  entry_unref(old);
  return NULL;
}

bool rlx_custom_op_is_registered(const char *name) {
  const rlx_custom_entry *e = rlx_custom_acquire(name);
  rlx_custom_release(e);
  return e != NULL;
}

const rlx_custom_entry *rlx_custom_acquire(const char *name) {
  builtins();
  if (!name) return NULL;
  rlx_custom_entry *e = NULL;
  pthread_rwlock_rdlock(&lock);
  size_t i = find(name);
  if (i < n_entries) {
    e = entries[i];
    atomic_fetch_add(&e->refs, 1);
  }
  pthread_rwlock_unlock(&lock);
  return e;
}

void rlx_custom_release(const rlx_custom_entry *e) {
  if (e) entry_unref((rlx_custom_entry *)e);
}

const rlx_custom_op_def *rlx_custom_def(const rlx_custom_entry *e) { return &e->def; }

const rlx_attr *rlx_attr_find(size_t n_attrs, const rlx_attr *attrs, const char *name) {
  for (size_t i = 0; attrs && name && i < n_attrs; i++)
    if (attrs[i].name && strcmp(attrs[i].name, name) == 0) return &attrs[i];
  return NULL;
}

rlx_status *rlx_custom_attrs(const rlx_node *n, rlx_attr **out, size_t *count) {
  rlx_attr *a = calloc(n->n_attrs ? n->n_attrs : 1, sizeof *a);
  if (!a) return RLX_OOM();
  size_t k = 0;
  for (uint32_t i = 0; i < n->n_attrs; i++) {
    const rlx_attr_val *v = &n->attrs[i];
    if (strcmp(v->name, "name") == 0) continue;
    a[k++] = (rlx_attr){.name = v->name, .kind = v->kind, .i = v->i, .f = v->f, .n = v->n, .ints = v->ints,
                        .floats = v->floats, .s = v->s, .graph = v->graph};
  }
  *out = a;
  *count = k;
  return NULL;
}
