/* lower_splat.c: GaussianSplatRender and its backward on MLX (formulas in rlx/op_table.h).
 * Dense: the Gaussians are sorted by distance from the camera, then every pixel's ray meets every
 * Gaussian ([P, N] arrays, P = height x width pixels) and the transmittance in front of each is an
 * exclusive cumulative product along the sorted Gaussians. Computed in float32. The backward is
 * MLX's vjp of the same computation (rlx_mx_vjp). */
#include <math.h>

#include "mlx/lower.h"

typedef struct splat {
  int64_t W, H, N, K;
  double radius_scale, alpha_cutoff, threshold;
} splat;

#define F32 RLX_DTYPE_F32
#define B(op, a, b) rlx_mx_binary(c, RLX_MXB_##op, (a), (b))
#define U(op, a) rlx_mx_unary(c, RLX_MXU_##op, (a))
#define S(v) rlx_mx_scalar(c, (v), F32)
#define STOP(a) U(STOP_GRADIENT, a)

/* 3DGS's spherical-harmonics constants of bands 0 and 1. */
#define SH_C0 0.28209479177387814
#define SH_C1 0.4886025119029199

/* A 3-vector as its three components (arrays of one shape). */
typedef struct v3 {
  rlx_mx_arr *x[3];
} v3;

/* Column j of a [rows, ..] matrix as [rows]; element j of a vector (rows < 0) as a scalar. */
static rlx_mx_arr *col(rlx_mx *c, rlx_mx_arr *a, int64_t rows, int64_t j) {
  if (rows < 0) return rlx_mx_reshape(c, rlx_mx_slice(c, a, 1, (int64_t[]){j}, (int64_t[]){j + 1}, (int64_t[]){1}), 0, NULL);
  rlx_mx_arr *s = rlx_mx_slice(c, a, 2, (int64_t[]){0, j}, (int64_t[]){rows, j + 1}, (int64_t[]){1, 1});
  return rlx_mx_reshape(c, s, 1, (int64_t[]){rows});
}

static v3 vec(rlx_mx *c, rlx_mx_arr *a, int64_t rows, int64_t first) {
  v3 v;
  for (int k = 0; k < 3; k++) v.x[k] = col(c, a, rows, first + k);
  return v;
}

static v3 sub(rlx_mx *c, v3 a, v3 b) {
  for (int k = 0; k < 3; k++) a.x[k] = B(SUBTRACT, a.x[k], b.x[k]);
  return a;
}

static rlx_mx_arr *dot(rlx_mx *c, v3 a, v3 b) {
  rlx_mx_arr *s = B(MULTIPLY, a.x[0], b.x[0]);
  for (int k = 1; k < 3; k++) s = B(ADD, s, B(MULTIPLY, a.x[k], b.x[k]));
  return s;
}

static v3 cross(rlx_mx *c, v3 a, v3 b) {
  v3 r;
  for (int k = 0; k < 3; k++) {
    int i = (k + 1) % 3, j = (k + 2) % 3;
    r.x[k] = B(SUBTRACT, B(MULTIPLY, a.x[i], b.x[j]), B(MULTIPLY, a.x[j], b.x[i]));
  }
  return r;
}

/* a / |a|, or 0 when |a|^2 <= eps2. */
static v3 normalize(rlx_mx *c, v3 a, double eps2) {
  rlx_mx_arr *n2 = dot(c, a, a), *inv = U(RSQRT, B(MAXIMUM, n2, S(eps2)));
  inv = rlx_mx_where(c, B(GREATER, n2, S(eps2)), inv, S(0));
  for (int k = 0; k < 3; k++) a.x[k] = B(MULTIPLY, a.x[k], inv);
  return a;
}

/* [P,4] image of N = 0 Gaussians, or of Gaussians drawn with weights w [P,N] (w NULL: none). */
static rlx_mx_arr *shade(rlx_mx *c, const splat *s, v3 bg, rlx_mx_arr *w, rlx_mx_arr *rgb, rlx_mx_arr *T) {
  int64_t P = s->W * s->H;
  rlx_mx_arr *bgv = rlx_mx_reshape(c, rlx_mx_stack(c, bg.x, 3, 0), 2, (int64_t[]){1, 3}), *pix;
  if (w) { /* sum_n w[p,n] rgb[n,ch] + T bg (per channel: no matmul, see render) */
    rlx_mx_arr *ch[3];
    for (int k = 0; k < 3; k++)
      ch[k] = rlx_mx_reduce(c, B(MULTIPLY, w, rlx_mx_reshape(c, col(c, rgb, s->N, k), 2, (int64_t[]){1, s->N})), 0, 1, (int[]){1}, true);
    pix = B(ADD, rlx_mx_concatenate(c, ch, 3, 1), B(MULTIPLY, T, bgv));
  } else {
    pix = rlx_mx_broadcast_to(c, bgv, 2, (int64_t[]){P, 3});
  }
  pix = B(POWER, B(MAXIMUM, pix, S(0)), S(2.2));
  rlx_mx_arr *alpha = w ? B(SUBTRACT, S(1), T) : rlx_mx_full(c, 2, (int64_t[]){P, 1}, 0, F32);
  return rlx_mx_reshape(c, rlx_mx_concatenate(c, (rlx_mx_arr *[]){pix, alpha}, 2, 1), 1, (int64_t[]){P * 4});
}

