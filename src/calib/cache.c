/* cache.c: the calibration cache (rlx/calibrate.h): one JSON file per device, written atomically
 * (a temporary file in the same directory, then rename(2)). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "calib/calib.h"
#include "rlx/rlx.h"

/* FNV-1a (Fowler, Noll, Vo) over n bytes, continuing from h. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
  return h;
}

void rlx_calib_build(char *buf, size_t cap) {
  Dl_info info;
  struct stat sb;
  uint64_t h = 0xcbf29ce484222325ull;
  /* the file holding this code: librlx.so, or the program it is linked into */
  if (dladdr((void *)(uintptr_t)rlx_calib_build, &info) && info.dli_fname && !stat(info.dli_fname, &sb)) {
    int64_t id[] = {(int64_t)sb.st_dev, (int64_t)sb.st_ino, (int64_t)sb.st_size, (int64_t)sb.st_mtim.tv_sec, (int64_t)sb.st_mtim.tv_nsec};
    h = fnv1a(h, id, sizeof id);
  }
  snprintf(buf, cap, "%s+%016llx", RLX_VERSION, (unsigned long long)h);
}

rlx_status *rlx_calibration_cache_path(rlx_device device, const char *cache_dir, char *buf, size_t cap) {
  if (!buf) return RLX_ERR(INVALID_ARGUMENT, "rlx_calibration_cache_path: NULL buf");
  if (device == RLX_DEVICE_GPU && !rlx_gpu_available()) return RLX_ERR(UNAVAILABLE, "no GPU: no calibration cache for it");
  char dir[4096];
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (cache_dir) snprintf(dir, sizeof dir, "%s", cache_dir);
  else if (xdg && *xdg) snprintf(dir, sizeof dir, "%s/rlx", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/rlx", home);
  else return RLX_ERR(UNAVAILABLE, "no calibration cache directory: neither XDG_CACHE_HOME nor HOME is set");
  char name[128];
  rlx_calib_device_name(device, name, sizeof name);
  for (char *p = name; *p; p++)
    if (!isalnum((unsigned char)*p)) *p = '_';
  int n = snprintf(NULL, 0, "%s/mlx-calib-%s.json", dir, name);
  if (n < 0 || (size_t)n >= cap) return RLX_ERR(OUT_OF_RANGE, "calibration cache path longer than %zu bytes", cap);
  snprintf(buf, cap, "%s/mlx-calib-%s.json", dir, name);
  return NULL;
}

/* Copies string member `key` into dst (cap bytes). */
static rlx_status *json_string(const cJSON *root, const char *path, const char *key, char *dst, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
    return RLX_ERR(DATA_LOSS, "calibration file '%s': \"%s\" is missing or not a string of under %zu bytes", path, key, cap);
  snprintf(dst, cap, "%s", v->valuestring);
  return NULL;
}

/* Checks a recorded identity string against the current one. */
static rlx_status *check_same(const char *path, const char *what, const char *got, const char *want) {
  if (strcmp(got, want))
    return RLX_ERR(FAILED_PRECONDITION, "calibration file '%s' is for %s '%s', not '%s'", path, what, got, want);
  return NULL;
}

static rlx_status *parse_calibration(const cJSON *root, const char *path, rlx_device device, rlx_calibration *cal) {
  if (!cJSON_IsObject(root)) return RLX_ERR(DATA_LOSS, "calibration file '%s': not a JSON object", path);
  RLX_TRY(json_string(root, path, "device_name", cal->device_name, sizeof cal->device_name));
  RLX_TRY(json_string(root, path, "mlx_version", cal->mlx_version, sizeof cal->mlx_version));
  RLX_TRY(json_string(root, path, "rlx_version", cal->rlx_version, sizeof cal->rlx_version));
  RLX_TRY(json_string(root, path, "precision", cal->precision, sizeof cal->precision));
#define RLX_X(field, unit, what)                                                                                        \
  {                                                                                                                     \
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, #field);                                                    \
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0)                                        \
      return RLX_ERR(DATA_LOSS, "calibration file '%s': \"%s\" is missing or not a finite positive number", path, #field); \
    cal->field = v->valuedouble;                                                                                        \
  }
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
  char name[128];
  rlx_calib_device_name(device, name, sizeof name);
  RLX_TRY(check_same(path, "device", cal->device_name, name));
  RLX_TRY(check_same(path, "MLX", cal->mlx_version, rlx_mlx_version()));
  char build[sizeof cal->rlx_version];
  rlx_calib_build(build, sizeof build);
  return check_same(path, "rlx build", cal->rlx_version, build);
}

rlx_status *rlx_calibration_load(const char *path, rlx_device device, rlx_calibration *out) {
  if (!path || !out) return RLX_ERR(INVALID_ARGUMENT, "rlx_calibration_load: NULL argument");
  unsigned char *data = NULL;
  size_t len = 0;
  RLX_TRY(rlx_read_file(path, &data, &len));
  cJSON *root = cJSON_ParseWithLength((const char *)data, len);
  free(data);
  if (!root) return RLX_ERR(DATA_LOSS, "calibration file '%s' is not valid JSON (corrupt or truncated)", path);
  rlx_calibration cal = {0};
  rlx_status *st = parse_calibration(root, path, device, &cal);
  cJSON_Delete(root);
  if (!st) *out = cal;
  return st;
}

/* Creates `dir` and its missing parents. */
static rlx_status *make_dirs(const char *dir) {
  char buf[4096];
  int n = snprintf(buf, sizeof buf, "%s", dir);
  if (n < 0 || (size_t)n >= sizeof buf) return RLX_ERR(UNAVAILABLE, "directory name too long: '%s'", dir);
  for (char *p = buf + 1;; p++) {
    bool end = !*p;
    if (*p != '/' && !end) continue;
    *p = '\0';
    if (mkdir(buf, 0777) && errno != EEXIST) return RLX_ERR(UNAVAILABLE, "cannot create directory '%s': %s", buf, strerror(errno));
    if (end) return NULL;
    *p = '/';
  }
}

static char *to_json(const rlx_calibration *cal) {
  cJSON *root = cJSON_CreateObject();
  bool ok = root && cJSON_AddStringToObject(root, "device_name", cal->device_name) &&
            cJSON_AddStringToObject(root, "mlx_version", cal->mlx_version) &&
            cJSON_AddStringToObject(root, "rlx_version", cal->rlx_version) &&
            cJSON_AddStringToObject(root, "precision", cal->precision);
#define RLX_X(field, unit, what) ok = ok && cJSON_AddNumberToObject(root, #field, cal->field);
  RLX_CALIBRATION_FIGURES(RLX_X)
#undef RLX_X
  char *text = ok ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  return text;
}

rlx_status *rlx_calibration_save(const rlx_calibration *cal, const char *path) {
  if (!cal || !path) return RLX_ERR(INVALID_ARGUMENT, "rlx_calibration_save: NULL argument");
  char dir[4096], tmp[4200];
  int n = snprintf(dir, sizeof dir, "%s", path);
  if (n < 0 || (size_t)n >= sizeof dir) return RLX_ERR(UNAVAILABLE, "path too long: '%s'", path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    RLX_TRY(make_dirs(dir));
  }
  char *text = to_json(cal);
  if (!text) return RLX_OOM();
  snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(text);
    return RLX_ERR(UNAVAILABLE, "cannot write a temporary file beside '%s': %s", path, strerror(errno));
  }
  size_t len = strlen(text), done = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  free(text);
  int saved_errno = errno;
  /* 0644 (mkstemp makes 0600): a cache others on the machine may read */
  bool ok = done == len && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
  if (!ok) saved_errno = errno;
  if (close(fd) && ok) ok = false, saved_errno = errno;
  if (ok && rename(tmp, path)) ok = false, saved_errno = errno;
  if (!ok) {
    unlink(tmp);
    return RLX_ERR(UNAVAILABLE, "cannot write calibration file '%s': %s", path, strerror(saved_errno));
  }
  return NULL;
}

