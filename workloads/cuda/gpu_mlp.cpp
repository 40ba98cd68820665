#include "workloads/cuda/gpu_mlp.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "workloads/cuda/cuda_check.hpp"
#include "workloads/normal_fill.hpp"

namespace autotune::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;  // cuBLAS recommends 32 MiB on Hopper

DType dtype_of(Precision p) {
  switch (p) {
    case Precision::fp16: return DType::f16;
    case Precision::bf16: return DType::bf16;
    default: return DType::f32;
  }
}

cudaDataType_t cuda_type_of(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

std::size_t max_hidden(const std::vector<std::int64_t>& d) {
  std::int64_t m = 1;
  for (std::size_t l = 1; l < d.size(); ++l) m = std::max(m, d[l]);
  return static_cast<std::size_t>(m);
}

std::size_t align_up(std::size_t n) { return (n + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment; }

}  // namespace

cublasComputeType_t compute_type_of(Precision p, Fp32Math m) {
  switch (p) {
    case Precision::fp32: return m == Fp32Math::pedantic ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
    case Precision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    default: return CUBLAS_COMPUTE_32F;  // 16-bit operands, FP32 accumulation
  }
}

std::optional<Fp32Math> parse_fp32_math(std::string_view s) {
  if (s == "default") return Fp32Math::standard;
  if (s == "pedantic") return Fp32Math::pedantic;
  return std::nullopt;
}

ParameterLayout parameter_layout(const std::vector<std::int64_t>& dims) {
  ParameterLayout p;
  for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
    p.weight.push_back(p.total);
    p.total = align_up(p.total + static_cast<std::size_t>(dims[l] * dims[l + 1]));
    p.bias.push_back(p.total);
    p.total = align_up(p.total + static_cast<std::size_t>(dims[l + 1]));
  }
  return p;
}

std::optional<Precision> parse_precision(std::string_view s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  if (s == "bf16") return Precision::bf16;
  return std::nullopt;
}

double gpu_mlp_bytes(const MlpShape& s, std::int64_t batch, Precision p, bool adam) {
  const auto d = s.dims();
  const double e = static_cast<double>(dtype_bytes(dtype_of(p)));
  const bool half = e < 4;
  const double P = static_cast<double>(parameter_layout(d).total);  // with the padding
  const double B = static_cast<double>(batch);
  double bytes = P * 4 * (2 + (adam ? 2 : 0)) + (half ? P * e : 0);
  double hidden = 0;
  for (std::size_t l = 1; l + 1 < d.size(); ++l) hidden += static_cast<double>(d[l]);
  bytes += hidden * B * (4 + e);                                    // z and h per hidden layer
  bytes += static_cast<double>(d.back()) * B * 4;                   // z of the logits (no h)
  bytes += static_cast<double>(max_hidden(d)) * B * (4 + e);        // dh and dz
  bytes += half ? static_cast<double>(d[0]) * B * e : 0;            // input cast
  return bytes + kWorkspaceBytes + 3 * sizeof(TrainState);
}