/* The colours [N,3] of the (sorted) Gaussians seen from direction view (unit, per Gaussian). */
static rlx_mx_arr *colours(rlx_mx *c, const splat *s, rlx_mx_arr *colors, rlx_mx_arr *sh, v3 view) {
  int64_t N = s->N, K = s->K;
  rlx_mx_arr *rgb = rlx_mx_clip(c, colors, S(0), S(1));
  if (K == 0) return rgb;
  rlx_mx_arr *coef[4] = {NULL, NULL, NULL, NULL}; /* K >= 1 here: coef[0] is set (GCC 13 cannot see it) */
  for (int64_t k = 0; k < K && k < 4; k++)
    coef[k] = rlx_mx_reshape(c, rlx_mx_slice(c, sh, 3, (int64_t[]){0, k, 0}, (int64_t[]){N, k + 1, 3}, (int64_t[]){1, 1, 1}), 2,
                             (int64_t[]){N, 3});
  rlx_mx_arr *any_dc = STOP(rlx_mx_reduce(c, B(GREATER, U(ABS, coef[0]), S(1e-8)), 7, 0, NULL, false));
  rgb = rlx_mx_where(c, any_dc, B(ADD, S(0.5), B(MULTIPLY, S(SH_C0), coef[0])), rgb);
  /* band 1: -C1 y sh1 + C1 z sh2 - C1 x sh3 */
  const int axis[4] = {0, 1, 2, 0};
  const double sign[4] = {0, -SH_C1, SH_C1, -SH_C1};
  for (int64_t k = 1; k < K && k < 4; k++) {
    rlx_mx_arr *d = rlx_mx_reshape(c, B(MULTIPLY, view.x[axis[k]], S(sign[k])), 2, (int64_t[]){N, 1});
    rgb = B(ADD, rgb, B(MULTIPLY, d, coef[k]));
  }
  return rgb;
}

/* The RGBA image [P*4] of in = positions, scales, rotations, opacities, colors, sh_coeffs, meta
 * (float32). */
