#include "tuner/run/compare.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <fstream>
#include <map>

#include "workloads/synthetic.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

Value I(std::int64_t v) { return Value{v}; }

SearchSpace small_space() {
  return SearchSpace({{"batch_size", {I(16), I(32), I(64), I(128), I(256)}, Scale::log},
                      {"num_workers", {I(0), I(2), I(4), I(8)}, Scale::linear},
                      {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
                      {"precision", {Value{std::string("fp32")}, Value{std::string("bf16")}}, Scale::categorical}});
}

TEST(MannWhitney, DetectsAShiftAndNotItsAbsence) {
  std::vector<double> low, high, same;
  for (int i = 0; i < 20; ++i) {
    low.push_back(i);
    high.push_back(i + 15);
    same.push_back(i);
  }
  EXPECT_LT(mann_whitney_p_greater(high, low), 1e-4);
  EXPECT_GT(mann_whitney_p_greater(low, high), 0.99);
  EXPECT_GT(mann_whitney_p_greater(same, low), 0.4);
  // All ties: no evidence either way.
  EXPECT_GE(mann_whitney_p_greater({1, 1, 1}, {1, 1, 1}), 0.5);
}

TEST(Compare, EachRunFillsTheExecutorsParallelSlots) {
  const SearchSpace space = small_space();
  auto info = synthetic_workload_info();
  auto w = info.make(Options::with_defaults(info.options, {}), {});
  // Each trial holds its slot until three are in flight at once (or a
  // generous deadline passes, which then fails the count below).
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, most = 0;
  MeasureFn measure = [&](const Assignment& a, const TrialContext& c) {
    std::unique_lock lock(mu);
    most = std::max(most, ++in_flight);
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return in_flight >= 3 || most >= 3; });
    --in_flight;
    lock.unlock();
    return w->measure(a, c);
  };
  auto executor = make_local_executor(measure, 3);
  CompareOptions opt;
  opt.strategies = {"random"};
  opt.repeats = 2;
  opt.budget = 9;
  opt.budgets = {9};
  CompareResult r = run_compare(space, *w, *executor, TrialSettings{}, opt);
  EXPECT_EQ(most, 3);
  // Every run still has one row per trial of its budget, numbered in the
  // order they finished.
  ASSERT_EQ(r.trials.size(), 2u * 9u);
  for (int rep = 0; rep < 2; ++rep)
    for (int t = 1; t <= 9; ++t) {
      const CompareTrial& row = r.trials[static_cast<std::size_t>(rep * 9 + t - 1)];
      EXPECT_EQ(row.repeat, rep);
      EXPECT_EQ(row.trial, t);
      EXPECT_EQ(row.status, Status::ok);
      EXPECT_FALSE(row.config.empty());
    }
}

