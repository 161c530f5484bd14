// Our own convolution kernels as ConvKernels (backend kOwnBackend): the variants that run a spec, each
// named, so that tuning times them beside cuDNN's engines and the kernel cache records the winner by name.
// The depthwise kernel (depthwise.cu) is here; the pointwise one, a cuBLASLt product, in conv_gemm.cc.
#include "runtime/conv_cudnn.h"
#include "runtime/depthwise.h"

namespace ios::rt {

using namespace conv_detail;

namespace {

constexpr char kDepthwisePrefix[] = "ios_depthwise_r";

// Depthwise with one output channel per input channel, a filter the kernel is compiled for, no dilation.
bool depthwise_runs(const ConvSpec& spec) {
  const ir::ConvAttrs& a = spec.attrs;
  return a.groups == spec.in.c && a.out_channels == spec.in.c && spec.out.c == spec.in.c && a.dh == 1 && a.dw == 1 &&
         depthwise_compiled_for(a.kh, a.kw, a.sh, a.sw);
}

DepthwiseArgs depthwise_args(const ConvSpec& spec, const ConvBuffers& b) {
  const ir::ConvAttrs& a = spec.attrs;
  DepthwiseArgs d{};
  d.x = b.x, d.w = b.w, d.bias = a.has_bias ? b.b : nullptr, d.y = b.y, d.z = spec.z ? b.z : nullptr;
  const auto put = [](long long* to, const SliceLayout& l) { to[0] = l.n, to[1] = l.c, to[2] = l.h, to[3] = l.w; };
  put(d.xs, spec.x);
  put(d.ys, spec.y);
  if (spec.z) put(d.zs, *spec.z);
  d.batch = spec.config.batch, d.channels = spec.in.c;
  d.in_h = spec.in.h, d.in_w = spec.in.w, d.out_h = spec.out.h, d.out_w = spec.out.w;
  d.kernel = a.kh, d.stride = a.sh, d.pad_h = a.ph, d.pad_w = a.pw;
  d.act = int(a.activation);
  d.channels_inner = spec.config.layout == Layout::kNHWC;
  return d;
}

// Whether every tensor of the spec is laid out for channel pairs (depthwise_pairs_fit), judged from its
// strides and its pointers' alignment as the spec records them.
bool pairs_fit_spec(const ConvSpec& spec) {
  const int pair_bytes = int(2 * spec.config.element_bytes());
  const auto fits = [&](const SliceLayout& l, int align) {
    return l.c == 1 && l.n % 2 == 0 && l.h % 2 == 0 && l.w % 2 == 0 && align >= pair_bytes;
  };
  return spec.config.layout == Layout::kNHWC && spec.in.c % 2 == 0 && fits(spec.x, spec.x_align) &&
         fits(spec.y, spec.y_align) && (!spec.z || fits(*spec.z, spec.z_align));
}

class DepthwiseKernel : public ConvKernel {
 public:
  DepthwiseKernel(ConvSpec spec, int rows, bool pairs, KernelChoice choice)
      : spec_(std::move(spec)), rows_(rows), pairs_(pairs), choice_(std::move(choice)) {}

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* /*workspace*/) const override {
    const DepthwiseArgs a = depthwise_args(spec_, b);
    // The spec promised the alignment pairs need; a caller's buffers that break it run one channel a thread.
    const bool pairs = pairs_ && depthwise_pairs_fit(a, spec_.config.element_bytes());
    launch_depthwise(spec_.config.dtype, a, rows_, pairs, stream_of(handle));
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }
  size_t workspace_bytes() const override { return 0; }
  const KernelChoice& choice() const override { return choice_; }

 private:
  ConvSpec spec_;
  int rows_;
  bool pairs_;
  KernelChoice choice_;
};

std::string depthwise_name(int rows, bool pairs) {
  return kDepthwisePrefix + std::to_string(rows) + (pairs ? "_pairs" : "");
}

}  // namespace

std::vector<std::string> own_conv_kernels(const ConvSpec& spec) {
  std::vector<std::string> names;
  add_gemm_kernel_names(spec, names);
  if (!depthwise_runs(spec)) return names;
  const bool pairs = pairs_fit_spec(spec);
  for (int rows : kDepthwiseRows) {
    if (pairs) names.push_back(depthwise_name(rows, true));
    names.push_back(depthwise_name(rows, false));
  }
  return names;
}

Expected<std::shared_ptr<ConvKernel>> make_own_conv_kernel(const ConvSpec& spec, const KernelChoice& choice) {
  RETURN_ERROR_IF(choice.backend != kOwnBackend, ErrorCode::kInvalidArgument,
                  "backend '" + choice.backend + "' is not ours ('" + kOwnBackend + "')");
  if (auto gemm = make_gemm_kernel(spec, choice)) return std::move(*gemm);
  for (int rows : kDepthwiseRows)
    for (bool pairs : {true, false}) {
      if (choice.name != depthwise_name(rows, pairs)) continue;
      RETURN_ERROR_IF(!depthwise_runs(spec) || (pairs && !pairs_fit_spec(spec)), ErrorCode::kInvalidArgument,
                      "our kernel " + choice.name + " does not run " + spec.key());
      return std::shared_ptr<ConvKernel>(new DepthwiseKernel(spec, rows, pairs, choice));
    }
  return error(ErrorCode::kInvalidArgument, "no kernel of ours is named '" + choice.name + "'");
}

Expected<std::shared_ptr<ConvKernel>> make_own_conv_kernel(const ConvSpec& spec, const std::string& name) {
  KernelChoice c;
  c.backend = kOwnBackend;
  c.engine = 0;
  c.name = name;
  c.fused = true;  // bias, activation and residual inside the kernel
  return make_own_conv_kernel(spec, c);
}

}  // namespace ios::rt
