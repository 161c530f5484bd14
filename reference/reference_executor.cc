#include "reference/reference_executor.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/overloaded.h"

namespace ios::reference {

using ir::Act;
using ir::Shape;
using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

void conv_forward(const ir::ConvAttrs& c, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const Shape& is = in.shape;
  const Shape& os = out.shape;
  const int cin_g = is.c / c.groups, cout_g = c.out_channels / c.groups;
  const int k = cin_g * c.kh * c.kw;
  const int hw = os.h * os.w;
  RowMajor col(k, hw);
  for (int b = 0; b < in.batch; ++b) {
    for (int g = 0; g < c.groups; ++g) {
      // im2col of this group's input channels; zero padding.
      for (int ci = 0; ci < cin_g; ++ci) {
        const float* src = in.sample(b) + static_cast<size_t>(g * cin_g + ci) * is.h * is.w;
        for (int ky = 0; ky < c.kh; ++ky)
          for (int kx = 0; kx < c.kw; ++kx) {
            float* row = col.data() + static_cast<size_t>((ci * c.kh + ky) * c.kw + kx) * hw;
            for (int oy = 0; oy < os.h; ++oy) {
              const int iy = oy * c.sh - c.ph + ky * c.dh;
              for (int ox = 0; ox < os.w; ++ox) {
                const int ix = ox * c.sw - c.pw + kx * c.dw;
                row[oy * os.w + ox] = (iy >= 0 && iy < is.h && ix >= 0 && ix < is.w) ? src[iy * is.w + ix] : 0.f;
              }
            }
          }
      }
      Eigen::Map<const RowMajor> wmat(p.weight.data() + static_cast<size_t>(g) * cout_g * k, cout_g, k);
      Eigen::Map<RowMajor> omat(out.sample(b) + static_cast<size_t>(g) * cout_g * hw, cout_g, hw);
      omat.noalias() = wmat * col;
    }
    for (int co = 0; co < os.c; ++co) {
      const float bias = p.bias.empty() ? 0.f : p.bias[static_cast<size_t>(co)];
      float* dst = out.sample(b) + static_cast<size_t>(co) * hw;
      for (int i = 0; i < hw; ++i) dst[i] = ir::activate(c.activation, dst[i] + bias);
    }
  }
}

void pool_forward(const ir::PoolAttrs& p, const Tensor& in, Tensor& out) {
  const Shape& is = in.shape;
  const Shape& os = out.shape;
  const bool global = p.is_global();
  const bool is_max = p.kind == ir::PoolKind::kMax || p.kind == ir::PoolKind::kGlobalMax;
  const int kh = global ? is.h : p.kh, kw = global ? is.w : p.kw;
  const int sh = global ? 1 : p.sh, sw = global ? 1 : p.sw;
  const int ph = global ? 0 : p.ph, pw = global ? 0 : p.pw;
  for (int b = 0; b < in.batch; ++b)
    for (int ch = 0; ch < is.c; ++ch) {
      const float* src = in.sample(b) + static_cast<size_t>(ch) * is.h * is.w;
      float* dst = out.sample(b) + static_cast<size_t>(ch) * os.h * os.w;
      for (int oy = 0; oy < os.h; ++oy)
        for (int ox = 0; ox < os.w; ++ox) {
          // PyTorch semantics: with count_include_pad, padded cells count in the average but windows
          // that stick out past the padding (ceil mode) do not; without it only input cells count.
          int y0 = oy * sh - ph, x0 = ox * sw - pw;
          if (p.dilated()) {  // max only: every tap inside the input
            double m = -std::numeric_limits<double>::infinity();
            for (int i = 0; i < kh; ++i)
              for (int j = 0; j < kw; ++j) {
                const int y = y0 + i * p.dh, x = x0 + j * p.dw;
                if (y >= 0 && y < is.h && x >= 0 && x < is.w) m = std::max(m, double(src[y * is.w + x]));
              }
            dst[oy * os.w + ox] = static_cast<float>(m);
            continue;
          }
          int y1 = std::min(y0 + kh, is.h + ph), x1 = std::min(x0 + kw, is.w + pw);
          const int padded_area = (y1 - y0) * (x1 - x0);
          y0 = std::max(y0, 0), x0 = std::max(x0, 0), y1 = std::min(y1, is.h), x1 = std::min(x1, is.w);
          const int divisor = p.count_include_pad ? padded_area : (y1 - y0) * (x1 - x0);
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x) {
              const double v = src[y * is.w + x];
              acc = is_max ? std::max(acc, v) : acc + v;
            }
          dst[oy * os.w + ox] = static_cast<float>(is_max ? acc : acc / divisor);
        }
    }
}

