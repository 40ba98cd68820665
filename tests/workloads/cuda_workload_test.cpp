// The cuda workload. Built with the CUDA toolkit only; without a device every
// test but the no-device one skips, and that one checks the clean error.
#ifdef AUTOTUNE_HAVE_CUDA

#include <gtest/gtest.h>

#include <iostream>

#include "workloads/cuda/cuda_workload.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

using I = std::int64_t;

std::unique_ptr<Workload> make_cuda(std::map<std::string, OptionValue> given = {}) {
  const WorkloadInfo* info = find_workload("cuda");
  EXPECT_NE(info, nullptr);
  given.emplace("warmup_seconds", 0.5);
  given.emplace("max_seconds", 3.0);
  return info->make(Options::with_defaults(info->options, std::move(given)), WorkloadEnv{});
}

Assignment config(I batch, I workers, bool pin, std::string precision, I accum = 1) {
  return Assignment({{"batch_size", Value{batch}},
                     {"num_workers", Value{workers}},
                     {"prefetch_factor", Value{I{2}}},
                     {"pin_memory", Value{pin}},
                     {"precision", Value{std::move(precision)}},
                     {"grad_accum", Value{accum}}});
}

TEST(CudaWorkload, WithoutADeviceIsAnErrorNotACrash) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a device is present";
  auto w = make_cuda();
  const Outcome o = w->measure(config(64, 0, true, "bf16"), TrialContext{});
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("no CUDA device"), std::string::npos) << o.reason;
}

TEST(CudaWorkload, UnknownPrecisionIsAnError) {
  auto w = make_cuda();
  const Outcome o = w->measure(config(64, 0, true, "fp8"), TrialContext{});
  EXPECT_EQ(o.status, Status::error);
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(CudaDevice, EveryPrecisionTrainsAndReportsItsMetrics) {
  auto w = make_cuda({{"width", I{1024}}, {"depth", I{2}}});
  for (const char* p : {"fp32", "tf32", "fp16", "bf16"}) {
    const Outcome o = w->measure(config(256, 4, true, p), TrialContext{});
    ASSERT_TRUE(o.ok()) << p << ": " << o.reason;
    for (const char* m : {"gpu_busy", "vram_bytes", "gemm_tflops", "throughput_rsd", "stopped_by_rsd", "ram_bytes"})
      EXPECT_TRUE(o.metric(m).has_value()) << p << " " << m;
    EXPECT_GT(*o.metric("gemm_tflops"), 0.0) << p;
    EXPECT_GT(*o.metric("gpu_busy"), 0.0) << p;
    EXPECT_LE(*o.metric("gpu_busy"), 1.0) << p;
  }
}

TEST_F(CudaDevice, HalfPrecisionGemmsAreFasterThanPedanticFp32) {
  auto w = make_cuda({{"width", I{8192}}, {"depth", I{2}}, {"max_seconds", 2.0}});
  const Outcome fp32 = w->measure(config(1024, 8, true, "fp32"), TrialContext{});
  const Outcome bf16 = w->measure(config(1024, 8, true, "bf16"), TrialContext{});
  ASSERT_TRUE(fp32.ok() && bf16.ok()) << fp32.reason << bf16.reason;
  EXPECT_GT(*bf16.metric("gemm_tflops"), 3.0 * *fp32.metric("gemm_tflops"));
}

TEST_F(CudaDevice, VramLimitBelowTheCardIsAnOom) {
  auto w = make_cuda();
  TrialContext ctx;
  ctx.limits.vram_bytes = 1.5e9;  // context + a 4096-wide model at batch 8192 does not fit
  const Outcome o = w->measure(config(8192, 2, true, "fp32"), ctx);
  EXPECT_EQ(o.status, Status::oom) << o.reason;
}

TEST_F(CudaDevice, GradAccumAndPageableCopiesWork) {
  auto w = make_cuda({{"width", I{1024}}, {"depth", I{2}}});
  const Outcome o = w->measure(config(128, 2, false, "bf16", 4), TrialContext{});
  ASSERT_TRUE(o.ok()) << o.reason;
  EXPECT_GT(o.throughput, 0.0);
}

// Not run by default (bench/gpu/run_h100.sh runs it): the largest layer's
// GEMM TFLOP/s per precision at width 8192, batch 4096.
TEST_F(CudaDevice, DISABLED_GemmTflopsPerPrecision) {
  auto w = make_cuda({{"width", I{8192}}, {"depth", I{2}}, {"input_dim", I{1024}}, {"max_seconds", 1.5},
                      {"warmup_seconds", 0.3}});
  std::cout << "precision,batch_size,gemm_tflops,model_tflops,throughput,gpu_busy,vram_bytes\n";
  for (const char* p : {"fp32", "tf32", "fp16", "bf16"}) {
    const Outcome o = w->measure(config(4096, 12, true, p), TrialContext{});
    ASSERT_TRUE(o.ok()) << p << ": " << o.reason;
    std::cout << p << ",4096," << *o.metric("gemm_tflops") << "," << *o.metric("model_tflops") << ","
              << o.throughput << "," << *o.metric("gpu_busy") << "," << *o.metric("vram_bytes") << "\n";
  }
}

}  // namespace
}  // namespace autotune

#endif  // AUTOTUNE_HAVE_CUDA
