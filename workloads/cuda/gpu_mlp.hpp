#pragma once
// An MLP trained on the GPU: cuBLAS GEMMs (cublasGemmEx, FP32 accumulation)
// for forward and backward, the small kernels of kernels.hpp for bias+ReLU,
// softmax cross-entropy, bias gradients and the optimizer step.
//
// Precision, as PyTorch computes its matmuls by default: fp32 is
// CUBLAS_COMPUTE_32F with cuBLAS's default math (torch.backends.cuda.matmul.
// allow_tf32 is False, and PyTorch does not ask for pedantic math either),
// tf32 CUBLAS_COMPUTE_32F_FAST_TF32 (allow_tf32 = True), fp16 and bf16 16-bit
// operands with FP32 accumulation and output. Fp32Math::pedantic makes fp32
// CUBLAS_COMPUTE_32F_PEDANTIC (no reduced-precision tricks at all; slower,
// the workload's `fp32_math: pedantic`). Master weights, gradients and
// optimizer state are FP32 in every precision; fp16 scales the loss
// dynamically on the device (train_state.hpp).
//
// All work is queued on the stream given at construction; nothing here waits
// for the device. Call order per optimizer step: accumulate() once per
// micro-batch, then step(slot); once the stream has passed that step,
// report(slot) holds its loss and scaler state (slots 0 and 1 let the caller
// read one step while the next is queued).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/kernels.hpp"
#include "workloads/harness.hpp"

namespace autotune::cuda {

enum class Precision { fp32, tf32, fp16, bf16 };
std::optional<Precision> parse_precision(std::string_view s);
enum class Fp32Math { standard, pedantic };
std::optional<Fp32Math> parse_fp32_math(std::string_view s);  // "default" or "pedantic"
// The cuBLAS compute type of a precision's GEMMs.
cublasComputeType_t compute_type_of(Precision p, Fp32Math m = Fp32Math::standard);

// Where each layer's weights and biases start in the flat parameter arrays,
// in elements. Every offset is a multiple of kParameterAlignment elements, so
// that each matrix starts on a 256-byte boundary in the FP32 arrays and in the
// 16-bit copy alike (cuBLAS picks slower kernels for less-aligned operands);
// the padding is zero and stays zero.
inline constexpr std::size_t kParameterAlignment = 128;
struct ParameterLayout {
  std::vector<std::size_t> weight, bias;  // per layer
  std::size_t total = 0;                  // with the padding
};
ParameterLayout parameter_layout(const std::vector<std::int64_t>& dims);

// The shape is the harness's (workloads/harness.hpp), shared with the cpu workload.
using autotune::MlpShape;

// Device bytes GpuMlp will allocate for micro-batches of `batch` samples.
double gpu_mlp_bytes(const MlpShape& s, std::int64_t batch, Precision p, bool adam);

class GpuMlp {
 public:
  GpuMlp(DeviceArena& arena, cublasHandle_t blas, cudaStream_t stream, const MlpShape& shape, std::int64_t batch,
         Precision precision, Fp32Math fp32_math, bool adam, float lr, std::uint64_t seed);

  // One micro-batch: x (batch x input_dim, row-major = column-major
  // input_dim x batch, FP32) and labels on the device. Gradients accumulate,
  // scaled by grad_scale (1 / samples per optimizer step).
  void accumulate(const float* x, const std::int32_t* labels, std::int64_t batch, float grad_scale);
  // The optimizer step (skipped on the device after an fp16 overflow), then
  // an asynchronous copy of the step's report into host slot `slot` (0 or 1).
  void step(int slot);
  // The report of the step queued with step(slot); valid once the stream
  // has passed it (the caller synchronises: an event after step(), say).
  // loss_sum is the step's summed loss, found_inf whether it was skipped.
  TrainState report(int slot) const;

  // Times the largest layer's forward GEMM at this batch (after two warm-up
  // calls): TFLOP/s. Leaves activations in an unspecified state.
  double probe_gemm_tflops(std::int64_t batch, int repeats);

 private:
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, int lda,
            const void* b, int ldb, float* c, int ldc, float beta);
  const void* input_of(std::size_t layer, const void* x) const;
  TrainState* state() const { return m_state.as<TrainState>(); }

  DeviceArena& m_arena;
  cublasHandle_t m_blas;
  cudaStream_t m_stream;
  MlpShape m_shape;
  std::vector<std::int64_t> m_dims;
  std::int64_t m_batch;
  Precision m_precision;
  cublasComputeType_t m_compute_type;
  DType m_dtype;
  bool m_adam;
  float m_lr;

  std::size_t m_params = 0;                           // with the alignment padding
  std::vector<std::size_t> m_w_offset, m_b_offset;  // into the flat parameter arrays
  DeviceBuffer m_master, m_grad, m_m, m_v;           // FP32, m_params each (m, v: Adam only)
  DeviceBuffer m_copy;                                // params in the compute type (fp16/bf16 only)
  DeviceBuffer m_x16;                                 // input cast to the compute type (fp16/bf16 only)
  std::vector<DeviceBuffer> m_z;                      // FP32 GEMM outputs per layer
  std::vector<DeviceBuffer> m_h;                      // hidden activations in the compute type (not the logits)
  DeviceBuffer m_dh;                                  // FP32, max width x batch
  DeviceBuffer m_dz;                                  // compute type, max(width, classes) x batch
  DeviceBuffer m_state;                               // TrainState, lives on the device
  DeviceBuffer m_reports;                             // TrainState x 2, the device side of the copies
  PinnedBuffer m_reports_host;                        // TrainState x 2, read by report()
  DeviceBuffer m_workspace;                           // cuBLAS workspace, counted against the budget
};

}  // namespace autotune::cuda
