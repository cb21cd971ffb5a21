/* dist.c: process groups over MLX's distributed backends (rlx/dist.h): backend choice and the
 * checks made before MLX sees anything, the timeout watchdog that aborts a group by shutting its
 * sockets down, and the host collectives. Point-to-point framing is in dist_p2p.c. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/util.h"
#include "dist/dist_impl.h"

#define MAX_SOCKETS 64

struct rlx_dist_group {
  rlx_dist_backend backend; /* concrete: ring, mpi, nccl or singleton */
  int rank, size;
  rlx_mx_group *mx;         /* NULL for the singleton */
  int socks[MAX_SOCKETS];   /* ring: the connections init opened (shut down to abort) */
  int n_socks;
  double timeout_s;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t watcher;
  bool has_watcher, stop;
  double deadline;          /* monotonic seconds; 0 = disarmed */
  bool expired;
  char *failure;            /* why the group was aborted (owned), NULL while healthy */
};

static pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
static rlx_dist_group *g_default;

static const char *const backend_names[] = {"any", "ring", "mpi", "nccl", "singleton"};

const char *rlx_dist_backend_name(rlx_dist_backend b) {
  return (unsigned)b < RLX_ARRAY_LEN(backend_names) ? backend_names[b] : "invalid";
}

rlx_status *rlx_dist_backend_from_name(const char *name, rlx_dist_backend *out) {
  for (int b = RLX_DIST_ANY; name && b <= RLX_DIST_NCCL; b++)
    if (strcmp(name, backend_names[b]) == 0) {
      *out = (rlx_dist_backend)b;
      return NULL;
    }
  return RLX_ERR(INVALID_ARGUMENT, "unknown distributed backend '%s' (expected any, ring, mpi or nccl)", name ? name : "(null)");
}

bool rlx_dist_is_available(rlx_dist_backend b) {
  if (b == RLX_DIST_ANY) return rlx_dist_is_available(RLX_DIST_RING) || rlx_dist_is_available(RLX_DIST_MPI) || rlx_dist_is_available(RLX_DIST_NCCL);
  if (b < RLX_DIST_RING || b > RLX_DIST_NCCL) return false;
  return rlx_mx_dist_available(backend_names[b]);
}

static double now_s(void) { return (double)rlx_now_ns() * 1e-9; }

static double env_timeout(void) {
  const char *s = getenv("RLX_DIST_TIMEOUT");
  char *end;
  double v = s ? strtod(s, &end) : 0;
  return s && *end == '\0' && v > 0 && isfinite(v) ? v : 120.0;
}

/* ---- launcher detection and the checks made before MLX ---- */

static bool has_env(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

static bool launched_by(rlx_dist_backend b) {
  switch (b) {
    case RLX_DIST_RING: return has_env("MLX_HOSTFILE") && has_env("MLX_RANK");
    case RLX_DIST_MPI: return has_env("OMPI_COMM_WORLD_SIZE") || has_env("PMIX_RANK");
    case RLX_DIST_NCCL: return has_env("NCCL_HOST_IP") && has_env("NCCL_PORT") && has_env("MLX_RANK") && has_env("MLX_WORLD_SIZE");
    default: return false;
  }
}

static const char *launcher_vars(rlx_dist_backend b) {
  switch (b) {
    case RLX_DIST_RING: return "MLX_HOSTFILE and MLX_RANK (rlx launch sets them)";
    case RLX_DIST_MPI: return "OMPI_COMM_WORLD_SIZE or PMIX_RANK (mpirun sets them)";
    default: return "NCCL_HOST_IP, NCCL_PORT, MLX_RANK and MLX_WORLD_SIZE";
  }
}

/* An integer environment variable in [lo, hi). */
static rlx_status *env_int(const char *name, long lo, long hi, long *out) {
  const char *s = getenv(name);
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v >= hi)
    return RLX_ERR(INVALID_ARGUMENT, "%s='%s' is not an integer in [%ld, %ld)", name, s, lo, hi);
  *out = v;
  return NULL;
}

