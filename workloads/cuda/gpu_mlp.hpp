#pragma once
// An MLP trained on the GPU: cuBLAS GEMMs (cublasGemmEx, FP32 accumulation)
// for forward and backward, the small kernels of kernels.hpp for bias+ReLU,
// softmax cross-entropy, bias gradients and the optimizer step.
//
// Precision: fp32 (CUBLAS_COMPUTE_32F_PEDANTIC), tf32
// (CUBLAS_COMPUTE_32F_FAST_TF32), fp16 and bf16 (16-bit operands, FP32
// accumulation and output). Master weights, gradients and optimizer state are
// FP32 in every precision; fp16 scales the loss dynamically (start 2^16, halve
// and skip the step on a non-finite gradient, double after 2000 good steps).
//
// All work is queued on the stream given at construction; the caller
// synchronises. Call order per optimizer step: accumulate() once per
// micro-batch, then step(); after the stream has finished, finish_step().
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "workloads/cuda/cuda_handles.hpp"
#include "workloads/cuda/kernels.hpp"

namespace autotune::cuda {

enum class Precision { fp32, tf32, fp16, bf16 };
std::optional<Precision> parse_precision(std::string_view s);

struct MlpShape {
  std::int64_t input_dim = 1024, width = 4096, depth = 4, classes = 1000;
  std::vector<std::int64_t> dims() const;  // input_dim, width x depth, classes
  double parameters() const;
  // Multiply-adds x 2 of forward and backward per sample (the input's own
  // gradient is not computed).
  double flops_per_sample() const;
};

// Device bytes GpuMlp will allocate for micro-batches of `batch` samples.
double gpu_mlp_bytes(const MlpShape& s, std::int64_t batch, Precision p, bool adam);

class GpuMlp {
 public:
  GpuMlp(DeviceArena& arena, cublasHandle_t blas, cudaStream_t stream, const MlpShape& shape, std::int64_t batch,
         Precision precision, bool adam, float lr, std::uint64_t seed);

  // One micro-batch: x (batch x input_dim, row-major = column-major
  // input_dim x batch, FP32) and labels on the device. Gradients accumulate,
  // scaled by grad_scale (1 / samples per optimizer step).
  void accumulate(const float* x, const std::int32_t* labels, std::int64_t batch, float grad_scale);
  void step();
  // After the stream finished the step: whether it was applied (false: fp16
  // overflow, skipped), and the mean loss over the step's micro-batches.
  bool finish_step(std::int64_t micro_batches, std::int64_t samples);
  double last_loss() const { return m_last_loss; }
  float loss_scale() const { return m_loss_scale; }
  std::int64_t skipped_steps() const { return m_skipped; }

  // Times the largest layer's forward GEMM at this batch (after two warm-up
  // calls): TFLOP/s. Leaves activations in an unspecified state.
  double probe_gemm_tflops(std::int64_t batch, int repeats);

 private:
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, int lda,
            const void* b, int ldb, float* c, int ldc, float beta);
  const void* input_of(std::size_t layer, const void* x) const;

  DeviceArena& m_arena;
  cublasHandle_t m_blas;
  cudaStream_t m_stream;
  MlpShape m_shape;
  std::vector<std::int64_t> m_dims;
  std::int64_t m_batch;
  Precision m_precision;
  DType m_dtype;
  bool m_adam;
  float m_lr;

  std::size_t m_params = 0;
  std::vector<std::size_t> m_w_offset, m_b_offset;  // into the flat parameter arrays
  DeviceBuffer m_master, m_grad, m_m, m_v;           // FP32, m_params each (m, v: Adam only)
  DeviceBuffer m_copy;                                // params in the compute type (fp16/bf16 only)
  DeviceBuffer m_x16;                                 // input cast to the compute type (fp16/bf16 only)
  std::vector<DeviceBuffer> m_z;                      // FP32 GEMM outputs per layer
  std::vector<DeviceBuffer> m_h;                      // activations per layer in the compute type
  DeviceBuffer m_dh;                                  // FP32, max width x batch
  DeviceBuffer m_dz;                                  // compute type, max(width, classes) x batch
  DeviceBuffer m_scalars;                             // [0] loss sum (float), [1] overflow flag (int)
  PinnedBuffer m_scalars_host;
  DeviceBuffer m_workspace;                           // cuBLAS workspace, counted against the budget

  std::int64_t m_t = 0;  // applied optimizer steps
  float m_loss_scale = 1.0f;
  std::int64_t m_good_steps = 0, m_skipped = 0;
  double m_last_loss = 0;
};

}  // namespace autotune::cuda
