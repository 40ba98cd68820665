// search.confirm: the best few re-measured after the search, the answer
// chosen on all measurements; journaled, resumed, shown in tuned.yaml.
#include "tuner/record/confirm.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <set>

#include "tuner/record/emitter.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/run/tune.hpp"

#include "tests/support/test_dir.hpp"

namespace autotune {
namespace {

TrialRecord rec(int trial, int index, Outcome o) { return {trial, Config{index}, std::move(o), false}; }

TEST(ConfirmCandidates, RecommendationFirstThenFastestOkDistinct) {
  const std::vector<TrialRecord> trials = {rec(1, 0, Outcome::success(100)), rec(2, 1, Outcome::success(300)),
                                           rec(3, 2, Outcome::failure(Status::oom, "")),
                                           rec(4, 3, Outcome::success(200))};
  EXPECT_EQ(confirm_candidates(trials, Config{3}, 3), (std::vector<Config>{{3}, {1}, {0}}));
  EXPECT_EQ(confirm_candidates(trials, Config{1}, 2), (std::vector<Config>{{1}, {3}}));
  // A recommendation whose search trial failed is not a candidate; nor are failed trials.
  EXPECT_EQ(confirm_candidates(trials, Config{2}, 5), (std::vector<Config>{{1}, {3}, {0}}));
  EXPECT_TRUE(confirm_candidates(trials, std::nullopt, 0).empty());
}

TEST(ConfirmRows, ChoosesTheBestMeanAmongCandidatesThatHeldUp) {
  const std::vector<TrialRecord> trials = {rec(1, 0, Outcome::success(1000)), rec(2, 1, Outcome::success(900)),
                                           rec(3, 2, Outcome::success(950))};
  const std::vector<TrialRecord> again = {rec(4, 0, Outcome::success(500)), rec(5, 1, Outcome::success(880)),
                                          rec(6, 2, Outcome::failure(Status::crash, "signal 11"))};
  const auto rows = confirm_rows({{0}, {1}, {2}}, trials, again);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[0].mean, 750);
  EXPECT_FALSE(rows[0].chosen);
  EXPECT_DOUBLE_EQ(rows[1].mean, 890);
  EXPECT_TRUE(rows[1].chosen);
  EXPECT_FALSE(rows[2].all_ok);  // crashed when run again: never chosen, however fast it was once
  EXPECT_FALSE(rows[2].chosen);
  ASSERT_EQ(rows[2].measurements.size(), 2u);
  // Not re-measured yet (Ctrl-C came first): not chosen on its one measurement.
  EXPECT_FALSE(confirm_rows({{0}}, trials, {})[0].chosen);
}

// A one-knob space, measured by a scripted function: batch 128 is lucky once
// (1000, then 500), batch 64 steady at 900, the rest slow.
class ConfirmRun : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = autotune::testing::fresh_test_dir("confirm_test");
    clear_interrupt();
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }

  Spec spec(int confirm) {
    Spec s;
    s.file = "test.yaml";
    s.workload.kind = "scripted";
    s.space = SearchSpace({{"batch_size",
                            {Value{std::int64_t{16}}, Value{std::int64_t{32}}, Value{std::int64_t{64}},
                             Value{std::int64_t{128}}},
                            Scale::log}});
    s.search.strategy = "grid";
    s.search.seed = 1;
    s.search.confirm = confirm;
    s.output.tuned = m_dir / "tuned.yaml";
    s.output.journal = m_dir / "tuned.journal.jsonl";
    return s;
  }

  MeasureFn scripted() {
    return [this](const Assignment& a, const TrialContext&) {
      const auto bs = a.get_int("batch_size", 0);
      const int n = ++m_calls[bs];
      if (m_fail_again.count(bs) && n > 1) return Outcome::failure(Status::crash, "killed by signal 11");
      if (bs == 128) return Outcome::success(n == 1 ? 1000.0 : 500.0);
      if (bs == 64) return Outcome::success(900.0);
      return Outcome::success(static_cast<double>(bs));
    };
  }
  int total_calls() const {
    int t = 0;
    for (const auto& [bs, n] : m_calls) t += n;
    return t;
  }
  static std::int64_t batch(const Spec& s, const std::optional<Config>& c) {
    return s.space.to_assignment(*c).get_int("batch_size", -1);
  }

  std::filesystem::path m_dir;
  std::map<std::int64_t, int> m_calls;
  std::set<std::int64_t> m_fail_again;
};

TEST_F(ConfirmRun, WithoutConfirmTheLuckyRunWins) {
  const Spec s = spec(0);
  const Study r = run_tuning(s, scripted(), {});
  EXPECT_EQ(batch(s, r.best), 128);
  EXPECT_TRUE(r.confirmations.empty());
  EXPECT_EQ(total_calls(), 4);
}

