// The tuning loop and tuned.yaml, on the synthetic workload with specs
// built in code (the loader has its own suite; resume: tune_resume_test.cpp;
// the answer's ties and explanations: tune_answer_test.cpp).
#include "tuner/run/tune.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>
#include <set>

#include "tuner/record/emitter.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/record/journal_study.hpp"
#include "tuner/run/scheduler.hpp"

#include "tests/tuner/run/tune_test_util.hpp"

namespace autotune {
namespace {

using testing::TuneTest;

TEST_F(TuneTest, GridFindsTheExhaustiveOptimum) {
  Spec spec = make_spec("grid", 0);
  auto w = synthetic();
  auto all = spec.space.enumerate();
  ASSERT_TRUE(all);
  double optimum = 0;
  for (const auto& c : *all) {
    auto o = w->expected(spec.space.to_assignment(c));
    if (o && o->ok()) optimum = std::max(optimum, o->throughput);
  }
  Study r = run_tuning(spec, measure_with(*w), {});
  EXPECT_EQ(r.trials.size(), all->size());
  EXPECT_EQ(r.stopped_by, RunEnd::exhausted);
  ASSERT_TRUE(r.best_outcome);
  EXPECT_DOUBLE_EQ(r.best_outcome->throughput, optimum);
  std::set<Config> seen;
  for (const auto& t : r.trials) EXPECT_TRUE(seen.insert(t.config).second);
}

TEST_F(TuneTest, BudgetStopsTheRunAndBaselineIsTheFirstInitial) {
  Spec spec = make_spec("random", 12);
  auto w = synthetic(0.02);
  Study r = run_tuning(spec, measure_with(*w), {});
  EXPECT_EQ(r.trials.size(), 12u);
  EXPECT_EQ(r.stopped_by, RunEnd::budget);
  ASSERT_TRUE(r.baseline);
  EXPECT_EQ(r.baseline->config, spec.search.initial.front());
  EXPECT_EQ(r.trials.front().config, spec.search.initial.front());
}

// Each start record says what the strategy proposed its configuration as:
// the baseline "initial", then bo's design, and its last 3 trials of the
// budget "final"; every other one "fill", "model" or "polish".
TEST_F(TuneTest, StartRecordsSayWhatEachTrialWasProposedAs) {
  Spec spec = make_spec("bo", 12);
  auto w = synthetic(0.02);
  run_tuning(spec, measure_with(*w), {});
  std::vector<std::string> as;
  std::ifstream in(spec.output.journal);
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    if (rec.value("type", "") == "start") as.push_back(rec.value("proposed_as", "(none)"));
  }
  ASSERT_EQ(as.size(), 12u);
  EXPECT_EQ(as[0], "initial");
  EXPECT_EQ(as[1], "design");
  for (std::size_t i = 9; i < 12; ++i) EXPECT_EQ(as[i], "final") << "trial " << i + 1;
  const std::set<std::string> known = {"design", "fill", "model", "polish"};
  for (std::size_t i = 1; i < 9; ++i) EXPECT_TRUE(known.count(as[i])) << "trial " << i + 1 << ": " << as[i];
  // The design at 12 trials is a third of them, the baseline one of the 4.
  EXPECT_EQ(std::count(as.begin(), as.end(), "design"), 3);
  EXPECT_EQ(std::count(as.begin(), as.end(), "model"), 5);
}

TEST_F(TuneTest, MeasuredLimitsTurnOkIntoInvalid) {
  Outcome o = Outcome::success(100);
  o.set(metric::ram_bytes, 5e9);
  Limits l;
  l.ram_bytes = 4e9;
  Outcome v = apply_limits(o, l);
  EXPECT_EQ(v.status, Status::invalid);
  EXPECT_NE(v.reason.find("host memory"), std::string::npos);
  l.ram_bytes = 6e9;
  EXPECT_EQ(apply_limits(o, l).status, Status::ok);
}

TEST_F(TuneTest, InterruptStopsAfterTheCurrentTrial) {
  Spec spec = make_spec("random", 50);
  auto w = synthetic();
  int calls = 0;
  Study r = run_tuning(
      spec,
      [&](const Assignment& a, const TrialContext& ctx) {
        if (++calls == 4) request_interrupt();
        return w->measure(a, ctx);
      },
      {});
  clear_interrupt();
  EXPECT_EQ(r.stopped_by, RunEnd::interrupted);
  EXPECT_EQ(r.trials.size(), 4u);
  EXPECT_TRUE(r.best_outcome);
}

TEST_F(TuneTest, TunedYamlReadsBackWithBestBaselineSearchAndExports) {
  Spec spec = make_spec("grid", 0);
  auto w = synthetic();
  Study r = run_tuning(spec, measure_with(*w), {});
  write_tuned_yaml(spec, r, spec.output.tuned);
  YAML::Node y = YAML::LoadFile(spec.output.tuned.string());
  const Assignment best = spec.space.to_assignment(*r.best);
  // `best` maps each declared parameter to its value under its own name.
  ASSERT_EQ(y["best"].size(), spec.space.dims());
  for (const auto& [name, v] : best.items()) EXPECT_EQ(y["best"][name].as<std::string>(), to_string(v)) << name;
  EXPECT_TRUE(spec.space.is_valid(*r.best));
  EXPECT_NEAR(y["metrics"]["throughput"].as<double>(), r.best_outcome->throughput, 1e-3 * r.best_outcome->throughput);
  EXPECT_GT(y["baseline"]["speedup"].as<double>(), 1.0);
  EXPECT_EQ(y["search"]["trials"].as<int>(), static_cast<int>(r.trials.size()));
  EXPECT_EQ(y["search"]["space_hash"].as<std::string>(), spec.space.hash());
  const auto ex = y["exports"];
  EXPECT_EQ(ex["torch_dataloader"]["batch_size"].as<std::string>(), best.get_string("batch_size", ""));
  EXPECT_EQ(ex["hf_training_arguments"]["per_device_train_batch_size"].as<std::string>(),
            best.get_string("batch_size", ""));
  EXPECT_EQ(ex["hf_training_arguments"]["gradient_accumulation_steps"].as<std::string>(),
            best.get_string("grad_accum", ""));
  EXPECT_EQ(ex["deepspeed"]["train_micro_batch_size_per_gpu"].as<std::string>(), best.get_string("batch_size", ""));
  if (best.get_string("precision", "") == "bf16") {
    EXPECT_EQ(ex["lightning_trainer"]["precision"].as<std::string>(), "bf16-mixed");
    EXPECT_TRUE(ex["deepspeed"]["bf16"]["enabled"].as<bool>());
  }
  if (best.get_int("num_workers", 0) == 0) {
    EXPECT_FALSE(ex["torch_dataloader"]["prefetch_factor"]);
  }
  // The precision is the user's: stated (fp32 too, to override a script's
  // own setting) only when the answer changes the baseline's.
  const std::string prec = best.get_string("precision", "");
  const std::string before = spec.space.to_assignment(r.baseline->config).get_string("precision", "");
  EXPECT_EQ(y["same_training"]["precision"]["baseline"].as<std::string>(), before);
  EXPECT_EQ(y["same_training"]["precision"]["best"].as<std::string>(), prec);
  if (prec == before) {
    EXPECT_FALSE(ex["hf_training_arguments"]["bf16"]) << "precision " << prec;
    EXPECT_FALSE(ex["lightning_trainer"]["precision"]);
  } else {
    ASSERT_TRUE(ex["hf_training_arguments"]["bf16"]) << "precision " << prec;
    EXPECT_EQ(ex["hf_training_arguments"]["bf16"].as<bool>(), prec == "bf16");
    EXPECT_EQ(ex["hf_training_arguments"]["fp16"].as<bool>(), prec == "fp16");
  }
  // No temp file is left beside it.
  for (const auto& e : std::filesystem::directory_iterator(m_dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos);
}

TEST_F(TuneTest, TheThreadsExportSaysPerRankInTheEnvironmentAndForTorch) {
  Spec spec = make_spec("grid", 0);
  using testing::I;
  spec.space = SearchSpace({{"batch_size", {I(16), I(32)}, Scale::linear}, {"threads", {I(1), I(2), I(4)}, Scale::log}});
  spec.search.initial = {};
  // More threads, faster: the answer is 4.
  Study r = run_tuning(
      spec,
      [](const Assignment& a, const TrialContext&) {
        return Outcome::success(100.0 * static_cast<double>(a.get_int("threads", 0)));
      },
      {});
  YAML::Node y = YAML::Load(render_tuned_yaml(spec, r));
  ASSERT_EQ(y["best"]["threads"].as<int>(), 4);
  const auto ex = y["exports"];
  EXPECT_EQ(ex["environment"]["OMP_NUM_THREADS"].as<int>(), 4);
  EXPECT_EQ(ex["torch"]["set_num_threads"].as<int>(), 4);
  ASSERT_TRUE(ex["notes"]);
  EXPECT_NE(ex["notes"][0].as<std::string>().find("4 intra-op threads per rank"), std::string::npos);
  EXPECT_FALSE(ex["torch_dataloader"]["num_workers"]);
  // Without the knob, neither.
  Spec plain = make_spec("grid", 4);
  plain.output.journal = m_dir / "plain.journal.jsonl";
  auto w = synthetic();
  const YAML::Node ey = YAML::Load(render_tuned_yaml(plain, run_tuning(plain, measure_with(*w), {})))["exports"];
  EXPECT_FALSE(ey["environment"]);
  EXPECT_FALSE(ey["torch"]);
}

TEST_F(TuneTest, NoFeasibleConfigurationGivesANullBest) {
  Spec spec = make_spec("random", 4);
  Study r = run_tuning(
      spec, [](const Assignment&, const TrialContext&) { return Outcome::failure(Status::oom, "too big"); }, {});
  EXPECT_FALSE(r.best_outcome);
  YAML::Node y = YAML::Load(render_tuned_yaml(spec, r));
  EXPECT_TRUE(y["best"].IsNull());
  EXPECT_EQ(y["search"]["oom"].as<int>(), 4);
}

TEST_F(TuneTest, ParallelSlotsRunTrialsConcurrentlyWithoutDuplicates) {
  Spec spec = make_spec("random", 24);
  spec.search.parallel = 4;
  auto w = synthetic();
  std::atomic<int> now{0}, peak{0};
  std::mutex mu;
  std::set<int> slots;
  const auto t0 = std::chrono::steady_clock::now();
  Study r = run_tuning(
      spec,
      [&](const Assignment& a, const TrialContext& ctx) {
        const int n = ++now;
        int p = peak.load();
        while (n > p && !peak.compare_exchange_weak(p, n)) {
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          slots.insert(ctx.slot);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(60));
        --now;
        return w->measure(a, ctx);
      },
      {});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.trials.size(), 24u);
  EXPECT_EQ(peak.load(), 4);
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2, 3}));
  EXPECT_LT(wall, 24 * 0.060 / 2) << "4 slots should take well under half the serial time";
  std::set<Config> seen;
  for (const auto& t : r.trials) EXPECT_TRUE(seen.insert(t.config).second);
  // The journal has every trial, each started and finished once.
  JournalContents j = read_journal(spec.output.journal);
  EXPECT_EQ(j.trials.size(), 24u);
  for (const auto& t : j.trials) EXPECT_TRUE(t.outcome);
}