/* Validates a ring hostfile (the form rlx/dist.h gives) and returns its number of ranks. */
static rlx_status *check_hostfile(const char *path, long *out_n) {
  unsigned char *text;
  size_t len;
  RLX_TRY(rlx_read_file(path, &text, &len));
  cJSON *j = cJSON_ParseWithLength((const char *)text, len);
  free(text);
  rlx_status *st = NULL;
  int per = -1;
  if (!j || !cJSON_IsArray(j) || cJSON_GetArraySize(j) < 1)
    st = RLX_ERR(INVALID_ARGUMENT, "not a JSON list of ranks' address lists");
  for (int r = 0; !st && r < cJSON_GetArraySize(j); r++) {
    cJSON *h = cJSON_GetArrayItem(j, r);
    int n = cJSON_IsArray(h) ? cJSON_GetArraySize(h) : -1;
    if (n < 1) st = RLX_ERR(INVALID_ARGUMENT, "rank %d: not a non-empty list of \"host:port\" strings", r);
    else if (per >= 0 && n != per) st = RLX_ERR(INVALID_ARGUMENT, "rank %d has %d addresses, rank 0 has %d (every rank needs as many)", r, n, per);
    per = n;
    for (int i = 0; !st && i < n; i++) {
      const char *a = cJSON_GetStringValue(cJSON_GetArrayItem(h, i));
      const char *colon = a ? strrchr(a, ':') : NULL;
      char *end;
      long port = colon ? strtol(colon + 1, &end, 10) : 0;
      if (!colon || colon == a || colon[1] == '\0' || *end || port < 1 || port > 65535)
        st = RLX_ERR(INVALID_ARGUMENT, "rank %d address %d: '%s' is not \"host:port\" with a port in 1..65535", r, i, a ? a : "(not a string)");
    }
  }
  if (!st) *out_n = cJSON_GetArraySize(j);
  cJSON_Delete(j);
  return rlx_status_annotate(st, "MLX_HOSTFILE '%s'", path);
}

/* Resolves RLX_DIST_ANY and checks the chosen backend's variables. *out = SINGLETON when there is
 * no launcher (or a one-rank hostfile) and that is allowed. */
static rlx_status *choose(rlx_dist_backend want, bool strict, rlx_dist_backend *out) {
  rlx_dist_backend b = want;
  if (want == RLX_DIST_ANY) {
    b = RLX_DIST_SINGLETON;
    if (launched_by(RLX_DIST_NCCL) && rlx_dist_is_available(RLX_DIST_NCCL)) b = RLX_DIST_NCCL;
    else if (launched_by(RLX_DIST_RING)) b = RLX_DIST_RING;
    else if (launched_by(RLX_DIST_MPI)) b = RLX_DIST_MPI;
    if (b == RLX_DIST_SINGLETON && strict)
      return RLX_ERR(UNAVAILABLE, "strict distributed init: no launcher found (ring needs %s; mpi %s; nccl %s)", launcher_vars(RLX_DIST_RING),
                     launcher_vars(RLX_DIST_MPI), launcher_vars(RLX_DIST_NCCL));
  } else if (want < RLX_DIST_RING || want > RLX_DIST_NCCL) {
    return RLX_ERR(INVALID_ARGUMENT, "distributed backend %d is not one of any, ring, mpi, nccl", (int)want);
  } else if (!launched_by(want)) {
    if (strict) return RLX_ERR(UNAVAILABLE, "strict distributed init: the %s backend needs %s", backend_names[want], launcher_vars(want));
    b = RLX_DIST_SINGLETON;
  }
  if (b != RLX_DIST_SINGLETON && !rlx_dist_is_available(b)) {
    if (strict || want != RLX_DIST_ANY)
      return RLX_ERR(UNAVAILABLE, "this MLX build (%s) has no usable %s backend%s", rlx_mlx_version(), backend_names[b],
                     b == RLX_DIST_MPI ? " (libmpi.so could not be loaded: install Open MPI, or set MLX_MPI_LIBNAME)"
                     : b == RLX_DIST_NCCL ? " (NCCL needs an mlx-cuda build)" : "");
    b = RLX_DIST_SINGLETON;
  }
  long n, r;
  if (b == RLX_DIST_RING) {
    RLX_TRY(check_hostfile(getenv("MLX_HOSTFILE"), &n));
    RLX_TRY(env_int("MLX_RANK", 0, n, &r));
    if (n == 1) b = RLX_DIST_SINGLETON;
  } else if (b == RLX_DIST_NCCL) {
    RLX_TRY(env_int("MLX_WORLD_SIZE", 1, INT_MAX, &n));
    RLX_TRY(env_int("MLX_RANK", 0, n, &r));
  }
  *out = b;
  return NULL;
}

