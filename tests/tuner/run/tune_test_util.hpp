#pragma once
// The tuning loop's fixture: specs built in code over the synthetic
// workload, each test in a fresh folder (tune_test.cpp, tune_resume_test.cpp,
// tune_answer_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "tuner/run/interrupt.hpp"
#include "tuner/run/tune.hpp"
#include "workloads/synthetic.hpp"
#include "workloads/workloads.hpp"

#include "tests/support/test_dir.hpp"

namespace autotune::testing {

inline Value I(std::int64_t v) { return Value{v}; }
inline Value S(const char* s) { return Value{std::string(s)}; }

class TuneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = autotune::testing::fresh_test_dir("tune_test");
    clear_interrupt();
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }

  Spec make_spec(const std::string& strategy, int budget) {
    Spec s;
    s.file = "test.yaml";
    s.workload.kind = "synthetic";
    s.space = SearchSpace(
        {
            {"batch_size", {I(16), I(32), I(64), I(128), I(256), I(512)}, Scale::log},
            {"num_workers", {I(0), I(2), I(4), I(8), I(12)}, Scale::linear},
            {"prefetch_factor", {I(1), I(2), I(4)}, Scale::log},
            {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
            {"precision", {S("fp32"), S("bf16")}, Scale::categorical},
            {"grad_accum", {I(1), I(2)}, Scale::linear},
        },
        {"batch_size * grad_accum <= 512"});
    s.search.strategy = strategy;
    s.search.budget_trials = budget;
    s.search.seed = 3;
    s.search.initial = {Config{1, 0, 1, 0, 0, 0}};
    s.output.tuned = m_dir / "tuned.yaml";
    s.output.journal = m_dir / "tuned.journal.jsonl";
    s.search.explain = false;  // its extra trials: the Explain and SameTraining suites
    return s;
  }

  std::unique_ptr<Workload> synthetic(double noise = 0.0) {
    return synthetic_workload_info().make(
        Options::with_defaults(synthetic_workload_info().options, {{"noise", OptionValue{noise}}}), {});
  }

  static MeasureFn measure_with(Workload& w, int* calls = nullptr) {
    return [&w, calls](const Assignment& a, const TrialContext& ctx) {
      if (calls) ++*calls;
      return w.measure(a, ctx);
    };
  }

  std::filesystem::path m_dir;
};

}  // namespace autotune::testing
