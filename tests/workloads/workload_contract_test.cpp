// One contract over every registered workload kind: measure() on a valid
// configuration returns an Outcome (never throws), a known status, and a
// positive finite throughput when ok; the same seed gives the same answer
// where the workload is deterministic. A new kind must add a fixture here.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "workloads/workload.hpp"

namespace autotune {
namespace {

struct Fixture {
  std::map<std::string, OptionValue> options;
  bool deterministic = false;
};

std::filesystem::path replay_table() {
  const auto p = std::filesystem::temp_directory_path() / ("autotune_contract_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(p) << "batch_size,num_workers,prefetch_factor,pin_memory,precision,grad_accum,status,throughput\n"
                      "32,2,2,false,fp32,1,ok,1234.5\n";
  return p;
}

std::optional<Fixture> fixture_for(const std::string& kind) {
  if (kind == "synthetic") return Fixture{{{"noise", OptionValue{0.02}}}, true};
  if (kind == "replay") return Fixture{{{"file", OptionValue{replay_table().string()}}}, true};
  if (kind == "cpu")
    return Fixture{{{"warmup_seconds", OptionValue{0.2}}, {"max_seconds", OptionValue{1.0}},
                    {"dataset_samples", OptionValue{std::int64_t{256}}}},
                   false};
  if (kind == "cuda") return Fixture{{{"max_seconds", OptionValue{2.0}}}, false};
  if (kind == "command")
    return Fixture{{{"command", OptionValue{std::string("echo '{\"throughput\": 42.5}'")}}}, true};
  return std::nullopt;
}

class WorkloadContract : public ::testing::TestWithParam<std::string> {};

TEST_P(WorkloadContract, MeasuresAValidConfigurationWithoutThrowing) {
  const WorkloadInfo* info = find_workload(GetParam());
  ASSERT_TRUE(info);
  auto fx = fixture_for(info->kind);
  ASSERT_TRUE(fx) << "workload kind '" << info->kind << "' has no fixture in workload_contract_test.cpp";
  WorkloadEnv env{{"batch_size", "num_workers", "prefetch_factor", "pin_memory", "precision", "grad_accum"},
                  std::filesystem::temp_directory_path()};
  auto w = info->make(Options::with_defaults(info->options, fx->options), env);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->kind(), info->kind);
  const Assignment a({{"batch_size", Value{std::int64_t{32}}},
                      {"num_workers", Value{std::int64_t{2}}},
                      {"prefetch_factor", Value{std::int64_t{2}}},
                      {"pin_memory", Value{false}},
                      {"precision", Value{std::string("fp32")}},
                      {"grad_accum", Value{std::int64_t{1}}}});
  TrialContext ctx;
  ctx.trial = 1;
  ctx.seed = 99;
  ctx.timeout_s = 30;
  Outcome o;
  ASSERT_NO_THROW(o = w->measure(a, ctx));
  EXPECT_TRUE(parse_status(to_string(o.status)));
  if (o.ok()) {
    EXPECT_TRUE(std::isfinite(o.throughput));
    EXPECT_GT(o.throughput, 0.0);
  } else {
    EXPECT_FALSE(o.reason.empty()) << "a failed outcome says why";
  }
  if (info->kind != "cuda") {
    EXPECT_TRUE(o.ok()) << o.reason;  // cuda: no device on CI machines
  }
  if (fx->deterministic) {
    EXPECT_EQ(w->measure(a, ctx).throughput, o.throughput);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, WorkloadContract, ::testing::ValuesIn(workload_kinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace autotune