static rlx_mx_arr *render(rlx_mx *c, const splat *s, rlx_mx_arr *const *in) {
  int64_t N = s->N, P = s->W * s->H;
  v3 cam = vec(c, in[6], -1, 0), tgt = vec(c, in[6], -1, 3), up = vec(c, in[6], -1, 6), bg = vec(c, in[6], -1, 12);
  if (N == 0) return shade(c, s, bg, NULL, NULL, NULL);
  rlx_mx_arr *fov = col(c, in[6], -1, 9), *near = col(c, in[6], -1, 10), *far = col(c, in[6], -1, 11);
  v3 f = normalize(c, sub(c, tgt, cam), 1e-24), r = normalize(c, cross(c, up, f), 1e-24), u = normalize(c, cross(c, f, r), 1e-24);
  rlx_mx_arr *focal = B(DIVIDE, S(0.5 * (double)s->H), U(TAN, B(MULTIPLY, fov, S(M_PI / 360))));
  /* ray directions [P,1] x 3: r (px + 0.5 - W/2)/F + u (py + 0.5 - H/2)/F + f */
  rlx_mx_arr *xs = B(DIVIDE, rlx_mx_arange(c, 0.5 - 0.5 * (double)s->W, 0.5 * (double)s->W, 1, F32), focal);
  rlx_mx_arr *ys = B(DIVIDE, rlx_mx_arange(c, 0.5 - 0.5 * (double)s->H, 0.5 * (double)s->H, 1, F32), focal);
  xs = rlx_mx_reshape(c, xs, 2, (int64_t[]){1, s->W});
  ys = rlx_mx_reshape(c, ys, 2, (int64_t[]){s->H, 1});
  rlx_mx_arr *D[3];
  for (int k = 0; k < 3; k++)
    D[k] = rlx_mx_reshape(c, B(ADD, B(ADD, B(MULTIPLY, r.x[k], xs), B(MULTIPLY, u.x[k], ys)), f.x[k]), 2, (int64_t[]){P, 1});

  /* the Gaussians, nearest first */
  v3 mu = vec(c, in[0], N, 0), off = sub(c, cam, mu);
  rlx_mx_arr *order = rlx_mx_argsort(c, STOP(dot(c, off, off)), 0);
  rlx_mx_arr *g[6] = {NULL};
  for (int i = 0; i < (s->K ? 6 : 5); i++) g[i] = rlx_mx_take(c, in[i], order, 0);
  mu = vec(c, g[0], N, 0), off = sub(c, cam, mu);
  rlx_mx_arr *z = B(SUBTRACT, S(0), dot(c, f, off));
  rlx_mx_arr *q[4], *qq = NULL;
  for (int k = 0; k < 4; k++) {
    q[k] = col(c, g[2], N, k);
    qq = k ? B(ADD, qq, B(MULTIPLY, q[k], q[k])) : B(MULTIPLY, q[k], q[k]);
  }
  rlx_mx_arr *valid = B(LOGICAL_AND, B(LOGICAL_AND, B(GREATER, z, near), B(LESS, z, far)), B(GREATER, qq, S(1e-24)));
  rlx_mx_arr *qn = U(RSQRT, B(MAXIMUM, qq, S(1e-24)));
  for (int k = 0; k < 4; k++) q[k] = B(MULTIPLY, q[k], qn);
  /* R of q = (w, x, y, z): R[i][j] */
  rlx_mx_arr *w = q[0], *x = q[1], *y = q[2], *zq = q[3];
#define M2(a, b) B(MULTIPLY, S(2), B(MULTIPLY, a, b))
  rlx_mx_arr *R[3][3] = {
      {B(SUBTRACT, S(1), B(ADD, M2(y, y), M2(zq, zq))), B(SUBTRACT, M2(x, y), M2(w, zq)), B(ADD, M2(x, zq), M2(w, y))},
      {B(ADD, M2(x, y), M2(w, zq)), B(SUBTRACT, S(1), B(ADD, M2(x, x), M2(zq, zq))), B(SUBTRACT, M2(y, zq), M2(w, x))},
      {B(SUBTRACT, M2(x, zq), M2(w, y)), B(ADD, M2(y, zq), M2(w, x)), B(SUBTRACT, S(1), B(ADD, M2(x, x), M2(y, y)))},
  };
#undef M2
  /* A = S^-1 R^T: the camera in local coordinates o = A (c - mu) [1,N], the rays E = A d [P,N]
   * (broadcast products: MLX's vjp cannot go through rlx's matmul kernel); the ray's point
   * nearest the centre o + t E, t = -o.E / E.E, at m = |o + t E|^2 (the stabler form) */
  rlx_mx_arr *o[3], *E[3], *oe = NULL, *ee = NULL, *m = NULL;
  for (int a = 0; a < 3; a++) {
    rlx_mx_arr *inv = B(MULTIPLY, U(EXP, U(NEGATIVE, col(c, g[1], N, a))), S(1 / s->radius_scale)), *Ab[3];
    for (int b = 0; b < 3; b++) {
      Ab[b] = rlx_mx_reshape(c, B(MULTIPLY, R[b][a], inv), 2, (int64_t[]){1, N});
      rlx_mx_arr *t = B(MULTIPLY, D[b], Ab[b]);
      E[a] = b ? B(ADD, E[a], t) : t;
    }
    v3 offr = {{rlx_mx_reshape(c, off.x[0], 2, (int64_t[]){1, N}), rlx_mx_reshape(c, off.x[1], 2, (int64_t[]){1, N}),
                rlx_mx_reshape(c, off.x[2], 2, (int64_t[]){1, N})}};
    o[a] = dot(c, (v3){{Ab[0], Ab[1], Ab[2]}}, offr);
    oe = a ? B(ADD, oe, B(MULTIPLY, o[a], E[a])) : B(MULTIPLY, o[a], E[a]);
    ee = a ? B(ADD, ee, B(MULTIPLY, E[a], E[a])) : B(MULTIPLY, E[a], E[a]);
  }
  rlx_mx_arr *t = B(DIVIDE, U(NEGATIVE, oe), B(MAXIMUM, ee, S(1e-30)));
  for (int a = 0; a < 3; a++) {
    rlx_mx_arr *p = B(ADD, o[a], B(MULTIPLY, t, E[a]));
    m = a ? B(ADD, m, B(MULTIPLY, p, p)) : B(MULTIPLY, p, p);
  }
  rlx_mx_arr *opac = rlx_mx_reshape(c, rlx_mx_clip(c, g[3], S(0), S(1)), 2, (int64_t[]){1, N});
  rlx_mx_arr *alpha = B(MULTIPLY, opac, U(EXP, B(MULTIPLY, m, S(-0.5))));
  rlx_mx_arr *keep = B(LOGICAL_AND, B(GREATER, t, S(0)), B(GREATER_EQUAL, alpha, S(s->alpha_cutoff)));
  keep = STOP(B(LOGICAL_AND, keep, rlx_mx_reshape(c, valid, 2, (int64_t[]){1, N})));
  alpha = rlx_mx_where(c, keep, alpha, S(0));
  /* front to back: transmittance in front of each Gaussian; the stop once T < threshold */
  rlx_mx_arr *T = rlx_mx_scan(c, B(SUBTRACT, S(1), alpha), 1, 1, false, false);
  alpha = rlx_mx_where(c, STOP(B(GREATER_EQUAL, T, S(s->threshold))), alpha, S(0));
  rlx_mx_arr *Tend = rlx_mx_reduce(c, B(SUBTRACT, S(1), alpha), 4, 1, (int[]){1}, true);
  rlx_mx_arr *rgb = colours(c, s, g[4], g[5], normalize(c, off, 1e-16));
  return shade(c, s, bg, B(MULTIPLY, alpha, T), rgb, Tend);
}

