#pragma once
// Shared by the cpu workload suites: short trials and configurations.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "workloads/workload.hpp"

namespace autotune {

using I = std::int64_t;

inline std::unique_ptr<Workload> make_cpu(std::map<std::string, OptionValue> given) {
  const WorkloadInfo* info = find_workload("cpu");
  EXPECT_NE(info, nullptr);
  return info->make(Options::with_defaults(info->options, std::move(given)), WorkloadEnv{});
}

// Short trials: 0.3 s warm-up, 0.1 s windows.
inline std::map<std::string, OptionValue> quick(double max_seconds) {
  return {{"warmup_seconds", 0.3}, {"window_seconds", 0.1}, {"max_seconds", max_seconds}, {"target_rsd", 0.05}};
}

inline Assignment config(I batch, I workers, std::string precision = "fp32") {
  return Assignment({{"batch_size", Value{batch}},
                     {"num_workers", Value{workers}},
                     {"prefetch_factor", Value{I{2}}},
                     {"pin_memory", Value{false}},
                     {"precision", Value{std::move(precision)}},
                     {"grad_accum", Value{I{1}}}});
}

}  // namespace autotune