GpuMlp::GpuMlp(DeviceArena& arena, cublasHandle_t blas, cudaStream_t stream, const MlpShape& shape,
               std::int64_t batch, Precision precision, Fp32Math fp32_math, bool adam, float lr, std::uint64_t seed)
    : m_arena(arena),
      m_blas(blas),
      m_stream(stream),
      m_shape(shape),
      m_dims(shape.dims()),
      m_batch(batch),
      m_precision(precision),
      m_compute_type(compute_type_of(precision, fp32_math)),
      m_dtype(dtype_of(precision)),
      m_adam(adam),
      m_lr(lr) {
  const std::size_t layers = m_dims.size() - 1;
  ParameterLayout layout = parameter_layout(m_dims);
  m_w_offset = std::move(layout.weight);
  m_b_offset = std::move(layout.bias);
  m_params = layout.total;
  const std::size_t pbytes = m_params * sizeof(float);
  const std::size_t e = dtype_bytes(m_dtype);
  const auto B = static_cast<std::size_t>(batch);
  m_master = DeviceBuffer(arena, pbytes);
  m_grad = DeviceBuffer(arena, pbytes);
  if (adam) {
    m_m = DeviceBuffer(arena, pbytes);
    m_v = DeviceBuffer(arena, pbytes);
  }
  if (m_dtype != DType::f32) {
    m_copy = DeviceBuffer(arena, m_params * e);
    m_x16 = DeviceBuffer(arena, static_cast<std::size_t>(m_dims[0]) * B * e);
  }
  for (std::size_t l = 0; l < layers; ++l) {
    const auto rows = static_cast<std::size_t>(m_dims[l + 1]);
    m_z.emplace_back(arena, rows * B * sizeof(float));
    // The logits are read from z by the softmax; only hidden layers need h.
    if (l + 1 < layers) m_h.emplace_back(arena, rows * B * e);
  }
  const std::size_t wide = max_hidden(m_dims);
  m_dh = DeviceBuffer(arena, wide * B * sizeof(float));
  m_dz = DeviceBuffer(arena, wide * B * e);
  m_state = DeviceBuffer(arena, sizeof(TrainState));
  m_reports = DeviceBuffer(arena, 2 * sizeof(TrainState));
  m_reports_host = PinnedBuffer(2 * sizeof(TrainState));
  m_workspace = DeviceBuffer(arena, kWorkspaceBytes);
  AUTOTUNE_CUBLAS_CALL(cublasSetStream(m_blas, m_stream));
  AUTOTUNE_CUBLAS_CALL(cublasSetWorkspace(m_blas, m_workspace.get(), kWorkspaceBytes));

  // He-initialised weights, zero biases, generated on the host (on every
  // core: the default model has 58 M weights, a second on one thread).
  std::vector<float> host(m_params, 0.0f);
  for (std::size_t l = 0; l < layers; ++l) {
    const std::size_t count = static_cast<std::size_t>(m_dims[l] * m_dims[l + 1]);
    fill_normal(host.data() + m_w_offset[l], count, std::sqrt(2.0f / static_cast<float>(m_dims[l])), seed + l);
  }
  AUTOTUNE_CUDA_CALL(cudaMemcpy(m_master.get(), host.data(), pbytes, cudaMemcpyHostToDevice));
  AUTOTUNE_CUDA_CALL(cudaMemsetAsync(m_grad.get(), 0, pbytes, m_stream));
  if (adam) {
    AUTOTUNE_CUDA_CALL(cudaMemsetAsync(m_m.get(), 0, pbytes, m_stream));
    AUTOTUNE_CUDA_CALL(cudaMemsetAsync(m_v.get(), 0, pbytes, m_stream));
  }
  if (m_dtype != DType::f32) launch_cast_from_f32(m_dtype, m_master.as<float>(), m_copy.get(), m_params, m_stream);
  TrainState initial;
  if (precision == Precision::fp16) initial.loss_scale = LossScaleRule{}.initial;
  const TrainState both[2] = {initial, initial};
  AUTOTUNE_CUDA_CALL(cudaMemcpy(m_state.get(), &initial, sizeof initial, cudaMemcpyHostToDevice));
  AUTOTUNE_CUDA_CALL(cudaMemcpy(m_reports_host.get(), both, sizeof both, cudaMemcpyHostToHost));
  AUTOTUNE_CUDA_CALL(cudaStreamSynchronize(m_stream));
}

void GpuMlp::gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a, int lda,
                  const void* b, int ldb, float* c, int ldc, float beta) {
  const float alpha = 1.0f;
  const cudaDataType_t t = cuda_type_of(m_dtype);
  AUTOTUNE_CUBLAS_CALL(cublasGemmEx(m_blas, ta, tb, m, n, k, &alpha, a, t, lda, b, t, ldb, &beta, c, CUDA_R_32F,
                                    ldc, m_compute_type, CUBLAS_GEMM_DEFAULT));
}

const void* GpuMlp::input_of(std::size_t layer, const void* x) const {
  return layer == 0 ? x : m_h[layer - 1].get();
}

void GpuMlp::accumulate(const float* x, const std::int32_t* labels, std::int64_t batch, float grad_scale) {
  const int B = static_cast<int>(std::min(batch, m_batch));
  const std::size_t e = dtype_bytes(m_dtype);
  const char* weights = m_dtype == DType::f32 ? m_master.as<char>() : m_copy.as<char>();
  auto w = [&](std::size_t l) { return weights + m_w_offset[l] * e; };
  auto bias = [&](std::size_t l) { return m_master.as<float>() + m_b_offset[l]; };
  const void* x_in = x;
  if (m_dtype != DType::f32) {
    launch_cast_from_f32(m_dtype, x, m_x16.get(), static_cast<std::size_t>(m_dims[0]) * static_cast<std::size_t>(B),
                         m_stream);
    x_in = m_x16.get();
  }
  const std::size_t L = m_dims.size() - 1;
  // Forward: z_l = W_l a_{l-1} (GEMM, FP32 out), then bias + ReLU into h_l.
  for (std::size_t l = 0; l < L; ++l) {
    const int out = static_cast<int>(m_dims[l + 1]), in = static_cast<int>(m_dims[l]);
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, w(l), out, input_of(l, x_in), in, m_z[l].as<float>(), out, 0.0f);
    if (l + 1 < L) launch_bias_relu(m_dtype, m_z[l].as<float>(), bias(l), m_h[l].get(), out, B, m_stream);
  }
  const int classes = static_cast<int>(m_dims[L]);
  launch_softmax_xent(m_dtype, m_z[L - 1].as<float>(), bias(L - 1), labels, m_dz.get(), state(), classes, B,
                      grad_scale, m_stream);
  // Backward; m_dz holds dL/dz_l for the current layer.
  for (std::size_t l = L; l-- > 0;) {
    const int out = static_cast<int>(m_dims[l + 1]), in = static_cast<int>(m_dims[l]);
    float* gw = m_grad.as<float>() + m_w_offset[l];
    float* gb = m_grad.as<float>() + m_b_offset[l];
    gemm(CUBLAS_OP_N, CUBLAS_OP_T, out, in, B, m_dz.get(), out, input_of(l, x_in), in, gw, out, 1.0f);
    launch_bias_grad(m_dtype, m_dz.get(), gb, out, B, m_stream);
    if (l == 0) break;
    gemm(CUBLAS_OP_T, CUBLAS_OP_N, in, B, out, w(l), out, m_dz.get(), out, m_dh.as<float>(), in, 0.0f);
    launch_relu_backward(m_dtype, m_dh.as<float>(), m_h[l - 1].get(), m_dz.get(),
                         static_cast<std::size_t>(in) * static_cast<std::size_t>(B), m_stream);
  }
}