/* Reports st's message (with `then`, what happens next) through opts->warn or stderr; frees st. */
static void warn(const rlx_calibrate_options *opts, rlx_status *st, const char *then) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s%s", rlx_status_message(st), then);
  if (opts && opts->warn) opts->warn(opts->ud, msg);
  else fprintf(stderr, "rlx: warning: %s\n", msg);
  rlx_status_free(st);
}

rlx_status *rlx_calibration_get(rlx_device device, const rlx_calibrate_options *opts, rlx_calibration *out,
                                bool *out_measured) {
  if (!out) return RLX_ERR(INVALID_ARGUMENT, "rlx_calibration_get: NULL out");
  char path[4352] = "";
  bool cached = !(opts && opts->no_cache);
  if (cached) {
    rlx_status *st = rlx_calibration_cache_path(device, opts ? opts->cache_dir : NULL, path, sizeof path);
    if (st && rlx_status_code_of(st) == RLX_STATUS_UNAVAILABLE && device == RLX_DEVICE_GPU) return st; /* no GPU */
    if (st) warn(opts, st, "; not caching"), cached = false;
  }
  if (cached && !(opts && opts->force)) {
    rlx_calibration cal;
    rlx_status *st = rlx_calibration_load(path, device, &cal);
    const char *want = rlx_calib_precision_name(device, opts);
    if (!st && strcmp(cal.precision, want)) st = check_same(path, "precision", cal.precision, want);
    if (!st) {
      *out = cal;
      if (out_measured) *out_measured = false;
      return NULL;
    }
    if (rlx_status_code_of(st) == RLX_STATUS_NOT_FOUND) rlx_status_free(st);
    else warn(opts, st, "; measuring again");
  }
  rlx_calibration cal;
  RLX_TRY(rlx_calibration_measure(device, opts, &cal));
  if (cached) {
    rlx_status *st = rlx_calibration_save(&cal, path);
    if (st) warn(opts, st, "");
  }
  *out = cal;
  if (out_measured) *out_measured = true;
  return NULL;
}