void linear_forward(const ir::LinearAttrs& l, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const auto k = static_cast<Eigen::Index>(in.shape.numel());
  Eigen::Map<const RowMajor> wmat(p.weight.data(), l.out_features, k);
  for (int b = 0; b < in.batch; ++b) {
    Eigen::Map<const Eigen::VectorXf> x(in.sample(b), k);
    Eigen::Map<Eigen::VectorXf> y(out.sample(b), l.out_features);
    y.noalias() = wmat * x;
    for (int o = 0; o < l.out_features; ++o)
      y[o] = ir::activate(l.activation, y[o] + (p.bias.empty() ? 0.f : p.bias[static_cast<size_t>(o)]));
  }
}

void resize_forward(const ir::ResizeAttrs& r, const Tensor& in, Tensor& out) {
  const Shape& is = in.shape;
  const Shape& os = out.shape;
  const float inv_h = ir::resize_inv_scale(r.scale_h, is.h, os.h), inv_w = ir::resize_inv_scale(r.scale_w, is.w, os.w);
  std::vector<ir::ResizeTap> ys(size_t(os.h)), xs(size_t(os.w));
  for (int y = 0; y < os.h; ++y) ys[size_t(y)] = ir::resize_tap(r.mode, r.coord, r.round, y, is.h, os.h, inv_h);
  for (int x = 0; x < os.w; ++x) xs[size_t(x)] = ir::resize_tap(r.mode, r.coord, r.round, x, is.w, os.w, inv_w);
  for (int b = 0; b < in.batch; ++b)
    for (int ch = 0; ch < is.c; ++ch) {
      const float* src = in.sample(b) + static_cast<size_t>(ch) * is.h * is.w;
      float* dst = out.sample(b) + static_cast<size_t>(ch) * os.h * os.w;
      for (int y = 0; y < os.h; ++y) {
        const ir::ResizeTap ty = ys[size_t(y)];
        for (int x = 0; x < os.w; ++x) {
          const ir::ResizeTap tx = xs[size_t(x)];
          auto at = [&](int yy, int xx) { return src[yy * is.w + xx]; };
          const float top = at(ty.i0, tx.i0) * (1.f - tx.w1) + at(ty.i0, tx.i1) * tx.w1;
          const float bottom = at(ty.i1, tx.i0) * (1.f - tx.w1) + at(ty.i1, tx.i1) * tx.w1;
          dst[y * os.w + x] = top * (1.f - ty.w1) + bottom * ty.w1;
        }
      }
    }
}

void shuffle_forward(const ir::ChannelShuffleAttrs& s, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  for (int b = 0; b < in.batch; ++b)
    for (int ch = 0; ch < in.shape.c; ++ch)
      std::copy_n(in.sample(b) + size_t(ir::shuffle_source(ch, in.shape.c, s.groups)) * plane, plane,
                  out.sample(b) + size_t(ch) * plane);
}

void space_depth_forward(const ir::SpaceDepthAttrs& a, const Tensor& in, Tensor& out) {
  const Shape& is = in.shape;
  const Shape& os = out.shape;
  const int shallow_c = a.to_depth ? is.c : os.c;
  for (int b = 0; b < in.batch; ++b)
    for (int ch = 0; ch < os.c; ++ch)
      for (int y = 0; y < os.h; ++y)
        for (int x = 0; x < os.w; ++x) {
          const ir::BlockSource src = ir::space_depth_source(a, shallow_c, ch, y, x);
          out.sample(b)[(static_cast<size_t>(ch) * os.h + y) * os.w + x] =
              in.sample(b)[(static_cast<size_t>(src.c) * is.h + src.y) * is.w + src.x];
        }
}

