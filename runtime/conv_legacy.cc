// Convolutions on cuDNN's legacy API (cudnnFindConvolutionForwardAlgorithmEx): what --conv-engine legacy
// asks for, and the fallback where no graph engine runs a convolution.
#include <cudnn_frontend.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "common/tensor_pack.h"
#include "common/wall_clock.h"
#include "reference/reference_executor.h"
#include "runtime/conv_cudnn.h"
#include "scheduler/cost_model.h"
#include "scheduler/stage_timing.h"

namespace ios::rt::conv_detail {

namespace {

class LegacyConvKernel : public ConvKernel {
 public:
  static Expected<std::shared_ptr<LegacyConvKernel>> create(const ConvSpec& spec) {
    auto k = std::shared_ptr<LegacyConvKernel>(new LegacyConvKernel(spec));
    RETURN_IF_ERROR(k->make_descriptors());
    return k;
  }

  // Fused through cudnnConvolutionBiasActivationForward only where it is defined for us: fp32, ReLU.
  bool fusable() const {
    return spec_.config.dtype == DataType::kF32 && spec_.attrs.has_bias && spec_.attrs.activation == ir::Act::kRelu &&
           !spec_.z;  // its z is added before the activation, ours after
  }

  Status use(const KernelChoice& c) {
    choice_ = c;
    CHECK_CUDNN(cudnnSetConvolutionMathType(conv_, cudnnMathType_t(c.knobs.empty() ? 0 : c.knobs[0].second)));
    return Status::ok();
  }

  Status tune(cudnnHandle_t handle, const ConvBuffers& b, void* workspace, size_t limit) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(
        handle, x_, b.x, w_, b.w, conv_, y_, b.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf, workspace, limit));
    for (int i = 0; i < found; ++i) {
      const auto& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > limit) continue;
      if (spec_.config.dtype == DataType::kF32 && spec_.config.math == MathMode::kStrict &&
          p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH)
        continue;
      KernelChoice c;
      c.backend = kLegacyBackend;
      c.engine = p.algo;
      c.knobs = {{0, int64_t(p.mathType)}};
      c.name = "legacy_algo" + std::to_string(int(p.algo));
      c.fused = fusable();
      c.ms = p.time;
      c.workspace = int64_t(p.memory);
      c.candidates = found;
      return use(c);
    }
    return error(ErrorCode::kRuntimeError, "cuDNN found no legacy convolution algorithm for " + spec_.key());
  }

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const override {
    const float one = 1.f, zero = 0.f;
    const auto algo = cudnnConvolutionFwdAlgo_t(choice_.engine);
    if (choice_.fused) {
      CHECK_CUDNN(cudnnConvolutionBiasActivationForward(handle, &one, x_, b.x, w_, b.w, conv_, algo, workspace,
                                                        workspace_bytes(), &zero, y_, b.y, bias_, b.b, act_, y_, b.y));
      return Status::ok();
    }
    CHECK_CUDNN(cudnnConvolutionForward(handle, &one, x_, b.x, w_, b.w, conv_, algo, workspace, workspace_bytes(),
                                        &zero, y_, b.y));
    if (needs_epilogue(spec_)) run_epilogue(spec_, b, stream_of(handle));
    return Status::ok();
  }
  size_t workspace_bytes() const override { return size_t(choice_.workspace); }
  const KernelChoice& choice() const override { return choice_; }

 private:
  explicit LegacyConvKernel(ConvSpec spec) : spec_(std::move(spec)) {}

  Status make_descriptors() {
    const auto& a = spec_.attrs;
    const cudnnDataType_t t = cudnn_type(spec_.config.dtype);
    ASSIGN_OR_RETURN(x_, make_nd_tensor_desc(t, dims(spec_.config.batch, spec_.in), strides(spec_.x)));
    ASSIGN_OR_RETURN(y_, make_nd_tensor_desc(t, dims(spec_.config.batch, spec_.out), strides(spec_.y)));
    ASSIGN_OR_RETURN(bias_, make_nd_tensor_desc(t, {1, spec_.out.c, 1, 1}, {spec_.out.c, 1, 1, 1}));
    ASSIGN_OR_RETURN(w_, make_filter_desc(t, spec_.config.layout == Layout::kNHWC, a.out_channels,
                                          spec_.in.c / a.groups, a.kh, a.kw));
    ASSIGN_OR_RETURN(act_, make_act_desc(CUDNN_ACTIVATION_RELU));
    cudnnConvolutionDescriptor_t cd = nullptr;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    conv_ = ConvDesc(cd);
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(cd, a.ph, a.pw, a.sh, a.sw, a.dh, a.dw, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionGroupCount(cd, a.groups));
    const cudnnMathType_t math = !spec_.config.tensor_cores()           ? CUDNN_FMA_MATH
                                 : spec_.config.dtype == DataType::kF32 ? CUDNN_DEFAULT_MATH
                                                                        : CUDNN_TENSOR_OP_MATH;
    CHECK_CUDNN(cudnnSetConvolutionMathType(cd, math));
    return Status::ok();
  }

  ConvSpec spec_;
  TensorDesc x_, y_, bias_;
  FilterDesc w_;
  ConvDesc conv_;
  ActDesc act_;
  KernelChoice choice_;
};

}  // namespace

Expected<std::shared_ptr<ConvKernel>> build_legacy(cudnnHandle_t handle, const ConvSpec& spec, const ConvBuffers& b,
                                                   void* workspace, const std::optional<KernelChoice>& cached,
                                                   const ConvBuildOptions& o) {
  ASSIGN_OR_RETURN(auto k, LegacyConvKernel::create(spec));
  if (cached && cached->backend == kLegacyBackend) {
    RETURN_IF_ERROR(k->use(*cached));
  } else {
    RETURN_IF_ERROR(k->tune(handle, b, workspace, o.workspace_limit));
  }
  return std::shared_ptr<ConvKernel>(std::move(k));
}

}  // namespace ios::rt::conv_detail