TEST_F(TuneTest, SequentialStrategyStillFinishesWithParallelSlots) {
  // heuristic proposes nothing while a trial is pending: the loop must wait
  // for it rather than take that for exhaustion.
  Spec spec = make_spec("heuristic", 30);
  spec.search.parallel = 3;
  auto w = synthetic();
  Study r = run_tuning(spec, measure_with(*w), {});
  EXPECT_GT(r.trials.size(), 5u);
  EXPECT_TRUE(r.best_outcome);
}

// budget: {until_converged: true}. bo on a noise-free landscape of 720
// configurations converges long before 150 trials (its expected gain falls
// under 0.5% and stays there), never inside its initial design, and its
// answer is as good as a run of the whole budget; a grid ignores the rule.
TEST_F(TuneTest, UntilConvergedEndsBoEarlyWithTheSameAnswerAndAGridRunsToItsEnd) {
  auto w = synthetic(0.0);
  Spec full = make_spec("bo", 150);
  const Study whole = run_tuning(full, measure_with(*w), {});
  Spec spec = make_spec("bo", 150);
  spec.output.journal = m_dir / "converged.journal.jsonl";
  spec.search.until_converged = true;
  const Study r = run_tuning(spec, measure_with(*w), {});
  EXPECT_EQ(r.stopped_by, RunEnd::converged);
  EXPECT_LT(r.trials.size(), 150u);
  EXPECT_GT(r.trials.size(), 7u) << "not inside the initial design (d + 1 = 7 points)";
  ASSERT_TRUE(r.best_outcome && whole.best_outcome);
  EXPECT_GE(r.best_outcome->throughput, 0.995 * whole.best_outcome->throughput);
  // The journal says so: the report reads it, not "cut short".
  const JournalStudy story = read_journal_study(spec.output.journal);
  EXPECT_EQ(story.state.stopped_by, RunEnd::converged);
  EXPECT_TRUE(story.state.complete);
  ASSERT_FALSE(story.state.notes.empty());
  EXPECT_NE(story.state.notes.front().find("converged"), std::string::npos) << story.state.notes.front();

  Spec grid = make_spec("grid", 0);
  grid.output.journal = m_dir / "grid.journal.jsonl";
  grid.search.until_converged = true;
  const Study g = run_tuning(grid, measure_with(*w), {});
  EXPECT_EQ(g.stopped_by, RunEnd::exhausted);
}

