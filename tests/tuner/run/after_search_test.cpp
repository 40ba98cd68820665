// The measurements after the search as trial sources the driver runs
// (tuner/run/after_search.hpp): what each proposes, in which order, what it
// files in the study, and where it stops.
#include "tuner/run/after_search.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "tuner/run/executor.hpp"
#include "tuner/run/interrupt.hpp"

namespace autotune {
namespace {

Value I(std::int64_t v) { return Value{v}; }

SearchSpace two_knobs() {
  return SearchSpace({{"x", {I(0), I(1), I(2), I(3), I(4), I(5)}, Scale::linear},
                      {"y", {I(0), I(1), I(2), I(3), I(4), I(5)}, Scale::linear}});
}

// Every trial through the driver: its configuration and seed as started.
class Recorder final : public TrialObserver {
 public:
  explicit Recorder(const SearchSpace& space) : m_space(space) {}
  void started(int, const Proposal& p, const Assignment&) override {
    configs.push_back(p.config);
    phases.push_back(p.phase);
    seeds.push_back(p.seed_key);
  }
  std::vector<Config> configs;
  std::vector<Phase> phases;
  std::vector<std::optional<std::uint64_t>> seeds;

 private:
  const SearchSpace& m_space;
};

class AfterSearch : public ::testing::Test {
 protected:
  void SetUp() override { clear_interrupt(); }
  void TearDown() override { clear_interrupt(); }

  // Runs `source` through a driver over one slot whose trials measure
  // `throughput(x, y)`; returns how the driver ended.
  RunEnd drive(TrialSource& source, std::function<Outcome(std::int64_t, std::int64_t)> outcome) {
    auto executor = make_local_executor(
        [outcome](const Assignment& a, const TrialContext&) { return outcome(a.get_int("x", 0), a.get_int("y", 0)); },
        1);
    Scheduler scheduler(*executor, TrialSettings{});
    Driver driver(scheduler, m_space, {&m_recorder}, 100);
    return driver.run(source);
  }

  Study study_with(Config baseline, double base_tp, Config answer, double answer_tp) {
    Study s;
    s.trials.push_back({1, baseline, Outcome::success(base_tp), false});
    s.trials.push_back({2, answer, Outcome::success(answer_tp), false});
    s.baseline = s.trials.front();
    s.best = answer;
    s.best_outcome = s.trials.back().outcome;
    return s;
  }

  SearchSpace m_space = two_knobs();
  Recorder m_recorder{m_space};
};

TEST_F(AfterSearch, ConfirmationsMeasureEachCandidateInOrderAndSkipThoseTheStudyHolds) {
  Study s;
  const Config a{1, 0}, b{2, 0}, c{3, 0};
  s.confirmations.push_back({7, b, Outcome::success(90), true});  // journaled by an earlier session
  std::vector<std::pair<int, int>> told;
  ConfirmSource source(
      s, {a, b, c}, [&](const TrialRecord& t, int i, int n) { told.emplace_back(i, n), (void)t; },
      [](const Config& cfg) -> std::optional<std::uint64_t> { return 1000u + static_cast<std::uint64_t>(cfg[0]); });
  EXPECT_EQ(drive(source, [](auto x, auto) { return Outcome::success(100.0 + static_cast<double>(x)); }),
            RunEnd::exhausted);
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{a, c}));
  EXPECT_EQ(m_recorder.phases, (std::vector<Phase>{Phase::confirm, Phase::confirm}));
  EXPECT_EQ(m_recorder.seeds, (std::vector<std::optional<std::uint64_t>>{1001, 1003}));
  EXPECT_EQ(told, (std::vector<std::pair<int, int>>{{1, 3}, {2, 3}, {3, 3}}));
  ASSERT_EQ(s.confirmations.size(), 3u);
  EXPECT_EQ(s.confirmations[1].config, a);
  EXPECT_EQ(s.confirmations[1].trial, 100);
  EXPECT_DOUBLE_EQ(s.confirmations[1].outcome.throughput, 101.0);
  EXPECT_EQ(s.confirmations[2].config, c);
  EXPECT_EQ(s.confirmations[2].trial, 101);
}

