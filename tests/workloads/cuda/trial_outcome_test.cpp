// The cuda workload's decisions that need no device: exception mapping, the
// order of the end-of-trial checks, gpu_busy.
#ifdef AUTOTUNE_HAVE_CUDA

#include "workloads/cuda/trial_outcome.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>
#include <system_error>

#include "workloads/cuda/cuda_check.hpp"

namespace autotune::cuda {
namespace {

const CardInfo kCard{"NVIDIA A100-SXM4-80GB", 80};

template <class E>
Outcome outcome_of(E e) {
  return outcome_of_exception(std::make_exception_ptr(std::move(e)), kCard);
}

TEST(CudaTrialOutcome, EachExceptionBecomesAStatusNeverAnEscape) {
  EXPECT_EQ(outcome_of(CudaError("cudaMalloc: out of memory", CudaFailure::out_of_memory)).status, Status::oom);
  EXPECT_EQ(outcome_of(CudaError("vram limit", true)).status, Status::oom);
  const Outcome other = outcome_of(CudaError("cudaMemcpy: illegal address", CudaFailure::other));
  EXPECT_EQ(other.status, Status::error);
  EXPECT_NE(other.reason.find("illegal address"), std::string::npos);
  EXPECT_EQ(outcome_of(std::bad_alloc()).status, Status::host_oom);
  const Outcome threads = outcome_of(std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again)));
  EXPECT_EQ(threads.status, Status::error);
  EXPECT_NE(threads.reason.find("loader's threads"), std::string::npos) << threads.reason;
  // Those the old code let cross the module's boundary (the trial exited 127):
  const Outcome logic = outcome_of(std::out_of_range("map::at"));
  EXPECT_EQ(logic.status, Status::error);
  EXPECT_NE(logic.reason.find("map::at"), std::string::npos) << logic.reason;
  const Outcome odd = outcome_of(42);
  EXPECT_EQ(odd.status, Status::error);
  EXPECT_FALSE(odd.reason.empty());
}

TEST(CudaTrialOutcome, ANoKernelImageErrorNamesTheCardAndTheBuild) {
  const Outcome o = outcome_of(CudaError("kernel launch: cudaErrorNoKernelImageForDevice", failure_of(cudaErrorNoKernelImageForDevice)));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("NVIDIA A100-SXM4-80GB (compute capability 8.0)"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find(describe_architectures(built_architectures())), std::string::npos) << o.reason;
  const Outcome feature = outcome_of(CudaError("cublasGemmEx: CUBLAS_STATUS_ARCH_MISMATCH",
                                               failure_of(CUBLAS_STATUS_ARCH_MISMATCH)));
  EXPECT_EQ(feature.status, Status::error);
  EXPECT_NE(feature.reason.find("NVIDIA A100-SXM4-80GB (compute capability 8.0)"), std::string::npos)
      << feature.reason;
  EXPECT_NE(feature.reason.find("CUBLAS_STATUS_ARCH_MISMATCH"), std::string::npos) << feature.reason;
  EXPECT_TRUE(CudaError("", failure_of(cudaErrorUnsupportedPtxVersion)).no_kernel_image());
  EXPECT_TRUE(CudaError("", failure_of(CUBLAS_STATUS_ALLOC_FAILED)).out_of_memory());
  EXPECT_FALSE(CudaError("", failure_of(cudaErrorIllegalAddress)).no_kernel_image());
}

Outcome measured() { return Outcome::success(1000.0); }

// Over a limit the spec set is `invalid`, as the scheduler judges every
// other workload (workloads/workload.hpp judge_limits).
TEST(CudaTrialOutcome, OverTheVramLimitIsInvalidEvenWhenTheLossAlsoDiverged) {
  Outcome o = measured();
  judge_trial_end(o, TrialEnd{std::numeric_limits<double>::quiet_NaN(), 9e9, 8e9, 1e9, 0});
  EXPECT_EQ(o.status, Status::invalid) << o.reason;
  EXPECT_NE(o.reason.find("vram limit"), std::string::npos) << o.reason;
}

TEST(CudaTrialOutcome, OverTheRamLimitComesBeforeTheLossCheck) {
  Outcome o = measured();
  judge_trial_end(o, TrialEnd{std::numeric_limits<double>::infinity(), 1e9, 8e9, 5e9, 4e9});
  EXPECT_EQ(o.status, Status::invalid) << o.reason;
}

TEST(CudaTrialOutcome, ADivergedLossWithinTheLimitsIsAnError) {
  Outcome o = measured();
  judge_trial_end(o, TrialEnd{std::numeric_limits<double>::quiet_NaN(), 1e9, 8e9, 1e9, 4e9});
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("diverged"), std::string::npos) << o.reason;
  Outcome fine = measured();
  judge_trial_end(fine, TrialEnd{2.3, 1e9, 8e9, 1e9, 4e9});
  EXPECT_TRUE(fine.ok()) << fine.reason;
  Outcome no_limits = measured();
  judge_trial_end(no_limits, TrialEnd{2.3, 9e9, 0, 9e9, 0});
  EXPECT_TRUE(no_limits.ok()) << no_limits.reason;
}

TEST(CudaTrialOutcome, GpuBusyIsDeviceTimePerStepTimesStepsPerSecond) {
  // 10 ms of device time per step of 1024 samples, at 51200 samples/s (50 steps/s).
  EXPECT_NEAR(gpu_busy_fraction(0.010, 51200, 1024), 0.5, 1e-12);
  EXPECT_EQ(gpu_busy_fraction(0.030, 51200, 1024), 1.0);  // never above 1
  EXPECT_EQ(gpu_busy_fraction(0.0, 51200, 1024), 0.0);    // not measured
  EXPECT_EQ(gpu_busy_fraction(0.010, 0, 1024), 0.0);
  EXPECT_EQ(gpu_busy_fraction(0.010, 51200, 0), 0.0);
}

}  // namespace
}  // namespace autotune::cuda

#endif  // AUTOTUNE_HAVE_CUDA
