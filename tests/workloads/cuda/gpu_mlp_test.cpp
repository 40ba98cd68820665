// The GPU MLP's host-side choices: compute types, the parameter layout, the
// memory estimate. No device needed.
#ifdef AUTOTUNE_HAVE_CUDA

#include "workloads/cuda/gpu_mlp.hpp"

#include <gtest/gtest.h>

namespace autotune::cuda {
namespace {

TEST(GpuMlp, Fp32UsesWhatPyTorchUsesAndPedanticOnlyWhenAsked) {
  EXPECT_EQ(compute_type_of(Precision::fp32), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(compute_type_of(Precision::fp32, Fp32Math::pedantic), CUBLAS_COMPUTE_32F_PEDANTIC);
  EXPECT_EQ(compute_type_of(Precision::tf32), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(compute_type_of(Precision::tf32, Fp32Math::pedantic), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(compute_type_of(Precision::fp16), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(compute_type_of(Precision::bf16, Fp32Math::pedantic), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(parse_fp32_math("default"), Fp32Math::standard);
  EXPECT_EQ(parse_fp32_math("pedantic"), Fp32Math::pedantic);
  EXPECT_FALSE(parse_fp32_math("fast"));
}

TEST(GpuMlp, EveryWeightAndBiasStartsOn256BytesInEveryPrecision) {
  // Widths that are not multiples of 8: the old layout put these matrices on
  // element boundaries only.
  MlpShape s;
  s.input_dim = 1001;
  s.width = 777;
  s.depth = 3;
  s.classes = 13;
  const auto d = s.dims();
  const ParameterLayout p = parameter_layout(d);
  ASSERT_EQ(p.weight.size(), d.size() - 1);
  ASSERT_EQ(p.bias.size(), d.size() - 1);
  for (std::size_t l = 0; l + 1 < d.size(); ++l) {
    for (std::size_t bytes : {std::size_t{4}, std::size_t{2}}) {
      EXPECT_EQ(p.weight[l] * bytes % 256, 0u) << "layer " << l << ", " << bytes << "-byte elements";
      EXPECT_EQ(p.bias[l] * bytes % 256, 0u) << "layer " << l;
    }
    // No overlap: each matrix ends before its bias, each bias before the next matrix.
    EXPECT_GE(p.bias[l], p.weight[l] + static_cast<std::size_t>(d[l] * d[l + 1]));
    const std::size_t next = l + 2 < d.size() ? p.weight[l + 1] : p.total;
    EXPECT_GE(next, p.bias[l] + static_cast<std::size_t>(d[l + 1]));
  }
  EXPECT_GE(static_cast<double>(p.total), s.parameters());
  EXPECT_LT(static_cast<double>(p.total), s.parameters() + 2.0 * kParameterAlignment * static_cast<double>(d.size()));
}

TEST(GpuMlp, TheMemoryEstimateHasNoLogitsActivation) {
  // Growing the classes by c adds the weights, biases, Adam state and the
  // FP32 logits (z) and gradient rows, but no 16-bit copy of the logits.
  MlpShape a;
  a.input_dim = 256;
  a.width = 512;
  a.depth = 2;
  a.classes = 1024;
  MlpShape b = a;
  b.classes = 2048;
  const std::int64_t batch = 1000;
  const double grow = gpu_mlp_bytes(b, batch, Precision::bf16, true) - gpu_mlp_bytes(a, batch, Precision::bf16, true);
  const double params = static_cast<double>(parameter_layout(b.dims()).total - parameter_layout(a.dims()).total);
  const double with_logits_h = params * (4 * 4 + 2) + 1024.0 * batch * (4 + 2) + 1024.0 * batch * (4 + 2);
  const double expected = params * (4 * 4 + 2) + 1024.0 * batch * 4 + 1024.0 * batch * (4 + 2);
  EXPECT_DOUBLE_EQ(grow, expected);
  EXPECT_LT(grow, with_logits_h);
}

}  // namespace
}  // namespace autotune::cuda

#endif  // AUTOTUNE_HAVE_CUDA
