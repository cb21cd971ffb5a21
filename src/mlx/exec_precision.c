/* exec_precision.c: float32 precision of GPU matmuls and convolutions (full fp32 or TF32).
 *
 * MLX's CUDA backend reads MLX_ENABLE_TF32 once per process (mlx/utils.h env::enable_tf32: a
 * function-local static initialized with atoi(getenv(...)), default 1) at its first float32 matmul
 * (cublas_gemm.cpp: CUBLAS_COMPUTE_32F_FAST_TF32 vs CUBLAS_COMPUTE_32F) or convolution (conv.cpp:
 * the cuDNN TENSOR_CORE numerical note deselected when off), and caches its plans. The setting is
 * thus per process: the first GPU run through rlx fixes it here, under a process-wide lock,
 * before MLX can read it, and later GPU runs must agree. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mlx/exec.h"

#define TF32_ENV "MLX_ENABLE_TF32"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rlx_precision g_fixed = RLX_PRECISION_DEFAULT; /* DEFAULT: not fixed yet */

const char *rlx_precision_name(rlx_precision p) {
  switch (p) {
    case RLX_PRECISION_DEFAULT: return "default";
    case RLX_PRECISION_FP32: return "fp32";
    case RLX_PRECISION_TF32: return "tf32";
    default: return "invalid";
  }
}

rlx_status *rlx_precision_from_name(const char *s, rlx_precision *out) {
  static const rlx_precision all[] = {RLX_PRECISION_FP32, RLX_PRECISION_TF32, RLX_PRECISION_DEFAULT};
  for (size_t i = 0; s && out && i < RLX_ARRAY_LEN(all); i++)
    if (strcasecmp(s, rlx_precision_name(all[i])) == 0) return *out = all[i], NULL;
  return RLX_ERR(INVALID_ARGUMENT, "unknown precision '%s' (expected fp32, tf32 or default)", s ? s : "(null)");
}

rlx_precision rlx_exec_default_precision(void) {
  const char *env = getenv(TF32_ENV); /* parsed as MLX parses it (atoi) */
  return env && atoi(env) ? RLX_PRECISION_TF32 : RLX_PRECISION_FP32;
}

static rlx_status *resolve(rlx_precision p, rlx_precision *out) {
  if (p == RLX_PRECISION_FP32 || p == RLX_PRECISION_TF32) return *out = p, NULL;
  if (p != RLX_PRECISION_DEFAULT) return RLX_ERR(INVALID_ARGUMENT, "invalid precision %d", (int)p);
  return *out = rlx_exec_default_precision(), NULL;
}

static rlx_status *conflict(rlx_precision want) {
  return RLX_ERR(FAILED_PRECONDITION,
                 "GPU float32 precision %s requested, but this process already runs GPU work in %s: MLX reads " TF32_ENV
                 " once per process, so all GPU executables of a process share one precision",
                 rlx_precision_name(want), rlx_precision_name(g_fixed));
}

rlx_status *rlx_exec_claim_gpu_precision(rlx_precision p) {
  rlx_status *st = NULL;
  pthread_mutex_lock(&g_mu);
  if (g_fixed == RLX_PRECISION_DEFAULT) {
    const char *env = getenv(TF32_ENV);
    bool mlx_tf32 = env ? atoi(env) != 0 : true; /* what MLX would read */
    if (mlx_tf32 != (p == RLX_PRECISION_TF32) && setenv(TF32_ENV, p == RLX_PRECISION_TF32 ? "1" : "0", 1))
      st = RLX_ERR(RESOURCE_EXHAUSTED, "cannot set " TF32_ENV);
    else
      g_fixed = p;
  } else if (g_fixed != p) {
    st = conflict(p);
  }
  pthread_mutex_unlock(&g_mu);
  return st;
}

rlx_status *rlx_executable_set_precision(rlx_executable *ex, rlx_precision precision) {
  if (!ex) return RLX_ERR(INVALID_ARGUMENT, "rlx_executable_set_precision: NULL executable");
  rlx_precision p = RLX_PRECISION_FP32;
  RLX_TRY(resolve(precision, &p));
  if (ex->device == RLX_DEVICE_GPU) {
    pthread_mutex_lock(&g_mu);
    rlx_status *st = g_fixed != RLX_PRECISION_DEFAULT && g_fixed != p ? conflict(p) : NULL;
    pthread_mutex_unlock(&g_mu);
    RLX_TRY(st);
  }
  pthread_mutex_lock(&ex->mu);
  ex->precision = p;
  pthread_mutex_unlock(&ex->mu);
  return NULL;
}

rlx_precision rlx_executable_precision(const rlx_executable *ex) {
  pthread_mutex_lock((pthread_mutex_t *)&ex->mu);
  rlx_precision p = ex->precision;
  pthread_mutex_unlock((pthread_mutex_t *)&ex->mu);
  return p;
}