void GpuMlp::step(int slot) {
  const bool fp16 = m_precision == Precision::fp16;
  // The flag's device address, without dereferencing a device pointer here.
  int* found_inf = reinterpret_cast<int*>(m_state.as<char>() + offsetof(TrainState, found_inf));
  if (fp16) launch_check_finite(m_grad.as<float>(), m_params, found_inf, m_stream);
  OptimizerStep o;
  o.adam = m_adam;
  o.lr = m_lr;
  o.scaled = fp16;
  launch_optimizer(m_dtype, o, m_master.as<float>(), m_dtype == DType::f32 ? nullptr : m_copy.get(),
                   m_grad.as<float>(), m_adam ? m_m.as<float>() : nullptr, m_adam ? m_v.as<float>() : nullptr,
                   m_params, state(), m_stream);
  const auto s = static_cast<std::size_t>(slot & 1);
  TrainState* report = m_reports.as<TrainState>() + s;
  launch_end_step(state(), report, fp16, m_stream);
  AUTOTUNE_CUDA_CALL(cudaMemcpyAsync(m_reports_host.as<TrainState>() + s, report, sizeof(TrainState),
                                     cudaMemcpyDeviceToHost, m_stream));
}

TrainState GpuMlp::report(int slot) const { return m_reports_host.as<TrainState>()[slot & 1]; }

double GpuMlp::probe_gemm_tflops(std::int64_t batch, int repeats) {
  // The layer with the most multiply-adds.
  std::size_t best = 0;
  for (std::size_t l = 1; l + 1 < m_dims.size(); ++l)
    if (m_dims[l] * m_dims[l + 1] > m_dims[best] * m_dims[best + 1]) best = l;
  const int out = static_cast<int>(m_dims[best + 1]), in = static_cast<int>(m_dims[best]);
  const int B = static_cast<int>(std::min(batch, m_batch));
  const std::size_t e = dtype_bytes(m_dtype);
  const char* weights = m_dtype == DType::f32 ? m_master.as<char>() : m_copy.as<char>();
  // Layer 0 reads the input buffer; any operand of the right size will do for timing.
  const void* a_in = best == 0 ? (m_dtype == DType::f32 ? static_cast<const void*>(m_dh.get()) : m_x16.get())
                               : m_h[best - 1].get();
  if (best == 0 && m_dtype == DType::f32 && static_cast<std::size_t>(in) > max_hidden(m_dims)) return 0.0;
  Event start, end;
  for (int i = 0; i < 2; ++i)
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, weights + m_w_offset[best] * e, out, a_in, in, m_z[best].as<float>(),
         out, 0.0f);
  AUTOTUNE_CUDA_CALL(cudaEventRecord(start.get(), m_stream));
  for (int i = 0; i < repeats; ++i)
    gemm(CUBLAS_OP_N, CUBLAS_OP_N, out, B, in, weights + m_w_offset[best] * e, out, a_in, in, m_z[best].as<float>(),
         out, 0.0f);
  AUTOTUNE_CUDA_CALL(cudaEventRecord(end.get(), m_stream));
  AUTOTUNE_CUDA_CALL(cudaEventSynchronize(end.get()));
  const double seconds = elapsed_ms(start, end) / 1000.0;
  return seconds > 0 ? 2.0 * out * static_cast<double>(in) * B * repeats / seconds / 1e12 : 0.0;
}

}  // namespace autotune::cuda
