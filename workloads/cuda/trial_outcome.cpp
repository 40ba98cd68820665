#include "workloads/cuda/trial_outcome.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <system_error>

#include <fmt/format.h>

#include "workloads/cuda/cuda_check.hpp"
#include "core/options.hpp"
#include "workloads/pipeline_knobs.hpp"

namespace autotune::cuda {

Outcome outcome_of_exception(std::exception_ptr e, const CardInfo& card) {
  try {
    std::rethrow_exception(e);
  } catch (const CudaError& x) {
    if (x.no_kernel_image())
      return Outcome::failure(Status::error, no_kernel_image_message(card, built_architectures(), x.what()));
    if (x.card_lacks_feature())
      return Outcome::failure(Status::error,
                              fmt::format("{} cannot run this GEMM in this precision (bf16 and tf32 need tensor cores "
                                          "of compute capability 8.0 or later): {}",
                                          describe_card(card), x.what()));
    return Outcome::failure(x.out_of_memory() ? Status::oom : Status::error, x.what());
  } catch (const std::bad_alloc&) {
    return Outcome::failure(Status::host_oom, "host allocation failed (pinned or pageable batch buffers)");
  } catch (const std::system_error& x) {
    return Outcome::failure(Status::error, std::string("could not start the loader's threads: ") + x.what());
  } catch (const std::exception& x) {
    return Outcome::failure(Status::error, std::string("the cuda workload failed: ") + x.what());
  } catch (...) {
    return Outcome::failure(Status::error, "the cuda workload failed with an exception of unknown type");
  }
}

void judge_trial_end(Outcome& o, const TrialEnd& e) {
  judge_limits(o, Limits{e.vram_limit, e.ram_limit}, e.vram_peak, e.ram_peak);
  if (o.status != Status::ok) return;
  if (!std::isfinite(e.loss)) {
    o.status = Status::error;
    o.reason = "the loss diverged (non-finite); lower learning_rate";
  }
}

double gpu_busy_fraction(double step_device_seconds, double samples_per_second, std::int64_t samples_per_step) {
  if (!(step_device_seconds > 0) || !(samples_per_second > 0) || samples_per_step <= 0) return 0.0;
  const double steps_per_second = samples_per_second / static_cast<double>(samples_per_step);
  return std::min(1.0, step_device_seconds * steps_per_second);
}

}  // namespace autotune::cuda
