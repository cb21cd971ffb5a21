/* exec_memory.c: the allocation limit of executables (rlx_executable_set_max_allocation).
 *
 * MLX's CPU allocator returns NULL when malloc fails and MLX then writes through it, so rlx must
 * refuse what cannot be allocated before MLX tries. Two checks share the limit: the shim's
 * context refuses every array the lowering builds (outputs and temporaries, views counted at
 * their logical size) and the buffers MLX allocates inside the ops rlx calls (rlx_mx_set_max_allocation);
 * and here, before anything is lowered, every node output at the run's types is checked, which
 * also covers the replays of a shapeless compiled function (they build no array through rlx). The
 * same pass notes whether some node output has no elements (rlx_executable.empty_outputs). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mlx/exec.h"

#define ENV "RLX_MAX_ALLOCATION"

/* Parses "<digits>[K|M|G|T]" (binary multiples, case-insensitive) into a positive byte count. */
static bool parse_size(const char *s, size_t *out) {
  if (!isdigit((unsigned char)*s)) return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  static const char units[] = "KMGT";
  const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  int shift = u ? 10 * (int)(u - units + 1) : 0;
  end += u != NULL;
  if (errno || *end || !v || v > (SIZE_MAX >> shift)) return false;
  *out = (size_t)v << shift;
  return true;
}

rlx_status *rlx_exec_default_max_allocation(rlx_device device, size_t *out) {
  const char *env = getenv(ENV);
  if (!env || !*env) return *out = rlx_mx_device_memory(device == RLX_DEVICE_GPU ? RLX_MX_GPU : RLX_MX_CPU), NULL;
  if (!parse_size(env, out))
    return RLX_ERR(INVALID_ARGUMENT,
                   "environment variable " ENV ": '%s' is not a size (a positive number of bytes, optionally followed by K, M, G or T)",
                   env);
  return NULL;
}

rlx_status *rlx_exec_check_allocations(rlx_executable *ex) {
  const rlx_graph *g = ex->g;
  int64_t key = ex->rt == ex->ext_types ? ex->ext_actual : -1;
  if (ex->alloc_gen == ex->bind_gen && ex->alloc_key == key) return NULL;
  ex->empty_outputs = false;
  for (size_t k = 0; k < g->n_nodes; k++) {
    const rlx_node *n = &g->nodes[k];
    for (uint32_t o = 0; o < n->n_out; o++) {
      const rlx_type *t = &ex->rt[n->out0 + o];
      for (int d = 0; d < t->rank; d++) ex->empty_outputs |= t->dims[d] == 0;
      size_t nb = 0;
      rlx_status *size = rlx_type_nbytes(t, &nb);
      if (size) { /* more than a size_t holds (RESOURCE_EXHAUSTED): SIZE_MAX; a dim unknown until run time: unchecked */
        nb = rlx_status_code_of(size) == RLX_STATUS_RESOURCE_EXHAUSTED ? SIZE_MAX : 0;
        rlx_status_free(size);
      }
      if (nb <= ex->max_alloc) continue;
      char label[160];
      return RLX_ERR(RESOURCE_EXHAUSTED,
                     "%s: output %u of %s would take %s%zu bytes, more than the allocation limit of %zu bytes (" ENV
                     ", rlx_executable_set_max_allocation)",
                     rlx_node_label(g, n, label, sizeof label), o, RLX_TYPE_STR(t), nb == SIZE_MAX ? "more than " : "", nb,
                     ex->max_alloc);
    }
  }
  ex->alloc_gen = ex->bind_gen;
  ex->alloc_key = key;
  return NULL;
}

rlx_status *rlx_executable_set_max_allocation(rlx_executable *ex, size_t bytes) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_max_allocation: NULL executable");
  if (!bytes) RLX_TRY(rlx_exec_default_max_allocation(ex->device, &bytes));
  pthread_mutex_lock(&ex->mu);
  ex->max_alloc = bytes;
  ex->alloc_gen = 0;
  rlx_mx_set_max_allocation(ex->ctx, bytes);
  rlx_exec_drop_compiled(ex); /* its traces were checked against the old limit */
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

size_t rlx_executable_max_allocation(const rlx_executable *ex) {
  pthread_mutex_lock((pthread_mutex_t *)&ex->mu);
  size_t b = ex->max_alloc;
  pthread_mutex_unlock((pthread_mutex_t *)&ex->mu);
  return b;
}
