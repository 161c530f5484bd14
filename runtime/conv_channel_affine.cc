#include "runtime/conv_cudnn.h"

namespace ios::rt::conv_detail {

// Per-channel affine: a 1x1 depthwise convolution is y = act(x * w[c] + b[c]), memory-bound. cuDNN runs
// it as a grouped convolution with one group per channel, several times slower than one elementwise
// pass (imported BatchNorms without a convolution before them: DenseNet's pre-activations).
bool is_channel_affine(const ConvSpec& spec) {
  const ir::ConvAttrs& a = spec.attrs;
  return a.kh == 1 && a.kw == 1 && a.sh == 1 && a.sw == 1 && a.ph == 0 && a.pw == 0 && a.groups == spec.in.c &&
         a.out_channels == spec.in.c && spec.out.c == spec.in.c;
}

namespace {

class ChannelAffineKernel : public ConvKernel {
 public:
  explicit ChannelAffineKernel(ConvSpec spec) : spec_(std::move(spec)) {
    choice_.backend = kElementwiseBackend;
    choice_.name = "ios_channel_affine";
    choice_.fused = true;
  }
  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* /*workspace*/) const override {
    const cudaStream_t stream = stream_of(handle);
    const DevTensor x{const_cast<void*>(b.x), spec_.x.n, spec_.x.c, spec_.x.w};
    const DevTensor y{b.y, spec_.y.n, spec_.y.c, spec_.y.w};
    const Extent e{spec_.config.batch, spec_.out.c, spec_.out.h * spec_.out.w, spec_.config.layout == Layout::kNHWC};
    launch_scale_bias_act(spec_.config.dtype, x, y, b.w, spec_.attrs.has_bias ? b.b : nullptr, e,
                          act_code(spec_.attrs.activation), stream);
    if (spec_.z) {
      const DevTensor z{const_cast<void*>(b.z), spec_.z->n, spec_.z->c, spec_.z->w};
      launch_gather(spec_.config.dtype, &z, 1, y, e, /*accumulate=*/true, stream);
    }
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }
  size_t workspace_bytes() const override { return 0; }
  const KernelChoice& choice() const override { return choice_; }

 private:
  ConvSpec spec_;
  KernelChoice choice_;
};

}  // namespace

std::shared_ptr<ConvKernel> channel_affine_kernel(const ConvSpec& spec) {
  return std::shared_ptr<ConvKernel>(new ChannelAffineKernel(spec));
}

}  // namespace ios::rt::conv_detail
