// The answer the loop gives: ties and noise go to the baseline's knobs, a
// pinned effective batch, what it changes of the training, search.explain.
#include "tuner/run/tune.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "tuner/record/emitter.hpp"
#include "tuner/record/explain.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/run/compare.hpp"

#include "tests/tuner/run/tune_test_util.hpp"

namespace autotune {
namespace {

using testing::TuneTest;

class SameTraining : public TuneTest {};

// Occam's answer: configurations that measure the same (here only the batch
// and the workers matter; pin_memory, precision, prefetch and accumulation
// change nothing) answer with the one closest to the baseline: its
// precision, pinning and accumulation, and the exports leave the precision
// alone.
TEST_F(SameTraining, ATieAnswersWithTheBaselinesKnobs) {
  Spec spec = make_spec("grid", 0);
  Study r = run_tuning(
      spec,
      [](const Assignment& a, const TrialContext&) {
        const double b = static_cast<double>(a.get_int("batch_size", 0));
        return Outcome::success(b * (1.0 + static_cast<double>(a.get_int("num_workers", 0))));
      },
      {});
  ASSERT_TRUE(r.best);
  const Assignment best = spec.space.to_assignment(*r.best);
  EXPECT_EQ(best.get_int("batch_size", 0), 512) << best.describe();
  EXPECT_EQ(best.get_int("num_workers", 0), 12);
  EXPECT_EQ(best.get_string("precision", ""), "fp32");
  EXPECT_FALSE(best.get_bool("pin_memory", true));
  EXPECT_EQ(best.get_int("grad_accum", 0), 1);
  EXPECT_EQ(best.get_int("prefetch_factor", 0), 2);
  write_tuned_yaml(spec, r, spec.output.tuned);
  const YAML::Node y = YAML::LoadFile(spec.output.tuned.string());
  EXPECT_FALSE(y["exports"]["hf_training_arguments"]["bf16"]);
  EXPECT_FALSE(y["exports"]["lightning_trainer"]["precision"]);
}

// Within the noise (the windows' spread), not only exact ties.
TEST_F(SameTraining, MeasurementsWithinTheirNoiseAreTiesAndBeyondItAreNot) {
  auto m = [](double t, double rsd, int windows) {
    Outcome o = Outcome::success(t);
    o.set(metric::throughput_rsd, rsd);
    o.set(metric::mean_windows, windows);
    return o;
  };
  // 2% spread over 4 windows: a standard error of 1% each, 1.4% for the difference.
  EXPECT_TRUE(within_noise(m(1000, 0.02, 4), m(975, 0.02, 4)));
  EXPECT_FALSE(within_noise(m(1000, 0.02, 4), m(960, 0.02, 4)));
  EXPECT_TRUE(within_noise(Outcome::success(5), Outcome::success(5)));
  EXPECT_FALSE(within_noise(Outcome::success(5), Outcome::success(5.01)));
}

// constraints.effective_batch pins batch_size x grad_accum: every trial of
// every strategy keeps it, and the summary says the answer kept it.
TEST_F(SameTraining, APinnedEffectiveBatchIsKeptByEveryTrial) {
  for (const char* strategy : {"bo", "anneal", "random", "grid", "heuristic"}) {
    auto loaded = load_spec_text(
        "workload: {kind: synthetic, profile: balanced}\n"
        "space:\n"
        "  batch_size: {values: [16, 32, 64, 128, 256]}\n"
        "  num_workers: {range: [0, 4]}\n"
        "  grad_accum: {values: [1, 2, 4, 8, 16]}\n"
        "constraints: {effective_batch: 128}\n"
        "search: {strategy: " + std::string(strategy) + ", budget: 12, seed: 1,"
        " initial: [{batch_size: 32, num_workers: 0, grad_accum: 4}]}\n",
        "t.yaml", m_dir);
    ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().format();
    Spec spec = std::move(*loaded.spec);
    spec.output.journal = m_dir / (std::string(strategy) + ".journal.jsonl");
    ASSERT_EQ(spec.effective_batch, 128);
    auto w = synthetic();
    Study r = run_tuning(spec, measure_with(*w), {});
    ASSERT_FALSE(r.trials.empty()) << strategy;
    for (const auto& t : r.trials) {
      const Assignment a = spec.space.to_assignment(t.config);
      EXPECT_EQ(a.get_int("batch_size", 0) * a.get_int("grad_accum", 0), 128) << strategy << ": " << a.describe();
    }
    ASSERT_TRUE(r.best) << strategy;
    const Assignment best = spec.space.to_assignment(*r.best);
    EXPECT_EQ(best.get_int("batch_size", 0) * best.get_int("grad_accum", 0), 128) << strategy;
  }
}

TEST_F(SameTraining, AnEffectiveBatchWithoutABatchSizeIsASpecError) {
  auto loaded = load_spec_text(
      "workload: {kind: synthetic}\nspace:\n  num_workers: {range: [0, 4]}\nconstraints: {effective_batch: 64}\n",
      "t.yaml", m_dir);
  ASSERT_EQ(loaded.errors.size(), 1u);
  EXPECT_EQ(loaded.errors[0].key_path, "constraints.effective_batch");
  EXPECT_EQ(loaded.errors[0].line, 4);
}

// Data-parallel ranks each take batch_size x grad_accum: with
// constraints.ranks the pin splits the effective batch over them too.
TEST_F(SameTraining, RanksArePartOfThePinnedEffectiveBatch) {
  auto loaded = load_spec_text(
      "workload: {kind: synthetic, profile: balanced}\n"
      "space:\n"
      "  batch_size: {values: [16, 32, 64, 128]}\n"
      "  grad_accum: {values: [1, 2, 4, 8]}\n"
      "constraints: {effective_batch: 256, ranks: 4}\n"
      "search: {strategy: grid, explain: false, initial: [{batch_size: 16, grad_accum: 4}]}\n",
      "t.yaml", m_dir);
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().format();
  Spec spec = std::move(*loaded.spec);
  spec.output.journal = m_dir / "ranks.journal.jsonl";
  EXPECT_EQ(spec.ranks, 4);
  auto w = synthetic();
  Study r = run_tuning(spec, measure_with(*w), {});
  ASSERT_EQ(r.trials.size(), 3u) << "16x4, 32x2, 64x1 on 4 ranks";
  for (const auto& t : r.trials) {
    const Assignment a = spec.space.to_assignment(t.config);
    EXPECT_EQ(a.get_int("batch_size", 0) * a.get_int("grad_accum", 0) * 4, 256) << a.describe();
  }
  const auto same = describe(training_change(spec.space.to_assignment(r.trials[0].config),
                                             spec.space.to_assignment(r.trials[1].config), true, spec.ranks));
  ASSERT_EQ(same.size(), 1u);
  EXPECT_NE(same[0].find("effective batch 256, as the baseline's (constraints.effective_batch) (4 ranks"),
            std::string::npos)
      << same[0];
}

// Without a pin, a change of the effective batch or the precision is said
// in words, and tuned.yaml carries both.
TEST(TrainingChange, SaysWhatTheAnswerChangesOfTheTraining) {
  const Assignment before({{"batch_size", Value{std::int64_t{32}}},
                           {"grad_accum", Value{std::int64_t{1}}},
                           {"precision", Value{std::string("fp32")}}});
  const Assignment after({{"batch_size", Value{std::int64_t{128}}},
                          {"grad_accum", Value{std::int64_t{2}}},
                          {"precision", Value{std::string("bf16")}}});
  const auto lines = describe(training_change(before, after, false));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("effective batch 32 -> 256 (8x"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("effective_batch: 32"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("precision fp32 -> bf16: a change of numerics"), std::string::npos) << lines[1];
  const auto same = describe(training_change(before, before, true));
  ASSERT_EQ(same.size(), 1u);
  EXPECT_NE(same[0].find("effective batch 32, as the baseline's"), std::string::npos) << same[0];
}

// A measurement with a 2% spread over 5 windows: within_noise's figures.
Outcome outcome(double t) {
  Outcome o = Outcome::success(t);
  o.set(metric::throughput_rsd, 0.02);
  o.set(metric::mean_windows, 5);
  return o;
}

// search.explain: each knob the answer moved, put back alone and measured;
// one worth less than the noise goes back to the baseline's value and the
// answer as emitted is measured; one that fails without its move is needed.
TEST(Explain, PutsBackWhatBoughtNothingAndSaysWhatTheRestBought) {
  const SearchSpace space({{"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}}, Scale::linear},
                           {"pin_memory", {Value{false}, Value{true}}, Scale::linear},
                           {"batch_size", {Value{std::int64_t{32}}, Value{std::int64_t{64}}}, Scale::log}},
                          {});
  Study s;
  s.baseline = TrialRecord{1, Config{0, 0, 0}, outcome(1000), false};
  s.best = Config{1, 1, 1};
  s.best_outcome = outcome(3010);
  std::vector<Config> measured;
  explain_answer(s, space, [&](const Config& c) -> std::optional<Outcome> {
    measured.push_back(c);
    if (c == Config{0, 1, 1}) return outcome(1000);          // workers bought 3x
    if (c == Config{1, 0, 1}) return outcome(3000);          // pinning bought nothing measurable
    if (c == Config{1, 1, 0}) return Outcome::failure(Status::oom, "");  // never: batch 32 fits
    return outcome(2990);
  });
  ASSERT_EQ(s.knobs.size(), 3u);
  EXPECT_EQ(s.knobs[0].knob, "num_workers");
  EXPECT_NEAR(*s.knobs[0].worth, 2.01, 1e-9);
  EXPECT_FALSE(s.knobs[0].put_back);
  EXPECT_EQ(s.knobs[1].knob, "pin_memory");
  EXPECT_TRUE(s.knobs[1].put_back);
  EXPECT_EQ(describe(s.knobs[1]), "pin_memory false -> true: +0.3% (within noise; kept at false)");
  EXPECT_FALSE(s.knobs[2].worth);
  EXPECT_NE(s.knobs[2].note.find("oom"), std::string::npos) << s.knobs[2].note;
  // The answer emitted: pinning put back, measured as such (that was the
  // measurement of pinning's worth: nothing is measured twice).
  EXPECT_EQ(*s.best, (Config{1, 0, 1}));
  EXPECT_EQ(measured.size(), 3u);
  EXPECT_DOUBLE_EQ(s.best_outcome->throughput, 3000);
}

// Two knobs that each bought nothing alone but together do (or a machine
// that slowed down between the measurements): the answer with both put back
// is clearly slower, so the answer keeps both.
TEST(Explain, PutBackTogetherMustNotCostWhatEachAloneDidNot) {
  const SearchSpace space({{"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}}, Scale::linear},
                           {"batch_size", {Value{std::int64_t{32}}, Value{std::int64_t{64}}}, Scale::log}},
                          {});
  Study s;
  s.baseline = TrialRecord{1, Config{0, 0}, outcome(1000), false};
  s.best = Config{1, 1};
  s.best_outcome = outcome(3000);
  explain_answer(s, space, [&](const Config& c) -> std::optional<Outcome> {
    return outcome(c == Config{0, 0} ? 1000 : 2990);
  });
  ASSERT_EQ(s.knobs.size(), 2u);
  for (const auto& k : s.knobs) {
    EXPECT_FALSE(k.put_back) << describe(k);
    EXPECT_NE(k.note.find("with all of them put back the answer measured 1000.0"), std::string::npos) << k.note;
  }
  EXPECT_EQ(*s.best, (Config{1, 1}));
  EXPECT_DOUBLE_EQ(s.best_outcome->throughput, 3000);
}

// A knob the workload says it ignored (the cpu workload's pin_memory: no
// device) goes back to the baseline's value without a measurement of its
// own, however a noisy measurement would have read it.
TEST(Explain, AKnobTheWorkloadIgnoredGoesBackUnmeasured) {
  const SearchSpace space({{"num_workers", {Value{std::int64_t{0}}, Value{std::int64_t{2}}}, Scale::linear},
                           {"pin_memory", {Value{false}, Value{true}}, Scale::linear}},
                          {});
  Study s;
  s.baseline = TrialRecord{1, Config{0, 0}, Outcome::success(1000), false};
  s.best = Config{1, 1};
  s.best_outcome = Outcome::success(3000);
  s.best_outcome->labels["ignored"] = "precision, pin_memory";
  std::vector<Config> measured;
  explain_answer(s, space, [&](const Config& c) -> std::optional<Outcome> {
    measured.push_back(c);
    return Outcome::success(c == Config{1, 0} ? 2900 : 1000);
  });
  ASSERT_EQ(s.knobs.size(), 2u);
  EXPECT_FALSE(s.knobs[0].put_back);
  EXPECT_TRUE(s.knobs[1].put_back);
  EXPECT_EQ(describe(s.knobs[1]), "pin_memory false -> true: no effect here: the workload ignores it; kept at false");
  EXPECT_EQ(*s.best, (Config{1, 0}));
  // Measured: workers put back, then the answer as emitted (pinning put back).
  EXPECT_EQ(measured, (std::vector<Config>{{0, 1}, {1, 0}}));
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

// One answer rule: `compare` scores the answer `tune` gives. On the same
// spec, seed and budget, with measurements that tie (only the batch and the
// workers matter), compare's answer after its last trial is tune's, Occam's
// step (the tie closest to the baseline) included.
TEST_F(SameTraining, CompareAndTuneGiveTheSameAnswer) {
  const MeasureFn measure = [](const Assignment& a, const TrialContext&) {
    const double b = static_cast<double>(a.get_int("batch_size", 0));
    return Outcome::success(b * (1.0 + static_cast<double>(a.get_int("num_workers", 0) > 4)));
  };
  for (const char* strategy : {"random", "bo", "anneal"}) {
    Spec spec = make_spec(strategy, 30);
    spec.search.race_margin = -1;
    spec.output.journal = m_dir / (std::string(strategy) + ".journal.jsonl");
    const Study tuned = run_tuning(spec, measure, {});
    ASSERT_TRUE(tuned.best) << strategy;
    auto w = synthetic();
    CompareOptions opt;
    opt.strategies = {strategy};
    opt.repeats = 1;
    opt.budget = 30;
    opt.seed = spec.search.seed;
    opt.initial = spec.search.initial;
    const CompareResult c = run_compare(spec.space, *w, measure, opt);
    ASSERT_FALSE(c.trials.empty());
    EXPECT_EQ(c.trials.back().answer, spec.space.to_assignment(*tuned.best).describe()) << strategy;
  }
}

}  // namespace
}  // namespace autotune