TEST(Compare, ExactOptimumGridReachesItAndReportIsWritten) {
  const SearchSpace space = small_space();
  auto info = synthetic_workload_info();
  auto w = info.make(Options::with_defaults(info.options, {{"noise", OptionValue{0.02}}}), {});
  CompareOptions opt;
  opt.strategies = {"grid", "random"};
  opt.repeats = 5;
  opt.budget = 80;  // the whole space
  opt.budgets = {10, 40};
  MeasureFn measure = [&](const Assignment& a, const TrialContext& c) { return w->measure(a, c); };
  CompareResult r = run_compare(space, *w, measure, opt);
  EXPECT_TRUE(r.exact_optimum);
  ASSERT_EQ(r.summary.size(), 2u);
  EXPECT_EQ(r.trials.size(), 2u * 5u * 80u);
  // grid measures everything; under 2% noise its recommendation (the best
  // measured) is within a few percent of the exact optimum, never above it.
  EXPECT_GT(r.summary[0].median_fraction.back(), 0.95);
  for (const auto& t : r.trials) EXPECT_LE(t.fraction, 1.0 + 1e-12);
  // Each trial's own configuration, by the truth: what it measured within
  // the noise, and the grid's best trial the optimum itself.
  double best_trial = 0;
  // The rows name configurations as the space describes them: each such
  // name with its true value, to read the config and answer columns back.
  std::map<std::string, double> truth_by_name;
  const std::vector<Config> all = *space.enumerate();
  for (const auto& c : all)
    truth_by_name[space.to_assignment(c).describe()] = w->expected(space.to_assignment(c))->throughput;
  const auto named = [&](const std::string& text) {
    auto it = truth_by_name.find(text);
    return it == truth_by_name.end() ? -1.0 : it->second;
  };
  for (const auto& t : r.trials) {
    if (t.status != Status::ok) {
      EXPECT_EQ(t.trial_true, 0.0);
      continue;
    }
    ASSERT_GT(t.trial_true, 0.0);
    EXPECT_NEAR(std::log(t.measured / t.trial_true), 0.0, 0.2);
    // The row names what it measured and the answer after it: each read
    // back through the space is the configuration whose truth it reports.
    EXPECT_DOUBLE_EQ(named(t.config), t.trial_true) << t.config;
    EXPECT_DOUBLE_EQ(named(t.answer), t.recommended_true) << t.answer;
    if (t.strategy == "grid") best_trial = std::max(best_trial, t.trial_true);
    EXPECT_EQ(t.proposed_as, t.strategy) << "grid and random propose under their own names";
  }
  EXPECT_DOUBLE_EQ(best_trial, r.optimum);
  EXPECT_EQ(r.summary[0].budgets, (std::vector<int>{10, 40, 80}));

  const auto dir = std::filesystem::temp_directory_path() / ("autotune_compare_" + std::to_string(::getpid()));
  std::string warning;
  std::string md = write_compare_report(r, opt, dir, &warning);
  EXPECT_NE(md.find("| grid |"), std::string::npos) << md;
  EXPECT_NE(md.find("exact, enumerated"), std::string::npos);
  // The synthetic workload without simulated_time takes milliseconds: shown as such, not as "0" seconds.
  EXPECT_EQ(md.find("| 0 | 0 |"), std::string::npos) << md;
  for (const char* f : {"trials.csv", "summary.csv", "summary.md", "plots.gp"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::ifstream csv(dir / "trials.csv");
  std::size_t lines = 0;
  std::string head;
  std::getline(csv, head);
  EXPECT_TRUE(head.size() >= 12 && head.compare(head.size() - 12, 12, ",proposed_as") == 0) << head;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, r.trials.size());
  if (warning.empty()) {  // gnuplot is installed by scripts/deps.sh
    EXPECT_GT(std::filesystem::file_size(dir / "best_so_far.png"), 5000u);
    EXPECT_GT(std::filesystem::file_size(dir / "evals_to_95.png"), 5000u);
  }
  std::filesystem::remove_all(dir);
}

// search.confirm in a comparison: after each run the best two are measured
// once more, each with a noise seed of its own (the first measurement's
// would repeat its noise), and the answer is chosen on all the runs, as
// tuning does.
TEST(Compare, ConfirmationsMeasureTheBestAgainWithTheirOwnNoise) {
  const SearchSpace space = small_space();
  auto info = synthetic_workload_info();
  auto w = info.make(Options::with_defaults(info.options, {{"noise", OptionValue{0.05}}}), {});
  CompareOptions opt;
  opt.strategies = {"random"};
  opt.repeats = 4;
  opt.budget = 10;
  opt.budgets = {10};
  opt.confirm = 2;
  std::map<std::string, std::vector<std::uint64_t>> seeds;  // per configuration, in order
  MeasureFn measure = [&](const Assignment& a, const TrialContext& c) {
    seeds[a.describe()].push_back(c.seed);
    return w->measure(a, c);
  };
  CompareResult r = run_compare(space, *w, measure, opt);
  EXPECT_EQ(r.trials.size(), 4u * 10u);
  ASSERT_EQ(r.runs.size(), 4u);
  std::size_t measured_twice = 0;
  for (const auto& [config, s] : seeds) {
    if (s.size() < 2) continue;
    ++measured_twice;
    EXPECT_NE(s.front(), s.back()) << config << ": a confirmation repeated the first measurement's noise";
  }
  EXPECT_GE(measured_twice, 2u);
  for (const auto& e : r.runs) {
    EXPECT_GT(e.confirmed_fraction, 0.0);
    EXPECT_LE(e.confirmed_fraction, 1.0 + 1e-12);
  }
  ASSERT_EQ(r.summary.size(), 1u);
  EXPECT_GT(r.summary[0].median_confirmed, 0.0);
  EXPECT_GE(r.summary[0].median_total_confirmed_s, r.summary[0].median_total_s);

  opt.confirm = 0;
  CompareResult plain = run_compare(space, *w, measure, opt);
  EXPECT_TRUE(plain.runs.empty());
  EXPECT_LT(plain.summary[0].median_confirmed, 0.0);
}

}  // namespace
}  // namespace autotune