void channel_norm_forward(const ir::ChannelNormAttrs& a, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  const auto channels = static_cast<size_t>(in.shape.c);
  for (int b = 0; b < in.batch; ++b)
    for (size_t px = 0; px < plane; ++px) {
      const float* src = in.sample(b) + px;
      float* dst = out.sample(b) + px;
      double mean = 0, var = 0;
      for (size_t c = 0; c < channels; ++c) mean += src[c * plane];
      mean /= double(channels);
      for (size_t c = 0; c < channels; ++c) var += (src[c * plane] - mean) * (src[c * plane] - mean);
      const double inv = 1.0 / std::sqrt(var / double(channels) + double(a.eps));
      for (size_t c = 0; c < channels; ++c)
        dst[c * plane] = static_cast<float>((src[c * plane] - mean) * inv * p.weight[c] + p.bias[c]);
    }
}

void channel_conv_forward(const ir::ChannelConvAttrs& a, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  const int channels = in.shape.c;
  for (int b = 0; b < in.batch; ++b)
    for (int c = 0; c < channels; ++c)
      for (size_t q = 0; q < plane; ++q) {
        double acc = a.bias ? p.bias[0] : 0.0;
        for (int t = 0; t < a.kernel; ++t) {
          const int src = c + t - a.pad;
          if (src >= 0 && src < channels) acc += double(p.weight[size_t(t)]) * in.sample(b)[size_t(src) * plane + q];
        }
        out.sample(b)[size_t(c) * plane + q] = static_cast<float>(acc);
      }
}

void channel_softmax_forward(const ir::ChannelSoftmaxAttrs& a, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  const size_t per = static_cast<size_t>(in.shape.c / a.groups) * plane;  // one group's elements
  for (int b = 0; b < in.batch; ++b)
    for (size_t i = 0; i < per; ++i) {
      const float* src = in.sample(b) + i;
      float* dst = out.sample(b) + i;
      double top = src[0], sum = 0;
      for (int k = 1; k < a.groups; ++k) top = std::max(top, double(src[size_t(k) * per]));
      for (int k = 0; k < a.groups; ++k) sum += std::exp(src[size_t(k) * per] - top);
      for (int k = 0; k < a.groups; ++k)
        dst[size_t(k) * per] = static_cast<float>(std::exp(src[size_t(k) * per] - top) / sum);
    }
}

void response_norm_forward(const ir::ResponseNormAttrs& a, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  const size_t channels = static_cast<size_t>(in.shape.c);
  std::vector<double> norm(channels);
  for (int b = 0; b < in.batch; ++b) {
    const float* src = in.sample(b);
    float* dst = out.sample(b);
    double mean = 0;
    for (size_t c = 0; c < channels; ++c) {
      double sq = 0;
      for (size_t q = 0; q < plane; ++q) sq += double(src[c * plane + q]) * src[c * plane + q];
      norm[c] = std::sqrt(sq);
      mean += norm[c] / double(channels);
    }
    for (size_t c = 0; c < channels; ++c) {
      const double gain = norm[c] / (mean + double(a.eps)) * p.weight[c];
      for (size_t q = 0; q < plane; ++q) dst[c * plane + q] = static_cast<float>(src[c * plane + q] * gain + p.bias[c]);
    }
  }
}

void group_norm_forward(const ir::GroupNormAttrs& a, const ir::ParamTensor& p, const Tensor& in, Tensor& out) {
  const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
  const size_t per_group = static_cast<size_t>(in.shape.c / a.groups);
  const size_t count = per_group * plane;
  for (int b = 0; b < in.batch; ++b)
    for (int g = 0; g < a.groups; ++g) {
      const size_t first = static_cast<size_t>(g) * per_group;
      const float* src = in.sample(b) + first * plane;
      float* dst = out.sample(b) + first * plane;
      double mean = 0, var = 0;
      for (size_t i = 0; i < count; ++i) mean += src[i];
      mean /= double(count);
      for (size_t i = 0; i < count; ++i) var += (src[i] - mean) * (src[i] - mean);
      const double inv = 1.0 / std::sqrt(var / double(count) + double(a.eps));
      const double offset = a.center ? mean : 0.0;
      for (size_t i = 0; i < count; ++i) {
        const size_t c = first + i / plane;
        dst[i] = static_cast<float>((src[i] - offset) * inv * p.weight[c] + p.bias[c]);
      }
    }
}