/* ---- sockets: the ring's connections are the sockets that appear while MLX initializes ---- */

typedef struct fdset {
  int fd[1024];
  int n;
} fdset;

static bool is_socket(int fd) {
  struct stat s;
  return fstat(fd, &s) == 0 && S_ISSOCK(s.st_mode);
}

static void list_sockets(fdset *s) {
  s->n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) && s->n < (int)RLX_ARRAY_LEN(s->fd)) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == dirfd(d)) continue;
    if (is_socket((int)fd)) s->fd[s->n++] = (int)fd;
  }
  closedir(d);
}

static bool in_set(const fdset *s, int fd) {
  for (int i = 0; i < s->n; i++)
    if (s->fd[i] == fd) return true;
  return false;
}

/* Sockets open now that were not in `before`. */
static void new_sockets(const fdset *before, fdset *out) {
  fdset now;
  list_sockets(&now);
  out->n = 0;
  for (int i = 0; i < now.n; i++)
    if (!in_set(before, now.fd[i])) out->fd[out->n++] = now.fd[i];
}

/* Bounds MLX's ring init (accept() waits forever for a rank that never starts): after the
 * timeout, the sockets init opened are shut down, which makes accept() fail. */
typedef struct init_watch {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done, fired;
  double deadline;
  const fdset *before;
} init_watch;

static void *init_watcher(void *arg) {
  init_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    double left = w->deadline - now_s();
    if (left <= 0) {
      fdset fresh;
      new_sockets(w->before, &fresh);
      for (int i = 0; i < fresh.n; i++) shutdown(fresh.fd[i], SHUT_RDWR);
      w->fired = true;
      left = 0.2; /* repeat: a connect retry may open another socket */
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + left;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* MLX's ring writes to its sockets without MSG_NOSIGNAL: a peer that died would end this process
 * with SIGPIPE instead of failing the collective. Ignore SIGPIPE unless the program handles it. */
static void ignore_sigpipe(void) {
  struct sigaction old;
  if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

static rlx_status *mlx_init(rlx_dist_group *g) {
  if (g->backend == RLX_DIST_RING) ignore_sigpipe();
  fdset before;
  list_sockets(&before);
  init_watch w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .deadline = now_s() + g->timeout_s, .before = &before};
  pthread_t th;
  bool watching = g->backend == RLX_DIST_RING && pthread_create(&th, NULL, init_watcher, &w) == 0;
  rlx_status *st = rlx_mx_dist_init(backend_names[g->backend], &g->mx, &g->rank, &g->size);
  if (watching) {
    pthread_mutex_lock(&w.mu);
    w.done = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
  }
  if (st && w.fired)
    st = rlx_status_annotate(st, "no ring connection within %g s (RLX_DIST_TIMEOUT; is every rank running?)", g->timeout_s);
  if (!st && g->backend == RLX_DIST_RING) {
    fdset fresh;
    new_sockets(&before, &fresh);
    for (int i = 0; i < fresh.n && g->n_socks < MAX_SOCKETS; i++) g->socks[g->n_socks++] = fresh.fd[i];
  }
  return st;
}

static rlx_dist_group *group_new(rlx_dist_backend b) {
  rlx_dist_group *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->backend = b;
  g->size = 1;
  g->timeout_s = env_timeout();
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  return g;
}

static void group_delete(rlx_dist_group *g) {
  if (g->has_watcher) {
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->watcher, NULL);
  }
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  rlx_mx_group_free(g->mx);
  free(g->failure);
  free(g);
}

rlx_status *rlx_dist_init(rlx_dist_backend backend, bool strict, rlx_dist_group **out) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_init: out is NULL");
  pthread_mutex_lock(&g_init_mu);
  rlx_dist_backend b = RLX_DIST_SINGLETON;
  rlx_status *st = choose(backend, strict, &b);
  rlx_dist_group *g = st ? NULL : group_new(b);
  if (!st && !g) st = RLX_OOM();
  if (!st && b != RLX_DIST_SINGLETON) st = mlx_init(g);
  if (st) {
    if (g) group_delete(g);
  } else {
    if (!g_default) g_default = g;
    *out = g;
  }
  pthread_mutex_unlock(&g_init_mu);
  return rlx_status_annotate(st, "distributed init (%s)", rlx_dist_backend_name(backend));
}