// Racing through the tuning loop: a bar is given once a trial was measured
// in full, never to the first trial, and a raced trial is never the answer.
TEST_F(TuneTest, TrialsGetTheRaceBarAfterTheFirstFullMeasurement) {
  std::vector<double> bars;
  std::mutex mu;
  auto w = synthetic(0.0);
  MeasureFn measure = [&](const Assignment& a, const TrialContext& ctx) {
    {
      std::lock_guard<std::mutex> lock(mu);
      bars.push_back(ctx.stop_below);
    }
    Outcome o = w->measure(a, ctx);
    // A stand-in harness: a trial under its bar is raced, and reports a
    // flattering figure that must not make it the answer.
    if (o.ok() && ctx.stop_below > 0 && o.throughput < ctx.stop_below) {
      o.set(metric::raced, true);
      o.throughput = ctx.stop_below * 3;
    }
    return o;
  };
  Spec spec = make_spec("random", 20);
  const Study r = run_tuning(spec, measure, {});
  ASSERT_EQ(bars.size(), 20u);
  EXPECT_EQ(bars.front(), 0) << "the baseline is measured in full";
  EXPECT_GT(*std::max_element(bars.begin(), bars.end()), 0);
  ASSERT_TRUE(r.best_outcome);
  EXPECT_EQ(r.best_outcome->get(metric::raced), std::nullopt) << "a raced trial is never the answer";
  int raced = 0;
  for (const auto& t : r.trials) raced += t.outcome.get(metric::raced).has_value();
  EXPECT_GT(raced, 0);
}

}  // namespace
}  // namespace autotune
