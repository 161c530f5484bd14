// A pointwise convolution (1x1, stride 1, no padding, one group) as one cuBLASLt matrix product, bias,
// activation and residual then by our epilogue kernel. In strict fp32 cuDNN's engines ran pointwise
// convolutions several times slower than a GEMM (MobileNet V2's 320 -> 1280 channels at 7x7: 0.15 ms on
// the H200, its best engine after exhaustive tuning), and squeeze-excite's 1x1-pixel convolutions are
// matrix-vector products. The variants are cuBLASLt's first heuristic algorithms for the product.
#include <cublasLt.h>

#include "runtime/conv_cudnn.h"
#include "runtime/device.h"

namespace ios::rt::conv_detail {

namespace {

#define CHECK_LT(expr)                                                                            \
  do {                                                                                            \
    const cublasStatus_t lt_status_ = (expr);                                                     \
    if (lt_status_ != CUBLAS_STATUS_SUCCESS)                                                      \
      return ::ios::Status(::ios::ErrorCode::kRuntimeError,                                       \
                           std::string(#expr) + " failed: " + cublasGetStatusString(lt_status_)); \
  } while (0)

struct LtHandleDeleter {
  void operator()(cublasLtHandle_t h) const { cublasLtDestroy(h); }
};
struct LtDescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const { cublasLtMatmulDescDestroy(d); }
};
struct LtLayoutDeleter {
  void operator()(cublasLtMatrixLayout_t l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct LtPreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using LtHandle = Owned<cublasLtHandle_t, LtHandleDeleter>;
using LtDesc = Owned<cublasLtMatmulDesc_t, LtDescDeleter>;
using LtLayout = Owned<cublasLtMatrixLayout_t, LtLayoutDeleter>;
using LtPreference = Owned<cublasLtMatmulPreference_t, LtPreferenceDeleter>;

constexpr int kHeuristicVariants = 4;
constexpr size_t kMaxWorkspace = size_t{32} << 20;
constexpr int kWeightAlign = 16;  // weights are allocations of their own (256-byte aligned), checked when run
constexpr char kGemmPrefix[] = "ios_gemm_h";

// The product in cuBLASLt's column-major terms: D (m x n) = op(A) (m x k) * B (k x n), `batch` times. The
// weights (row-major out x in) are A transposed in NHWC and B in NCHW.
struct Product {
  int64_t m = 0, n = 0, k = 0;
  bool weights_are_a = false;  // NHWC: A = W (transposed), B = X; NCHW: A = X, B = W
  int64_t ld_x = 0, ld_y = 0;
  int batch = 1;
  int64_t x_batch_stride = 0, y_batch_stride = 0;
};

// Where the convolution is such a product: NCHW with each channel's pixels contiguous, or NHWC with each
// pixel's channels contiguous and its rows evenly strided.
std::optional<Product> pointwise_product(const ConvSpec& spec) {
  const ir::ConvAttrs& a = spec.attrs;
  if (a.kh != 1 || a.kw != 1 || a.sh != 1 || a.sw != 1 || a.ph != 0 || a.pw != 0 || a.groups != 1) return std::nullopt;
  const int64_t hw = int64_t(spec.out.h) * spec.out.w;
  Product p;
  p.k = spec.in.c;
  p.batch = spec.config.batch;
  p.x_batch_stride = spec.x.n, p.y_batch_stride = spec.y.n;
  if (spec.config.layout == Layout::kNCHW) {
    if (spec.x.w != 1 || spec.x.h != spec.in.w || spec.y.w != 1 || spec.y.h != spec.out.w) return std::nullopt;
    p.m = hw, p.n = spec.out.c, p.ld_x = spec.x.c, p.ld_y = spec.y.c;
    return p;
  }
  if (spec.x.c != 1 || spec.y.c != 1 || spec.x.h != spec.in.w * spec.x.w || spec.y.h != spec.out.w * spec.y.w)
    return std::nullopt;
  p.weights_are_a = true;
  p.m = spec.out.c, p.n = hw, p.ld_x = spec.x.w, p.ld_y = spec.y.w;
  if (p.batch > 1 && spec.x.n == hw * spec.x.w && spec.y.n == hw * spec.y.w) {  // one product over every pixel
    p.n *= p.batch;
    p.batch = 1;
  }
  return p;
}

Expected<LtLayout> make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int batch,
                               int64_t batch_stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CHECK_LT(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld));
  LtLayout owned(l);
  if (batch > 1) {
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    CHECK_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                              sizeof(batch_stride)));
  }
  return owned;
}

class GemmConvKernel : public ConvKernel {
 public:
  static Expected<std::shared_ptr<ConvKernel>> create(const ConvSpec& spec, int variant, KernelChoice choice) {
    std::optional<Product> p = pointwise_product(spec);
    RETURN_ERROR_IF(!p, ErrorCode::kInvalidArgument, "our GEMM kernel does not run " + spec.key());
    std::shared_ptr<GemmConvKernel> k(new GemmConvKernel(spec, *p, std::move(choice)));
    RETURN_IF_ERROR(k->prepare(variant));
    return std::shared_ptr<ConvKernel>(std::move(k));
  }

