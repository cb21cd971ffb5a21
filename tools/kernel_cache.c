/* kernel_cache.c: the per-user cache of compiled mode's CPU kernels, and a progress line while
 * MLX compiles them (see kernel_cache.h). */
#include "kernel_cache.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* mkdir -p */
static rlx_status *make_dirs(const char *path) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "cache path too long: %s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p) continue;
    char c = *p;
    *p = 0;
    if (mkdir(buf, 0700) && errno != EEXIST)
      return rlx_status_make(RLX_STATUS_UNAVAILABLE, "cannot create the kernel cache directory %s: %s", buf, strerror(errno));
    if (!c) return NULL;
    *p = c;
  }
}

rlx_status *cli_kernel_cache_use(char *out_dir, size_t cap) {
  const char *rlx = getenv("RLX_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char base[4096];
  int n = rlx && *rlx   ? snprintf(base, sizeof base, "%s", rlx)
          : xdg && *xdg ? snprintf(base, sizeof base, "%s/rlx", xdg)
          : home && *home ? snprintf(base, sizeof base, "%s/.cache/rlx", home)
                          : -1;
  if (n < 0) return rlx_status_make(RLX_STATUS_UNAVAILABLE, "no kernel cache directory: RLX_CACHE_DIR, XDG_CACHE_HOME and HOME are unset");
  if (n >= (int)sizeof base) return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "cache path too long: %s", base);
  RLX_RETURN_IF_ERROR(make_dirs(base));
  if (snprintf(out_dir, cap, "%s/mlx/%s/cpu", base, rlx_mlx_version()) >= (int)cap)
    return rlx_status_make(RLX_STATUS_INVALID_ARGUMENT, "cache path too long: %s", base);
  if (setenv("TMPDIR", base, 1)) return rlx_status_make(RLX_STATUS_INTERNAL, "setenv TMPDIR: %s", strerror(errno));
  return NULL;
}

struct cli_jit_watch {
  const cli_args *a;
  char dir[4096];
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
};

/* Shared libraries in dir (0 when it does not exist yet). */
static int count_libs(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    n += len > 3 && !strcmp(e->d_name + len - 3, ".so");
  }
  closedir(d);
  return n;
}

static void *watch(void *ud) {
  cli_jit_watch *w = ud;
  int before = count_libs(w->dir), shown = before;
  double t0 = cli_now_s();
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    pthread_cond_timedwait(&w->cv, &w->mu, &until);
    if (w->stop) break;
    int now = count_libs(w->dir);
    if (now != shown)
      cli_progress(w->a, "compiling fused kernels with g++: %d new after %.0f s (cached in %s)", now - before, cli_now_s() - t0,
                   w->dir);
    shown = now;
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

cli_jit_watch *cli_jit_watch_start(const cli_args *a, const char *dir) {
  if (a->quiet) return NULL;
  cli_jit_watch *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->a = a;
  snprintf(w->dir, sizeof w->dir, "%s", dir);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, watch, w)) {
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return NULL;
  }
  return w;
}

void cli_jit_watch_stop(cli_jit_watch *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}