static rlx_status *splat_trace(void *ud, rlx_mx *c, rlx_mx_arr *const *in, size_t n_in, rlx_mx_arr **out, size_t n_out) {
  (void)n_in, (void)n_out;
  out[0] = render(c, ud, in);
  return NULL;
}

void rlx_lower_splat(rlx_lower *L, const rlx_node *n, rlx_mx_arr *const *in, rlx_mx_arr **out) {
  rlx_mx *c = L->mx;
  const rlx_type *t0 = rlx_in_type(L, n, 0);
  splat s = {.W = rlx_node_i(n, "width"), .H = rlx_node_i(n, "height"), .N = t0->dims[0], .K = rlx_in_type(L, n, 5)->dims[1],
             .radius_scale = rlx_node_f(n, "radius_scale"), .alpha_cutoff = rlx_node_f(n, "alpha_cutoff"),
             .threshold = rlx_node_f(n, "transmittance_threshold")};
  rlx_mx_arr *x[7];
  for (int i = 0; i < 7; i++) x[i] = rlx_mx_astype(c, in[i], F32);
  if (n->op == RLX_OP_GAUSSIAN_SPLAT_RENDER) {
    out[0] = rlx_mx_astype(c, render(c, &s, x), t0->dtype);
    return;
  }
  int64_t N = s.N, K = s.K;
  if (N == 0) {
    out[0] = rlx_mx_full(c, 1, (int64_t[]){0}, 0, t0->dtype);
    return;
  }
  rlx_mx_arr *cot = rlx_mx_astype(c, in[7], F32), *g[7] = {NULL};
  double clip = rlx_node_f(n, "loss_grad_clip");
  if (clip > 0) cot = rlx_mx_clip(c, cot, S(-clip), S(clip));
  if (!rlx_mx_vjp(c, splat_trace, &s, x, 7, &cot, 1, g)) return;
  rlx_mx_arr *gsh = g[5];
  if (K == 0) {
    gsh = rlx_mx_full(c, 1, (int64_t[]){N * 3}, 0, F32);
  } else if (K > 1 && rlx_node_i(n, "sh_band") == 0) { /* band 0 only */
    rlx_mx_arr *dc = rlx_mx_slice(c, gsh, 3, (int64_t[]){0, 0, 0}, (int64_t[]){N, 1, 3}, (int64_t[]){1, 1, 1});
    gsh = rlx_mx_concatenate(c, (rlx_mx_arr *[]){dc, rlx_mx_full(c, 3, (int64_t[]){N, K - 1, 3}, 0, F32)}, 2, 1);
  }
  rlx_mx_arr *parts[6] = {g[0], g[1], g[2], g[3], g[4], gsh};
  const int64_t len[6] = {N * 3, N * 3, N * 4, N, N * 3, N * (K > 1 ? K : 1) * 3};
  for (int i = 0; i < 6; i++) parts[i] = rlx_mx_reshape(c, parts[i], 1, &len[i]);
  out[0] = rlx_mx_astype(c, rlx_mx_concatenate(c, parts, 6, 0), t0->dtype);
}
