"""GaussianSplatRender and GaussianSplatRenderBackward (rlx/op_table.h) against a float64 numpy
reference written from the formulas: the reference's look-at camera and ray-splat evaluation (the
maximum of each 3D Gaussian's density along the pixel's ray, covariance R S S^T R^T of Kerbl et
al. 2023), SH bands 0-1, front-to-back compositing Gaussian by Gaussian in distance order with the
alpha cutoff and the transmittance stop, gamma 2.2. The backward against central finite
differences (float64) of that reference. Edge cases: no Gaussians, all culled, opacity clamp, the
transmittance stop, the alpha cutoff, colours in place of SH, a zero quaternion; errors."""
import numpy as np

from opcase import Case, F, I, error_case as err, node

rng = np.random.default_rng(2023)
C0, C1 = 0.28209479177387814, 0.4886025119029199
NAMES = ["positions", "scales", "rotations", "opacities", "colors", "sh_coeffs", "meta"]
DEFAULTS = dict(radius_scale=1.6, alpha_cutoff=1 / 255, transmittance_threshold=0.01)


def unit(v):
    return v / np.linalg.norm(v)


def rotation(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def render_ref(scene, W, H, radius_scale=1.6, alpha_cutoff=1 / 255, transmittance_threshold=0.01):
    pos, scl, rot, opa, col, sh, meta = (np.asarray(a, np.float64) for a in scene)
    cam, tgt, up, fov, near, far, bg = meta[0:3], meta[3:6], meta[6:9], meta[9], meta[10], meta[11], meta[12:15]
    f = unit(tgt - cam)
    r = unit(np.cross(up, f))
    u = unit(np.cross(f, r))
    focal = 0.5 * H / np.tan(np.radians(fov) / 2)
    py, px = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    rays = (r[None] * ((px.reshape(-1, 1) + 0.5 - W / 2) / focal) + u[None] * ((py.reshape(-1, 1) + 0.5 - H / 2) / focal)
            + f[None])
    N, K = len(pos), sh.shape[1]
    use_dc = K > 0 and np.any(np.abs(sh[:, 0, :]) > 1e-8)
    T = np.ones(len(rays))
    acc = np.zeros((len(rays), 3))
    active = np.ones(len(rays), bool)
    for i in sorted(range(N), key=lambda i: np.sum((pos[i] - cam) ** 2)):
        depth = f @ (pos[i] - cam)
        if not (near < depth < far) or np.linalg.norm(rot[i]) < 1e-12:
            continue
        v = unit(cam - pos[i])
        rgb = 0.5 + C0 * sh[i, 0] if use_dc else np.clip(col[i], 0, 1)
        for k, term in ((1, -C1 * v[1]), (2, C1 * v[2]), (3, -C1 * v[0])):
            if k < K:
                rgb = rgb + term * sh[i, k]
        A = np.diag(1 / (radius_scale * np.exp(scl[i]))) @ rotation(rot[i]).T
        o = A @ (cam - pos[i])
        e = rays @ A.T
        t = -(e @ o) / np.sum(e * e, axis=1)
        closest = o[None] + t[:, None] * e
        alpha = np.clip(opa[i], 0, 1) * np.exp(-0.5 * np.sum(closest * closest, axis=1))
        hit = active & (t > 0) & (alpha >= alpha_cutoff)
        a = np.where(hit, alpha, 0)
        acc += (T * a)[:, None] * rgb[None]
        T = T * (1 - a)
        active &= ~(hit & (T < transmittance_threshold))
    img = np.concatenate([np.maximum(acc + T[:, None] * bg[None], 0) ** 2.2, (1 - T)[:, None]], axis=1)
    return img.reshape(-1)


def grads_ref(scene, dimg, W, H, sh_band=1, loss_grad_clip=0.0, **kw):
    """Central differences (float64) of sum(dimg * render_ref), packed as the op packs them."""
    scene = [np.asarray(a, np.float64) for a in scene]
    if loss_grad_clip > 0:
        dimg = np.clip(dimg, -loss_grad_clip, loss_grad_clip)
    h, out = 1e-6, []
    for k in range(6):
        g = np.zeros(scene[k].shape)
        for idx in np.ndindex(*scene[k].shape):
            vals = []
            for sgn in (1, -1):
                s = [a.copy() for a in scene]
                s[k][idx] += sgn * h
                vals.append(np.sum(dimg * render_ref(s, W, H, **kw)))
            g[idx] = (vals[0] - vals[1]) / (2 * h)
        out.append(g)
    N, K = scene[0].shape[0], scene[5].shape[1]
    if K == 0:
        out[5] = np.zeros((N, 1, 3))
    elif sh_band == 0:
        out[5][:, 1:] = 0
    return np.concatenate([g.reshape(-1) for g in out])


def meta(cam=(0.3, -0.2, -5.0), target=(0, 0, 0), up=(0, 1, 0), fov=60.0, near=0.1, far=100.0, bg=(0.2, 0.4, 0.1)):
    return np.array([*cam, *target, *up, fov, near, far, *bg, 0, 0, 0, 0, 0, 0, 0, 0], np.float32)  # 23 as the reference's builder


def scene(N, K=4, spread=1.5, dc=True):
    q = rng.normal(size=(N, 4))
    sh = rng.normal(0, 0.4, size=(N, K, 3))
    if not dc and K:
        sh[:, 0] = 0
    s = [rng.uniform([-spread, -spread, -1], [spread, spread, 1], size=(N, 3)),
         np.log(rng.uniform(0.15, 0.6, size=(N, 3))), q, rng.uniform(0.3, 0.95, size=N), rng.uniform(0.05, 0.95, size=(N, 3)),
         sh, meta()]
    return [np.asarray(a, np.float32) for a in s]


def attrs(W, H, **kw):
    a = dict(width=I(W), height=I(H))
    for k, v in kw.items():
        a[k] = I(v) if isinstance(v, int) else F(v)
    return a


def render_case(name, s, W=16, H=12, dtype=np.float32, atol=2e-5, rtol=1e-4, **kw):
    ins = {n: a.astype(dtype) for n, a in zip(NAMES, s)}
    ref = render_ref([a.astype(np.float64) for a in ins.values()], W, H, **{**DEFAULTS, **kw})
    return Case(name, [node("GaussianSplatRender", NAMES, ["image"], **attrs(W, H, **kw))], ins,
                {"image": ref.astype(dtype)}, atol=atol, rtol=rtol)


def backward_case(name, s, W=10, H=8, sh_band=1, loss_grad_clip=0.0, **kw):
    ins = dict(zip(NAMES, s))
    ins["d_image"] = rng.normal(0, 1, size=W * H * 4).astype(np.float32)
    ref = grads_ref(list(ins.values())[:7], ins["d_image"].astype(np.float64), W, H, sh_band, loss_grad_clip, **{**DEFAULTS, **kw})
    tol = 1e-4 * max(np.abs(ref).max(initial=0), 1e-3)  # float32 render against float64 differences
    a = attrs(W, H, sh_band=sh_band, loss_grad_clip=loss_grad_clip, **kw)
    return Case(name, [node("GaussianSplatRenderBackward", list(ins), ["grads"], **a)], ins, {"grads": ref.astype(np.float32)},
                atol=tol, rtol=1e-3)


def cases():
    yield render_case("Splat_scene", scene(9))
    yield render_case("Splat_radius_scale_1", scene(6), W=20, H=15, radius_scale=1.0)
    yield render_case("Splat_colors_no_sh", scene(5, K=0))
    yield render_case("Splat_colors_dc_zero", scene(5, K=4, dc=False))  # no DC anywhere: colours + band 1
    yield render_case("Splat_sh_band0_only", scene(5, K=1))
    yield render_case("Splat_sh_degree3_ignored", scene(4, K=16))  # bands 2-3 unused
    empty = [np.zeros(shape, np.float32) for shape in ((0, 3), (0, 3), (0, 4), (0,), (0, 3), (0, 4, 3))] + [meta()]
    yield render_case("Splat_no_gaussians", empty)  # the background, alpha 0
    s = scene(5)
    s[0][:, 2] = -6  # every centre behind the camera (depth -1)
    yield render_case("Splat_all_culled", s)
    s = scene(5)
    s[6] = meta(near=4.9, far=5.2)  # centres at depth 4..6: some outside (near, far)
    yield render_case("Splat_near_far", s)
    s = scene(4)
    s[3][:] = [5.0, -1.0, 1.0, 2.0]  # opacities clamped to [0, 1]
    s[1][0] = np.log(3.0)  # a big opaque Gaussian: alpha ~ 1 near its centre
    s[0][0] = [0.3, -0.2, 0.5]
    yield render_case("Splat_opacity_clamp", s)
    s = scene(6, spread=0.1)
    s[0][:, 2] = np.linspace(-1, 1, 6)  # a stack along the view axis
    s[3][:] = 0.9
    yield render_case("Splat_transmittance_stop", s, transmittance_threshold=0.05)
    yield render_case("Splat_no_stop", s, transmittance_threshold=0.0)
    yield render_case("Splat_alpha_cutoff", scene(8), alpha_cutoff=0.3)
    s = scene(4)
    s[2][1] = 0  # a zero quaternion: not drawn
    yield render_case("Splat_zero_quaternion", s)
    yield render_case("Splat_f16", scene(6), dtype=np.float16, atol=2e-2, rtol=2e-2)
    yield backward_case("SplatBwd_scene", scene(5, K=4))
    yield backward_case("SplatBwd_colors", scene(4, K=0), radius_scale=1.0)
    yield backward_case("SplatBwd_band0_clip", scene(4, K=4), sh_band=0, loss_grad_clip=0.5)
    yield backward_case("SplatBwd_stop_cutoff", scene(5, K=2), transmittance_threshold=0.3, alpha_cutoff=0.05)
    yield backward_case("SplatBwd_no_gaussians", empty)  # an empty gradient
    # errors
    s = scene(3)
    ins = dict(zip(NAMES, s))
    yield err("Splat_err_rotations", "GaussianSplatRender", {**ins, "rotations": s[2][:, :3]}, **attrs(8, 8))
    yield err("Splat_err_sh", "GaussianSplatRender", {**ins, "sh_coeffs": s[5][:, :, :2]}, **attrs(8, 8))
    yield err("Splat_err_count", "GaussianSplatRender", {**ins, "opacities": s[3][:2]}, **attrs(8, 8))
    yield err("Splat_err_meta", "GaussianSplatRender", {**ins, "meta": s[6][:12]}, **attrs(8, 8))
    yield err("Splat_err_dtype", "GaussianSplatRender", {**ins, "colors": s[4].astype(np.float64)}, **attrs(8, 8))
    yield err("Splat_err_int", "GaussianSplatRender", {n: a.astype(np.int32) for n, a in ins.items()}, **attrs(8, 8))
    yield err("Splat_err_width", "GaussianSplatRender", ins, **attrs(0, 8))
    yield err("Splat_err_threshold", "GaussianSplatRender", ins, **attrs(8, 8, transmittance_threshold=1.5))
    yield err("Splat_err_cutoff", "GaussianSplatRender", ins, **attrs(8, 8, alpha_cutoff=-0.1))
    yield err("Splat_err_radius", "GaussianSplatRender", ins, **attrs(8, 8, radius_scale=0.0))
    yield err("Splat_err_tile", "GaussianSplatRender", ins, **attrs(8, 8, tile_size=0))
    yield err("Splat_err_too_big", "GaussianSplatRender", ins, code="RESOURCE_EXHAUSTED", **attrs(8192, 4096))
    yield err("SplatBwd_err_d_image", "GaussianSplatRenderBackward", {**ins, "d": np.zeros(8 * 8 * 3, np.float32)}, **attrs(8, 8))
    yield err("SplatBwd_err_sh_band", "GaussianSplatRenderBackward", {**ins, "d": np.zeros(8 * 8 * 4, np.float32)},
              **attrs(8, 8, sh_band=-1))