TEST_F(AfterSearch, PairsAlternateAbbaAndStopOnceTheIntervalIsNarrow) {
  const Config base{0, 0}, answer{4, 0};
  Study s = study_with(base, 100, answer, 140);
  int looks = 0;
  std::vector<std::string> which;
  PairsSource source(
      s, 8, [&] { return ++looks, true; },
      [&](const TrialRecord&, const char* w, int, int of) {
        which.push_back(w);
        EXPECT_EQ(of, 16);
      });
  // The same ratio in every pair: the interval is a point after the three pairs that are the least.
  EXPECT_EQ(drive(source, [](auto x, auto) { return Outcome::success(100.0 + 10.0 * static_cast<double>(x)); }),
            RunEnd::exhausted);
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{base, answer, answer, base, base, answer}));
  EXPECT_EQ(which, (std::vector<std::string>{"baseline", "answer", "answer", "baseline", "baseline", "answer"}));
  EXPECT_EQ(looks, 3);  // once before each pair
  EXPECT_EQ(s.baseline_again.size(), 3u);
  EXPECT_EQ(s.answer_again.size(), 3u);
  EXPECT_TRUE(source.settled());
  const auto x = s.speedup();
  ASSERT_TRUE(x);
  EXPECT_NEAR(x->ratio, 1.4, 1e-9);
}

TEST_F(AfterSearch, PairsUnderALastingLoadStopLookingAndAFailedPairEndsThem) {
  const Config base{0, 0}, answer{4, 0};
  Study s = study_with(base, 100, answer, 140);
  int looks = 0;
  PairsSource source(s, 8, [&] { return ++looks, false; }, {});  // the load lasts: asked once
  int answers = 0;
  EXPECT_EQ(drive(source,
                  [&](auto x, auto) {
                    if (x == 4 && ++answers == 2) return Outcome::failure(Status::crash, "killed");
                    return Outcome::success(100.0 + 10.0 * static_cast<double>(x));
                  }),
            RunEnd::exhausted);
  EXPECT_EQ(looks, 1);
  // Pair 1 (baseline, answer), pair 2 starts with the answer, which fails: no more pairs.
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{base, answer, answer, base}));
  EXPECT_TRUE(source.settled());
  EXPECT_FALSE(paired_log_ratios(s));
}

TEST_F(AfterSearch, PairsResumeFromHalfAPairAndStopAtTheCap) {
  const Config base{0, 0}, answer{4, 0};
  Study s = study_with(base, 100, answer, 140);
  s.baseline_again.push_back({3, base, Outcome::success(100), true});  // an earlier session's half pair
  PairsSource source(s, 2, {}, {});
  EXPECT_EQ(drive(source, [](auto x, auto) { return Outcome::success(100.0 + 10.0 * static_cast<double>(x)); }),
            RunEnd::exhausted);
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{answer, answer, base}));
  EXPECT_EQ(s.answer_again.size(), 2u);
}

TEST_F(AfterSearch, TheExplanationMeasuresEachKnobPutBackThenKeepsOnlyWhatBoughtSomething) {
  // y does nothing: the answer (4, 3) with y put back (4, 0) measures the
  // same, so y goes back; x put back (0, 3) loses 40%, so x stays.
  const Config base{0, 0}, answer{4, 3};
  Study s = study_with(base, 100, answer, 140);
  std::vector<Config> told;
  ExplainSource source(s, m_space, [&](const TrialRecord& t) { told.push_back(t.config); });
  EXPECT_EQ(drive(source, [](auto x, auto) { return Outcome::success(100.0 + 10.0 * static_cast<double>(x)); }),
            RunEnd::exhausted);
  // The answer as emitted, (4, 0), was measured as y's put-back: not again.
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{Config{0, 3}, Config{4, 0}}));
  EXPECT_EQ(m_recorder.phases, (std::vector<Phase>{Phase::explain, Phase::explain}));
  EXPECT_EQ(told, m_recorder.configs);
  ASSERT_EQ(s.knobs.size(), 2u);
  EXPECT_EQ(s.knobs[0].knob, "x");
  EXPECT_FALSE(s.knobs[0].put_back);
  EXPECT_NEAR(*s.knobs[0].worth, 0.4, 1e-9);
  EXPECT_EQ(s.knobs[1].knob, "y");
  EXPECT_TRUE(s.knobs[1].put_back);
  EXPECT_EQ(s.best, (Config{4, 0}));
  EXPECT_EQ(s.explanations.size(), 2u);
}

TEST_F(AfterSearch, AnInterruptedExplanationKeepsTheAnswerAndSaysWhatWasNotMeasured) {
  const Config base{0, 0}, answer{4, 3};
  Study s = study_with(base, 100, answer, 140);
  ExplainSource source(s, m_space, {});
  EXPECT_EQ(drive(source,
                  [](auto x, auto) {
                    request_interrupt();  // Ctrl-C while the first put-back ran
                    return Outcome::success(100.0 + 10.0 * static_cast<double>(x));
                  }),
            RunEnd::interrupted);
  source.finish();
  EXPECT_EQ(m_recorder.configs, (std::vector<Config>{Config{0, 3}}));
  EXPECT_EQ(s.best, answer);
  ASSERT_EQ(s.knobs.size(), 2u);
  EXPECT_FALSE(s.knobs[0].put_back);
  EXPECT_EQ(s.knobs[1].note, "not measured");
}

}  // namespace
}  // namespace autotune