void pad_forward(const ir::PadAttrs& a, const Tensor& in, Tensor& out) {
  const Shape& is = in.shape;
  const Shape& os = out.shape;
  for (int b = 0; b < in.batch; ++b)
    for (int ch = 0; ch < is.c; ++ch) {
      const float* src = in.sample(b) + static_cast<size_t>(ch) * is.h * is.w;
      float* dst = out.sample(b) + static_cast<size_t>(ch) * os.h * os.w;
      for (int y = 0; y < os.h; ++y) {
        const int sy = ir::pad_source(a.mode, y, a.top, is.h);
        for (int x = 0; x < os.w; ++x) {
          const int sx = ir::pad_source(a.mode, x, a.left, is.w);
          dst[y * os.w + x] = sy < 0 || sx < 0 ? a.value : src[sy * is.w + sx];
        }
      }
    }
}

// Sums the values of one term into a tensor.
Tensor gather_term(const ir::Graph& g, const ir::Term& term, const std::vector<Tensor>& outputs, int batch) {
  const Shape& src0 = g.node(term[0].node).output_shape;
  Tensor t(batch, Shape{term[0].channels(), src0.h, src0.w});
  const size_t plane = static_cast<size_t>(src0.h) * src0.w;
  for (const ir::Value& v : term) {
    const Tensor& src = outputs[static_cast<size_t>(v.node)];
    for (int b = 0; b < batch; ++b) {
      const float* s = src.sample(b) + static_cast<size_t>(v.begin) * plane;
      float* d = t.sample(b);
      for (int64_t i = 0; i < t.shape.numel(); ++i) d[i] += s[i];
    }
  }
  return t;
}

Tensor gather_inputs(const ir::Graph& g, const ir::Node& n, const std::vector<Tensor>& outputs, int batch) {
  if (n.inputs.size() == 1) return gather_term(g, n.inputs[0], outputs, batch);
  Tensor t(batch, n.input_shape);
  size_t offset = 0;
  for (const ir::Term& term : n.inputs) {
    Tensor part = gather_term(g, term, outputs, batch);
    for (int b = 0; b < batch; ++b) std::copy_n(part.sample(b), part.shape.numel(), t.sample(b) + offset);
    offset += static_cast<size_t>(part.shape.numel());
  }
  return t;
}

}  // namespace

Tensor apply_step(const ir::SubOp& step, const ir::ParamTensor& params, const Tensor& in, const Shape& out_shape) {
  Tensor out(in.batch, out_shape);
  std::visit(Overloaded{[&](const ir::ConvAttrs& c) { conv_forward(c, params, in, out); },
                        [&](const ir::PoolAttrs& p) { pool_forward(p, in, out); },
                        [&](const ir::ActivationAttrs& a) {
                          for (size_t i = 0; i < in.data.size(); ++i)
                            out.data[i] = ir::activate(a.activation, in.data[i]);
                        },
                        [&](const ir::LinearAttrs& l) { linear_forward(l, params, in, out); },
                        [&](const ir::ResizeAttrs& r) { resize_forward(r, in, out); },
                        [&](const ir::ChannelShuffleAttrs& s) { shuffle_forward(s, in, out); },
                        [&](const ir::SpaceDepthAttrs& a) { space_depth_forward(a, in, out); },
                        [&](const ir::ChannelNormAttrs& a) { channel_norm_forward(a, params, in, out); },
                        [&](const ir::PadAttrs& a) { pad_forward(a, in, out); },
                        [&](const ir::GroupNormAttrs& a) { group_norm_forward(a, params, in, out); },
                        [&](const ir::ChannelConvAttrs& a) { channel_conv_forward(a, params, in, out); },
                        [&](const ir::ChannelSoftmaxAttrs& a) { channel_softmax_forward(a, in, out); },
                        [&](const ir::ResponseNormAttrs& a) { response_norm_forward(a, params, in, out); },
                        [&](const ir::PReluAttrs&) {
                          const size_t plane = static_cast<size_t>(in.shape.h) * in.shape.w;
                          for (size_t i = 0; i < in.data.size(); ++i) {
                            const float slope = params.weight[(i / plane) % size_t(in.shape.c)];
                            out.data[i] = in.data[i] >= 0.f ? in.data[i] : slope * in.data[i];
                          }
                        }},
             step);
  return out;
}

