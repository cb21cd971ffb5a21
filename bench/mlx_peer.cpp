// mlx_peer.cpp: the benchmark's direct-MLX peer (mlx_peer.h): what a C++ user of MLX writes by
// hand for the same computations, with mlx::core::compile for the compiled variant.
#include "mlx_peer.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "mlx/mlx.h"

namespace mx = mlx::core;

using Fn = std::function<std::vector<mx::array>(const std::vector<mx::array> &)>;

struct mlx_peer {
  Fn fn;
  mx::Shape in_shape;
  std::vector<mx::array> weights;  // leaves after x
};

static mx::array upload(const float *data, const mx::Shape &shape) {
  size_t n = 1;
  for (auto d : shape) n *= (size_t)d;
  auto buf = mx::allocator::malloc(n * sizeof(float));
  std::memcpy(buf.buffer().raw_ptr(), data, n * sizeof(float));
  return mx::array(std::move(buf), shape, mx::float32);
}

extern "C" mlx_peer *peer_tiny_create(bool compiled, int64_t n) {
  auto *p = new mlx_peer;
  p->in_shape = {(int)n};
  Fn f = [](const std::vector<mx::array> &in) { return std::vector<mx::array>{mx::add(mx::multiply(in[0], mx::array(2.0f)), mx::array(1.0f))}; };
  p->fn = compiled ? mx::compile(f) : f;
  return p;
}

extern "C" mlx_peer *peer_embed_create(bool compiled, int64_t n, int64_t vocab, int64_t dim, const float *table) {
  auto *p = new mlx_peer;
  p->in_shape = {(int)n};
  p->weights.push_back(upload(table, {(int)vocab, (int)dim}));
  mx::eval(p->weights);
  Fn f = [](const std::vector<mx::array> &in) { return std::vector<mx::array>{mx::take(in[1], mx::astype(in[0], mx::int32), 0)}; };
  p->fn = compiled ? mx::compile(f) : f;
  return p;
}

// NeoX rotation of t [1, S, H*D] from cos/sin tables [S, D/2], op for op as rlx lowers Rope on
// packed heads: split the heads out, rotate the halves, put them back.
static mx::array rope_composed(const mx::array &t, const mx::array &cs, const mx::array &sn, int S, int H, int D) {
  auto x = mx::reshape(t, {1, S, H, D});
  auto c = mx::reshape(mx::slice(cs, {0, 0}, {S, D / 2}), {S, 1, D / 2}), s = mx::reshape(mx::slice(sn, {0, 0}, {S, D / 2}), {S, 1, D / 2});
  auto x1 = mx::slice(x, {0, 0, 0, 0}, {1, S, H, D / 2}), x2 = mx::slice(x, {0, 0, 0, D / 2}, {1, S, H, D});
  auto y = mx::concatenate({mx::subtract(mx::multiply(x1, c), mx::multiply(x2, s)), mx::add(mx::multiply(x2, c), mx::multiply(x1, s))}, 3);
  return mx::reshape(y, {1, S, H * D});
}

extern "C" mlx_peer *peer_block_create(bool compiled, bool fast_rope, const peer_block_dims *d, const peer_block_weights *w) {
  auto *p = new mlx_peer;
  int S = (int)d->seq, E = (int)d->dim, H = (int)d->heads, D = (int)d->head_dim, F = (int)d->ffn;
  p->in_shape = {1, S, E};
  const float *mats[] = {w->wq, w->wk, w->wv, w->wo, w->w_gate, w->w_up, w->w_down};
  const mx::Shape shapes[] = {{E, H * D}, {E, H * D}, {E, H * D}, {H * D, E}, {E, F}, {E, F}, {F, E}};
  p->weights.push_back(upload(w->attn_norm, {E}));
  p->weights.push_back(upload(w->ffn_norm, {E}));
  for (int i = 0; i < 7; i++) p->weights.push_back(upload(mats[i], shapes[i]));
  std::vector<float> ct((size_t)(S * D / 2)), st((size_t)(S * D / 2));
  for (int pos = 0; pos < S; pos++)
    for (int i = 0; i < D / 2; i++) {
      double a = pos * std::pow((double)d->theta, -2.0 * i / D);
      ct[(size_t)(pos * D / 2 + i)] = (float)std::cos(a), st[(size_t)(pos * D / 2 + i)] = (float)std::sin(a);
    }
  p->weights.push_back(upload(ct.data(), {S, D / 2}));
  p->weights.push_back(upload(st.data(), {S, D / 2}));
  mx::eval(p->weights);
  float eps = d->eps, theta = d->theta;
  Fn f = [=](const std::vector<mx::array> &in) {
    const mx::array &x = in[0], &g1 = in[1], &g2 = in[2], &wq = in[3], &wk = in[4], &wv = in[5], &wo = in[6], &wg = in[7],
                    &wu = in[8], &wd = in[9], &cs = in[10], &sn = in[11];
    auto heads = [&](const mx::array &t) { return mx::transpose(mx::reshape(t, {1, S, H, D}), {0, 2, 1, 3}); };
    auto rope_heads = [&](const mx::array &t) {  // [1, S, H*D] -> rotated [1, H, S, D]
      return fast_rope ? mx::fast::rope(heads(t), D, false, theta, 1.0f, 0) : heads(rope_composed(t, cs, sn, S, H, D));
    };
    auto n1 = mx::fast::rms_norm(x, g1, eps);
    auto q = rope_heads(mx::matmul(n1, wq));
    auto k = rope_heads(mx::matmul(n1, wk));
    auto v = heads(mx::matmul(n1, wv));
    auto a = mx::fast::scaled_dot_product_attention(q, k, v, 1.0f / std::sqrt((float)D), "causal");
    auto h = mx::add(x, mx::matmul(mx::reshape(mx::transpose(a, {0, 2, 1, 3}), {1, S, H * D}), wo));
    auto n2 = mx::fast::rms_norm(h, g2, eps);
    auto gate = mx::matmul(n2, wg);
    auto act = mx::multiply(mx::multiply(gate, mx::sigmoid(gate)), mx::matmul(n2, wu));
    return std::vector<mx::array>{mx::add(h, mx::matmul(act, wd))};
  };
  p->fn = compiled ? mx::compile(f) : f;
  return p;
}

extern "C" bool peer_run(mlx_peer *p, const float *x, float *y) {
  try {
    std::vector<mx::array> in;
    in.reserve(1 + p->weights.size());
    in.push_back(upload(x, p->in_shape));
    for (auto &w : p->weights) in.push_back(w);
    auto out = p->fn(in);
    out[0].eval();
    std::memcpy(y, out[0].data<float>(), out[0].nbytes());
    return true;
  } catch (const std::exception &e) {
    fprintf(stderr, "MLX: %s\n", e.what());
    return false;
  }
}

extern "C" void peer_free(mlx_peer *p) { delete p; }
