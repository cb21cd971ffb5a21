/* infer_splat.c: inference for GaussianSplatRender and its backward (see rlx/op_table.h). */
#include <math.h>

#include "ir/infer_util.h"

/* The dense lowering's bound on pixels x Gaussians (each of its temporaries holds that many floats). */
#define SPLAT_MAX_PAIRS ((int64_t)1 << 24)

static const char *const splat_names[8] = {"positions", "scales", "rotations", "opacities", "colors", "sh_coeffs", "meta", "d_image"};

/* Input i has rank `rank` and, where `want` is not -1 (N) or -3 (any), the dims of `want`. */
static rlx_status *splat_shape(const rlx_infer_ctx *c, int i, int rank, const int64_t *want, int64_t N) {
  const rlx_type *t = IN(i);
  bool ok = t->rank == rank;
  for (int k = 0; ok && k < rank; k++) {
    int64_t w = want[k] == -1 ? N : want[k];
    ok = want[k] == -3 || rlx_dim_compatible(t->dims[k], w);
  }
  if (!ok) FAIL(INVALID_ARGUMENT, "input %d (%s) has the wrong shape %s", i, splat_names[i], TSTR(t));
  return NULL;
}

rlx_status *rlx_infer_splat(rlx_infer_ctx *c) {
  bool bwd = OP == RLX_OP_GAUSSIAN_SPLAT_RENDER_BACKWARD;
  rlx_dtype dt = IN(0)->dtype;
  if (dt != RLX_DTYPE_F32 && dt != RLX_DTYPE_F16 && dt != RLX_DTYPE_BF16)
    FAIL(INVALID_ARGUMENT, "input 0 (positions) must be float32, float16 or bfloat16, got %s", rlx_dtype_name(dt));
  for (int i = 1; i < NIN; i++)
    if (IN(i)->dtype != dt)
      FAIL(INVALID_ARGUMENT, "input %d (%s) is %s; every input must have positions' dtype %s", i, splat_names[i],
           rlx_dtype_name(IN(i)->dtype), rlx_dtype_name(dt));
  if (IN(0)->rank != 2 || !rlx_dim_compatible(IN(0)->dims[1], 3))
    FAIL(INVALID_ARGUMENT, "input 0 (positions) must be [N,3], got %s", TSTR(IN(0)));
  int64_t N = IN(0)->dims[0];
  RLX_TRY(splat_shape(c, 1, 2, (int64_t[]){-1, 3}, N));
  RLX_TRY(splat_shape(c, 2, 2, (int64_t[]){-1, 4}, N));
  RLX_TRY(splat_shape(c, 3, 1, (int64_t[]){-1}, N));
  RLX_TRY(splat_shape(c, 4, 2, (int64_t[]){-1, 3}, N));
  RLX_TRY(splat_shape(c, 5, 3, (int64_t[]){-1, -3, 3}, N));
  RLX_TRY(splat_shape(c, 6, 1, (int64_t[]){-3}, N));
  if (RLX_DIM_IS_STATIC(IN(6)->dims[0]) && IN(6)->dims[0] < 15)
    FAIL(INVALID_ARGUMENT, "input 6 (meta) has %lld values; the camera and background take 15", (long long)IN(6)->dims[0]);
  int64_t W = AI("width"), H = AI("height");
  if (W < 1 || H < 1) FAIL(INVALID_ARGUMENT, "the image is %lld x %lld pixels; width and height must be >= 1", (long long)W, (long long)H);
  if (AI("tile_size") < 1 || AI("max_splat_steps") < 0 || AI("max_list_entries") < 1)
    FAIL(INVALID_ARGUMENT, "tile_size %lld, max_splat_steps %lld, max_list_entries %lld: they must be >= 1, >= 0, >= 1",
         (long long)AI("tile_size"), (long long)AI("max_splat_steps"), (long long)AI("max_list_entries"));
  double rs = AF("radius_scale"), ac = AF("alpha_cutoff"), tt = AF("transmittance_threshold");
  if (!(rs > 0) || !isfinite(rs)) FAIL(INVALID_ARGUMENT, "radius_scale %g must be finite and > 0", rs);
  if (!(ac >= 0 && ac <= 1)) FAIL(INVALID_ARGUMENT, "alpha_cutoff %g is outside [0, 1]", ac);
  if (!(tt >= 0 && tt <= 1)) FAIL(INVALID_ARGUMENT, "transmittance_threshold %g is outside [0, 1]", tt);
  int64_t pairs = (H > SPLAT_MAX_PAIRS || W > SPLAT_MAX_PAIRS / H) ? SPLAT_MAX_PAIRS + 1 : H * W;
  if (RLX_DIM_IS_STATIC(N) && N > 1) pairs = pairs > SPLAT_MAX_PAIRS / N ? SPLAT_MAX_PAIRS + 1 : pairs * N;
  if (pairs > SPLAT_MAX_PAIRS)
    FAIL(RESOURCE_EXHAUSTED, "a %lld x %lld image of %lld Gaussians is more than the dense lowering's 2^24 pixel-Gaussian pairs",
         (long long)H, (long long)W, (long long)N);
  *OUT(0) = (rlx_type){.dtype = dt, .rank = 1, .dims = {H * W * 4}};
  if (!bwd) return NULL;
  RLX_TRY(splat_shape(c, 7, 1, (int64_t[]){H * W * 4}, N));
  if (AI("sh_band") < 0) FAIL(INVALID_ARGUMENT, "sh_band %lld must be >= 0", (long long)AI("sh_band"));
  if (!(AF("loss_grad_clip") >= 0)) FAIL(INVALID_ARGUMENT, "loss_grad_clip %g must be >= 0 (0: no clamp)", AF("loss_grad_clip"));
  int64_t K = IN(5)->dims[1];
  OUT(0)->dims[0] = RLX_DIM_DYNAMIC;
  if (RLX_DIM_IS_STATIC(N) && RLX_DIM_IS_STATIC(K)) {
    int64_t per = 0; /* 14 + 3 K parameters per Gaussian */
    if (!rlx_mul_i64(K > 1 ? K : 1, 3, &per) || !rlx_add_i64(per, 14, &per) || !rlx_mul_i64(N, per, &OUT(0)->dims[0]))
      FAIL(RESOURCE_EXHAUSTED, "the gradient of %lld Gaussians with %lld SH coefficients overflows int64", (long long)N, (long long)K);
  }
  return NULL;
}