Expected<std::vector<Tensor>> run_all(const ir::Graph& g, const ir::Weights& w, const Tensor& input,
                                      RunOptions options) {
  RETURN_ERROR_IF(input.batch <= 0, ErrorCode::kInvalidArgument, "batch size must be positive");
  RETURN_ERROR_IF(
      !(input.shape == g.input_shape()), ErrorCode::kInvalidArgument,
      "input shape " + input.shape.to_string() + " does not match graph input " + g.input_shape().to_string());
  RETURN_ERROR_IF(w.per_node.size() != g.nodes.size(), ErrorCode::kInvalidArgument,
                  "weights were made for a different graph");
  const int batch = input.batch;
  std::vector<Tensor> outputs(g.nodes.size());
  outputs[0] = input;

  std::vector<ir::NodeId> last_use(g.nodes.size(), 0);
  for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id)
    for (ir::NodeId p : g.producers(id)) last_use[static_cast<size_t>(p)] = id;

  for (ir::NodeId id = 1; id < static_cast<ir::NodeId>(g.nodes.size()); ++id) {
    const ir::Node& n = g.node(id);
    Tensor out;
    if (n.is<ir::ElementAttrs>()) {
      const bool mul = n.attrs<ir::ElementAttrs>().op == ir::ElementOp::kMul;
      out = gather_term(g, n.inputs[0], outputs, batch);
      for (size_t t = 1; t < n.inputs.size(); ++t) {
        Tensor other = gather_term(g, n.inputs[t], outputs, batch);
        // A C x 1 x 1 factor (ir::broadcasts) is read once per channel: element i of an NCHW tensor is
        // channel (n, c) = i / (H * W).
        const size_t step = other.data.size() == out.data.size() ? 1 : size_t(out.shape.h) * size_t(out.shape.w);
        for (size_t i = 0; i < out.data.size(); ++i)
          out.data[i] = mul ? out.data[i] * other.data[i / step] : out.data[i] + other.data[i];
      }
    } else {
      Tensor in = gather_inputs(g, n, outputs, batch);
      if (n.is<ir::IdentityAttrs>()) {
        out = std::move(in);
      } else if (const std::optional<ir::SubOp> step = ir::as_step(n.op)) {
        out = apply_step(*step, w.at(id), in, n.output_shape);
      } else {
        const auto& steps = n.attrs<ir::SequentialAttrs>().steps;
        for (size_t s = 0; s < steps.size(); ++s) in = apply_step(steps[s], w.at(id, int(s)), in, n.step_shapes[s]);
        out = std::move(in);
      }
    }
    outputs[static_cast<size_t>(id)] = std::move(out);
    if (!options.keep_all)
      for (ir::NodeId p : g.producers(id))
        if (last_use[static_cast<size_t>(p)] == id && p != g.output()) outputs[static_cast<size_t>(p)] = Tensor{};
  }
  if (!options.keep_all) outputs[0] = Tensor{};
  return outputs;
}

Expected<Tensor> run(const ir::Graph& g, const ir::Weights& w, const Tensor& input) {
  ASSIGN_OR_RETURN(std::vector<Tensor> all, run_all(g, w, input));
  return std::move(all[static_cast<size_t>(g.output())]);
}

double relative_l2_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    diff += d * d;
    ref += double(b[i]) * double(b[i]);
  }
  if (ref == 0) return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / ref);
}

}  // namespace ios::reference