void rlx_dist_group_free(rlx_dist_group *g) {
  if (!g) return;
  pthread_mutex_lock(&g_init_mu);
  if (g_default == g) g_default = NULL;
  pthread_mutex_unlock(&g_init_mu);
  group_delete(g);
}

rlx_dist_group *rlx_dist_default_group(void) {
  pthread_mutex_lock(&g_init_mu);
  rlx_dist_group *g = g_default;
  pthread_mutex_unlock(&g_init_mu);
  return g;
}

int rlx_dist_group_rank(const rlx_dist_group *g) { return g->rank; }
int rlx_dist_group_size(const rlx_dist_group *g) { return g->size; }
rlx_dist_backend rlx_dist_group_backend(const rlx_dist_group *g) { return g->backend; }
rlx_mx_group *rlx_dist_mx(const rlx_dist_group *g) { return g->mx; }

rlx_status *rlx_dist_group_set_timeout(rlx_dist_group *g, double seconds) {
  if (!g || !(seconds > 0) || !isfinite(seconds))
    return RLX_ERR(INVALID_ARGUMENT, "distributed timeout must be a finite number of seconds > 0, got %g", seconds);
  pthread_mutex_lock(&g->mu);
  g->timeout_s = seconds;
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

rlx_status *rlx_dist_split(rlx_dist_group *g, int color, int key, rlx_dist_group **out) {
  if (!g || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_split: NULL argument");
  if (g->backend == RLX_DIST_RING) return RLX_ERR(UNIMPLEMENTED, "the ring backend cannot split a group (MLX: \"[ring] Group split not supported\")");
  rlx_dist_group *s = group_new(g->backend);
  if (!s) return RLX_OOM();
  s->timeout_s = g->timeout_s;
  rlx_status *st = NULL;
  if (g->mx) {
    rlx_dist_watch_begin(g);
    st = rlx_dist_watch_end(g, rlx_mx_dist_split(g->mx, color, key, &s->mx, &s->rank, &s->size));
  }
  if (st) {
    group_delete(s);
    return st;
  }
  *out = s;
  return NULL;
}

/* ---- failure, abort and the timeout watchdog ---- */

/* Records the first failure and shuts the group's sockets down (mu held). */
static void abort_locked(rlx_dist_group *g, const char *why) {
  if (!g->failure) g->failure = rlx_strdup(why);
  for (int i = 0; i < g->n_socks; i++) shutdown(g->socks[i], SHUT_RDWR);
}

static void *watcher(void *arg) {
  rlx_dist_group *g = arg;
  pthread_mutex_lock(&g->mu);
  while (!g->stop) {
    if (g->deadline > 0 && now_s() >= g->deadline) {
      char why[128];
      snprintf(why, sizeof why, "no completion within the timeout of %g s (rlx_dist_group_set_timeout, RLX_DIST_TIMEOUT)", g->timeout_s);
      g->expired = true;
      g->deadline = 0;
      abort_locked(g, why);
      continue;
    }
    /* polls every 50 ms, so that arming and disarming (every run) never wake this thread */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&g->cv, &g->mu, &ts);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

/* Errors that can leave the other ranks waiting in a collective: those raised while MLX ran it.
 * Checks made before any communication (bad arguments, unsupported ops, preconditions) fail the
 * same way on every rank and leave the group usable. */
static bool aborts(rlx_status_code code) {
  return code == RLX_STATUS_INTERNAL || code == RLX_STATUS_UNAVAILABLE || code == RLX_STATUS_RESOURCE_EXHAUSTED ||
         code == RLX_STATUS_DATA_LOSS;
}

void rlx_dist_watch_begin(rlx_dist_group *g) {
  pthread_mutex_lock(&g->mu);
  if (!g->has_watcher && g->mx) g->has_watcher = pthread_create(&g->watcher, NULL, watcher, g) == 0;
  g->expired = false;
  g->deadline = now_s() + g->timeout_s;
  pthread_mutex_unlock(&g->mu);
}

rlx_status *rlx_dist_watch_end(rlx_dist_group *g, rlx_status *st) {
  pthread_mutex_lock(&g->mu);
  g->deadline = 0;
  if (g->expired) {
    rlx_status_free(st);
    st = RLX_ERR(UNAVAILABLE, "%s group (rank %d of %d): %s", backend_names[g->backend], g->rank, g->size, g->failure);
  } else if (st && aborts(rlx_status_code_of(st))) {
    abort_locked(g, rlx_status_message(st));
    rlx_status *un = RLX_ERR(UNAVAILABLE, "%s group (rank %d of %d) aborted: %s", backend_names[g->backend], g->rank, g->size,
                             rlx_status_message(st));
    rlx_status_free(st);
    st = un;
  }
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* ---- checks ---- */

static const char *const coll_names[] = {"all_sum", "all_max", "all_min", "all_gather", "sum_scatter"};

static bool nccl_dtype(rlx_dtype d) {
  switch (d) {
    case RLX_DTYPE_I8: case RLX_DTYPE_U8: case RLX_DTYPE_I32: case RLX_DTYPE_U32: case RLX_DTYPE_I64: case RLX_DTYPE_U64:
    case RLX_DTYPE_F16: case RLX_DTYPE_BF16: case RLX_DTYPE_F32: return true; /* NCCL has float64, MLX's CUDA backend not */
    default: return false;
  }
}

rlx_status *rlx_dist_check_failed(const rlx_dist_group *g) {
  rlx_dist_group *m = (rlx_dist_group *)g;
  pthread_mutex_lock(&m->mu);
  rlx_status *st = g->failure ? RLX_ERR(UNAVAILABLE, "%s group (rank %d of %d) failed earlier: %s", backend_names[g->backend], g->rank,
                                        g->size, g->failure)
                              : NULL;
  pthread_mutex_unlock(&m->mu);
  return st;
}

rlx_status *rlx_dist_check(const rlx_dist_group *g, rlx_mx_coll kind, const rlx_type *t) {
  RLX_TRY(rlx_dist_check_failed(g));
  const char *b = backend_names[g->backend], *op = coll_names[kind];
  if (kind == RLX_MXC_SUM_SCATTER && (t->rank < 1 || t->dims[0] % g->size))
    return RLX_ERR(INVALID_ARGUMENT, "sum_scatter needs rank >= 1 and axis 0 a multiple of the group size %d; got %s", g->size,
                   RLX_TYPE_STR(t));
  if (g->size == 1) return NULL;
  int64_t numel = 1;
  for (int i = 0; i < t->rank; i++) numel *= t->dims[i];
  bool reduce = kind <= RLX_MXC_ALL_MIN;
  if (reduce && rlx_dtype_is_lowp(t->dtype))
    return RLX_ERR(UNIMPLEMENTED, "%s of %s: a storage type without arithmetic on the device (cast to a float type first)", op,
                   rlx_dtype_name(t->dtype));
  switch (g->backend) {
    case RLX_DIST_RING:
      if (kind == RLX_MXC_SUM_SCATTER) return RLX_ERR(UNIMPLEMENTED, "the ring backend has no %s (MLX 0.32)", op);
      if (reduce && numel < g->size && (int64_t)rlx_dtype_size(t->dtype) * g->size > 1024)
        return RLX_ERR(UNIMPLEMENTED, "the ring backend's %s of %lld elements (fewer than the %d ranks) needs ranks * element size <= 1024 bytes",
                       op, (long long)numel, g->size);
      return NULL;
    case RLX_DIST_MPI:
      if (kind == RLX_MXC_SUM_SCATTER) return RLX_ERR(UNIMPLEMENTED, "the mpi backend has no %s (MLX 0.32)", op);
      if (reduce && t->dtype == RLX_DTYPE_BOOL) return RLX_ERR(UNIMPLEMENTED, "the mpi backend has no %s of bool (MPI_C_BOOL takes logical ops only)", op);
      if (numel > INT_MAX) return RLX_ERR(UNIMPLEMENTED, "the mpi backend's %s takes at most INT_MAX elements, got %lld", op, (long long)numel);
      return NULL;
    case RLX_DIST_NCCL:
      if (!nccl_dtype(t->dtype)) return RLX_ERR(UNIMPLEMENTED, "the nccl backend has no %s of %s", op, rlx_dtype_name(t->dtype));
      return NULL;
    default: return RLX_ERR(INTERNAL, "%s group cannot run %s", b, op);
  }
}

/* ---- host collectives ---- */

/* The result type of collective `kind` on t. */
static rlx_type coll_type(const rlx_dist_group *g, rlx_mx_coll kind, const rlx_type *t) {
  rlx_type r = *t;
  if (kind == RLX_MXC_ALL_GATHER) {
    if (r.rank == 0) r.rank = 1, r.dims[0] = 1;
    r.dims[0] *= g->size;
  } else if (kind == RLX_MXC_SUM_SCATTER) {
    r.dims[0] /= g->size;
  }
  return r;
}

static rlx_status *host_collective(rlx_dist_group *g, rlx_mx_coll kind, const rlx_tensor *x, rlx_tensor **out) {
  if (!g || !x || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_%s: NULL argument", coll_names[kind]);
  const rlx_type *t = rlx_tensor_type(x);
  RLX_TRY(rlx_status_annotate(rlx_dist_check(g, kind, t), "rlx_dist_%s", coll_names[kind]));
  rlx_type rt = coll_type(g, kind, t);
  if (g->size == 1 || rlx_tensor_nbytes(x) == 0) /* identity, or nothing to move */
    return rlx_tensor_create(rt.dtype, rt.rank, rt.dims, g->size == 1 ? rlx_tensor_cdata(x) : NULL, rlx_tensor_nbytes(x), out);
  rlx_tensor *res;
  RLX_TRY(rlx_tensor_create(rt.dtype, rt.rank, rt.dims, NULL, 0, &res));
  rlx_mx *c;
  rlx_status *st = rlx_mx_create(g->backend == RLX_DIST_NCCL ? RLX_MX_GPU : RLX_MX_CPU, &c);
  if (!st) {
    rlx_mx_arr *a = rlx_mx_dist_collective(c, g->mx, kind, rlx_mx_from_bytes(c, rlx_tensor_cdata(x), t));
    rlx_dist_watch_begin(g);
    rlx_mx_to_host(c, a, rlx_tensor_data(res), rlx_tensor_nbytes(res));
    st = rlx_dist_watch_end(g, rlx_mx_take_error(c));
    rlx_mx_free(c);
  }
  if (st) {
    rlx_tensor_free(res);
    return rlx_status_annotate(st, "rlx_dist_%s", coll_names[kind]);
  }
  *out = res;
  return NULL;
}

rlx_status *rlx_dist_all_sum(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out) { return host_collective(g, RLX_MXC_ALL_SUM, x, out); }
rlx_status *rlx_dist_all_max(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out) { return host_collective(g, RLX_MXC_ALL_MAX, x, out); }
rlx_status *rlx_dist_all_min(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out) { return host_collective(g, RLX_MXC_ALL_MIN, x, out); }
rlx_status *rlx_dist_all_gather(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out) {
  return host_collective(g, RLX_MXC_ALL_GATHER, x, out);
}
rlx_status *rlx_dist_sum_scatter(rlx_dist_group *g, const rlx_tensor *x, rlx_tensor **out) {
  return host_collective(g, RLX_MXC_SUM_SCATTER, x, out);
}

rlx_status *rlx_dist_barrier(rlx_dist_group *g) {
  if (!g) return RLX_ERR(INVALID_ARGUMENT, "rlx_dist_barrier: NULL group");
  int32_t one = 1;
  int64_t dim = 1;
  rlx_tensor *x, *y = NULL;
  RLX_TRY(rlx_tensor_wrap(RLX_DTYPE_I32, 1, &dim, &one, sizeof one, &x));
  rlx_status *st = host_collective(g, RLX_MXC_ALL_SUM, x, &y);
  rlx_tensor_free(x);
  rlx_tensor_free(y);
  return rlx_status_annotate(st, "barrier");
}