TEST_F(ConfirmRun, TheSteadyConfigurationWinsOnTheMeanAndEverythingIsJournaled) {
  const Spec s = spec(2);
  const Study r = run_tuning(s, scripted(), {});
  EXPECT_EQ(total_calls(), 6);  // 4 search trials + 2 confirmations, outside the budget
  EXPECT_EQ(r.trials.size(), 4u);
  ASSERT_EQ(r.confirmations.size(), 2u);
  EXPECT_EQ(batch(s, r.confirmations[0].config), 128);  // the recommendation first
  EXPECT_EQ(batch(s, r.confirmations[1].config), 64);
  EXPECT_EQ(batch(s, r.best), 64);
  ASSERT_TRUE(r.best_outcome);
  EXPECT_DOUBLE_EQ(r.best_outcome->throughput, 900);
  EXPECT_EQ(r.best_outcome->get(metric::throughput_search), 900.0);
  EXPECT_EQ(r.best_outcome->get(metric::throughput_mean), 900.0);

  const JournalContents j = read_journal(s.output.journal);
  ASSERT_EQ(j.trials.size(), 6u);
  for (std::size_t i = 0; i < j.trials.size(); ++i) {
    EXPECT_EQ(j.trials[i].phase == Phase::confirm, i >= 4) << i;
    EXPECT_TRUE(j.trials[i].outcome) << i;
  }

  write_tuned_yaml(s, r, s.output.tuned);
  const YAML::Node y = YAML::LoadFile(s.output.tuned.string());
  EXPECT_EQ(y["best"]["batch_size"].as<int>(), 64);
  EXPECT_DOUBLE_EQ(y["metrics"]["throughput"].as<double>(), 900);
  EXPECT_EQ(y["search"]["trials"].as<int>(), 4);
  EXPECT_EQ(y["search"]["confirmations"].as<int>(), 2);
  ASSERT_EQ(y["confirm"].size(), 2u);
  EXPECT_EQ(y["confirm"][0]["config"]["batch_size"].as<int>(), 128);
  EXPECT_DOUBLE_EQ(y["confirm"][0]["throughputs"][0].as<double>(), 1000);
  EXPECT_DOUBLE_EQ(y["confirm"][0]["throughputs"][1].as<double>(), 500);
  EXPECT_DOUBLE_EQ(y["confirm"][0]["mean"].as<double>(), 750);
  EXPECT_FALSE(y["confirm"][0]["chosen"].as<bool>());
  EXPECT_TRUE(y["confirm"][1]["chosen"].as<bool>());
}

TEST_F(ConfirmRun, ResumeMeasuresOnlyTheConfirmationsTheJournalLacks) {
  run_tuning(spec(1), scripted(), {});
  EXPECT_EQ(total_calls(), 5);
  m_calls.clear();
  TuneOptions resume;
  resume.resume = true;
  // Now two candidates: 128 is confirmed already, only 64 is measured.
  const Spec s = spec(2);
  const Study r = run_tuning(s, scripted(), resume);
  EXPECT_EQ(total_calls(), 1);
  EXPECT_EQ(m_calls[64], 1);
  EXPECT_EQ(r.trials.size(), 4u);
  EXPECT_EQ(r.confirmations.size(), 2u);
  EXPECT_EQ(batch(s, r.best), 64);
  // And again: nothing left to measure.
  m_calls.clear();
  const Study again = run_tuning(s, scripted(), resume);
  EXPECT_EQ(total_calls(), 0);
  EXPECT_EQ(batch(s, again.best), 64);
}

TEST_F(ConfirmRun, AConfigurationThatFailsWhenRunAgainIsNotChosen) {
  m_fail_again = {64};
  const Spec s = spec(2);
  const Study r = run_tuning(s, scripted(), {});
  ASSERT_EQ(r.confirmed.size(), 2u);
  EXPECT_FALSE(r.confirmed[1].all_ok);
  EXPECT_EQ(batch(s, r.best), 128);  // mean 750, the only one that held up
  // Reported as measured again, not as the lucky first run or the mean.
  EXPECT_DOUBLE_EQ(r.best_outcome->throughput, 500);
  EXPECT_EQ(r.best_outcome->get(metric::throughput_search), 1000.0);
  EXPECT_EQ(r.best_outcome->get(metric::throughput_mean), 750.0);
}

TEST_F(ConfirmRun, WhenEveryCandidateFailsAgainTheFastestUnrefutedOneIsTheAnswer) {
  m_fail_again = {64, 128};
  const Spec s = spec(2);
  const Study r = run_tuning(s, scripted(), {});
  EXPECT_EQ(batch(s, r.best), 32);
  EXPECT_DOUBLE_EQ(r.best_outcome->throughput, 32);
}

TEST_F(ConfirmRun, AnInterruptedSearchIsNotConfirmed) {
  const Spec s = spec(2);
  int calls = 0;
  auto measure = scripted();
  const Study r = run_tuning(
      s,
      [&](const Assignment& a, const TrialContext& ctx) {
        if (++calls == 4) request_interrupt();
        return measure(a, ctx);
      },
      {});
  clear_interrupt();
  EXPECT_EQ(r.stopped_by, RunEnd::interrupted);
  EXPECT_TRUE(r.confirmations.empty());
  EXPECT_EQ(batch(s, r.best), 128);
}

}  // namespace
}  // namespace autotune