  Status run(cudnnHandle_t handle, const ConvBuffers& b, void* workspace) const override {
    RETURN_ERROR_IF(pointer_alignment(b.w) < kWeightAlign, ErrorCode::kInvalidArgument,
                    "our GEMM kernel needs 16-byte aligned weights: " + spec_.key());
    const float one = 1.f, zero = 0.f;
    const void* a = p_.weights_are_a ? b.w : b.x;
    const void* bb = p_.weights_are_a ? b.x : b.w;
    const cudaStream_t stream = stream_of(handle);
    CHECK_LT(cublasLtMatmul(lt_, desc_, &one, a, a_, bb, b_, &zero, b.y, d_, b.y, d_, &algo_, workspace,
                            workspace_bytes(), stream));
    if (needs_epilogue(spec_)) run_epilogue(spec_, b, stream);
    CHECK_CUDA(cudaGetLastError());
    return Status::ok();
  }
  size_t workspace_bytes() const override { return workspace_; }
  const KernelChoice& choice() const override { return choice_; }

 private:
  GemmConvKernel(ConvSpec spec, Product p, KernelChoice choice)
      : spec_(std::move(spec)), p_(p), choice_(std::move(choice)) {}

  // Descriptors, layouts and the heuristic's algorithm number `variant` (an error where it has fewer).
  Status prepare(int variant) {
    cublasLtHandle_t h = nullptr;
    CHECK_LT(cublasLtCreate(&h));
    lt_ = LtHandle(h);
    const ExecConfig& c = spec_.config;
    const cublasComputeType_t compute =
        c.math == MathMode::kTf32 && c.dtype == DataType::kF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t d = nullptr;
    CHECK_LT(cublasLtMatmulDescCreate(&d, compute, CUDA_R_32F));
    desc_ = LtDesc(d);
    const cublasOperation_t trans = p_.weights_are_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_LT(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
    const cudaDataType_t t = cuda_type(c.dtype);
    if (p_.weights_are_a) {  // W stored k x m (in x out, column-major), used transposed
      ASSIGN_OR_RETURN(a_, make_layout(t, p_.k, p_.m, p_.k, p_.batch, 0));
      ASSIGN_OR_RETURN(b_, make_layout(t, p_.k, p_.n, p_.ld_x, p_.batch, p_.x_batch_stride));
    } else {
      ASSIGN_OR_RETURN(a_, make_layout(t, p_.m, p_.k, p_.ld_x, p_.batch, p_.x_batch_stride));
      ASSIGN_OR_RETURN(b_, make_layout(t, p_.k, p_.n, p_.k, p_.batch, 0));
    }
    ASSIGN_OR_RETURN(d_, make_layout(t, p_.m, p_.n, p_.ld_y, p_.batch, p_.y_batch_stride));
    cublasLtMatmulPreference_t pref = nullptr;
    CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
    LtPreference owned_pref(pref);
    const size_t max_ws = kMaxWorkspace;
    CHECK_LT(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
    const uint32_t x_align = uint32_t(spec_.x_align), y_align = uint32_t(spec_.y_align), w_align = kWeightAlign;
    const uint32_t a_align = p_.weights_are_a ? w_align : x_align, b_align = p_.weights_are_a ? x_align : w_align;
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a_align,
                                                  sizeof(a_align)));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &b_align,
                                                  sizeof(b_align)));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &y_align,
                                                  sizeof(y_align)));
    CHECK_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &y_align,
                                                  sizeof(y_align)));
    cublasLtMatmulHeuristicResult_t results[kHeuristicVariants] = {};
    int found = 0;
    CHECK_LT(cublasLtMatmulAlgoGetHeuristic(lt_, desc_, a_, b_, d_, d_, pref, kHeuristicVariants, results, &found));
    RETURN_ERROR_IF(variant >= found, ErrorCode::kUnavailable,
                    "cuBLASLt offers " + std::to_string(found) + " algorithms for " + spec_.key() + ", not " +
                        std::to_string(variant + 1));
    algo_ = results[variant].algo;
    workspace_ = results[variant].workspaceSize;
    choice_.workspace = int64_t(workspace_);
    return Status::ok();
  }

  ConvSpec spec_;
  Product p_;
  KernelChoice choice_;
  LtHandle lt_;
  LtDesc desc_;
  LtLayout a_, b_, d_;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace

void add_gemm_kernel_names(const ConvSpec& spec, std::vector<std::string>& names) {
  if (!pointwise_product(spec)) return;
  for (int i = 0; i < kHeuristicVariants; ++i) names.push_back(kGemmPrefix + std::to_string(i));
}

std::optional<Expected<std::shared_ptr<ConvKernel>>> make_gemm_kernel(const ConvSpec& spec,
                                                                      const KernelChoice& choice) {
  const std::string& name = choice.name;
  if (name.rfind(kGemmPrefix, 0) != 0) return std::nullopt;
  const std::string index = name.substr(sizeof(kGemmPrefix) - 1);
  if (index.size() != 1 || index[0] < '0' || index[0] >= char('0' + kHeuristicVariants)) return std::nullopt;
  return GemmConvKernel::create(spec, index[0] - '0', choice);
}

}  // namespace ios::rt::conv_detail
