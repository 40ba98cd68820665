// The tuning loop, journal, resume and tuned.yaml, on the synthetic workload
// with specs built in code (the loader has its own suite).
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
#include "tuner/record/explain.hpp"
#include "tuner/run/interrupt.hpp"
#include "tuner/record/journal.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/run/scheduler.hpp"
#include "workloads/synthetic.hpp"
#include "workloads/workloads.hpp"

#include "tests/support/test_dir.hpp"

namespace autotune {
namespace {

Value I(std::int64_t v) { return Value{v}; }
Value S(const char* s) { return Value{std::string(s)}; }

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
  o.metrics["ram_bytes"] = 5e9;
  Limits l;
  l.ram_bytes = 4e9;
  Outcome v = apply_limits(o, l);
  EXPECT_EQ(v.status, Status::invalid);
  EXPECT_NE(v.reason.find("host memory"), std::string::npos);
  l.ram_bytes = 6e9;
  EXPECT_EQ(apply_limits(o, l).status, Status::ok);
}

TEST_F(TuneTest, JournalRecordsEveryTrialAndResumeDoesNotRerun) {
  Spec spec = make_spec("random", 8);
  auto w = synthetic(0.02);
  int calls = 0;
  Study first = run_tuning(spec, measure_with(*w, &calls), {});
  EXPECT_EQ(calls, 8);
  JournalContents j = read_journal(spec.output.journal);
  EXPECT_EQ(j.header.value("space_hash", ""), spec.space.hash());
  ASSERT_EQ(j.trials.size(), 8u);
  for (const auto& t : j.trials) EXPECT_TRUE(t.outcome.has_value());

  // Resume with a larger budget: only the new trials are measured.
  spec.search.budget_trials = 14;
  calls = 0;
  TuneOptions opt;
  opt.resume = true;
  Study second = run_tuning(spec, measure_with(*w, &calls), opt);
  EXPECT_EQ(calls, 6);
  ASSERT_EQ(second.trials.size(), 14u);
  std::set<Config> seen;
  for (const auto& t : second.trials) EXPECT_TRUE(seen.insert(t.config).second) << "a trial ran twice";
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(second.trials[i].replayed);
    EXPECT_EQ(second.trials[i].config, first.trials[i].config);
  }
  EXPECT_EQ(second.trials[8].trial, 9);
}

TEST_F(TuneTest, TornLastLineIsDroppedAndUnfinishedTrialIsRerun) {
  Spec spec = make_spec("random", 5);
  auto w = synthetic();
  run_tuning(spec, measure_with(*w), {});
  // Simulate a crash mid-trial: a start record without its finish, then half a line.
  const Config extra{5, 4, 2, 1, 1, 0};
  {
    std::ofstream out(spec.output.journal, std::ios::app);
    out << nlohmann::json{{"type", "start"}, {"trial", 6}, {"config", to_json(spec.space.to_assignment(extra))},
                          {"time", 1.0}}
                .dump()
        << "\n";
    out << R"({"type":"finish","trial":6,"config":{"batch_si)";
  }
  JournalContents j = read_journal(spec.output.journal);
  EXPECT_TRUE(j.dropped_torn_line);
  ASSERT_EQ(j.trials.size(), 6u);
  EXPECT_FALSE(j.trials.back().outcome);

  spec.search.budget_trials = 6;
  std::vector<Assignment> measured;
  TuneOptions opt;
  opt.resume = true;
  Study r = run_tuning(
      spec,
      [&](const Assignment& a, const TrialContext& ctx) {
        measured.push_back(a);
        return w->measure(a, ctx);
      },
      opt);
  ASSERT_EQ(measured.size(), 1u);
  EXPECT_EQ(measured[0], spec.space.to_assignment(extra));
  EXPECT_EQ(r.trials.size(), 6u);
  {
    std::ifstream in(spec.output.journal);
    std::string line, last_start;
    while (std::getline(in, line))
      if (line.find(R"("type":"start")") != std::string::npos) last_start = line;
    EXPECT_EQ(nlohmann::json::parse(last_start).value("proposed_as", ""), "rerun");
  }
  // The file is whole again: every line parses.
  JournalContents again = read_journal(spec.output.journal);
  EXPECT_FALSE(again.dropped_torn_line);
  EXPECT_TRUE(again.trials.back().outcome);
}

TEST_F(TuneTest, CorruptMiddleLineIsAnError) {
  Spec spec = make_spec("random", 3);
  auto w = synthetic();
  run_tuning(spec, measure_with(*w), {});
  std::ifstream in(spec.output.journal);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  lines[2] = "{not json";
  std::ofstream out(spec.output.journal, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
  out.close();
  try {
    read_journal(spec.output.journal);
    FAIL() << "expected a JournalError";
  } catch (const JournalError& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
  TuneOptions opt;
  opt.resume = true;
  EXPECT_THROW(run_tuning(spec, measure_with(*w), opt), TuneError);
}

TEST_F(TuneTest, ResumeRefusesAnotherSpace) {
  Spec spec = make_spec("random", 3);
  auto w = synthetic();
  run_tuning(spec, measure_with(*w), {});
  Spec other = make_spec("random", 3);
  other.space = SearchSpace({{"batch_size", {I(16), I(32)}, Scale::log}});
  TuneOptions opt;
  opt.resume = true;
  try {
    run_tuning(other, measure_with(*w), opt);
    FAIL() << "expected a TuneError";
  } catch (const TuneError& e) {
    EXPECT_NE(std::string(e.what()).find("another search space"), std::string::npos);
  }
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

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

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
      o.metrics["raced"] = 1;
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
  EXPECT_EQ(r.best_outcome->metric("raced"), std::nullopt) << "a raced trial is never the answer";
  int raced = 0;
  for (const auto& t : r.trials) raced += t.outcome.metric("raced").has_value();
  EXPECT_GT(raced, 0);
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

// The search's diagnostics are journal records, read back in order, and a
// resumed study carries them.
TEST_F(TuneTest, NotesAreJournaledAndReplayed) {
  const auto path = m_dir / "notes.journal.jsonl";
  {
    JournalWriter j(path, true);
    j.header({{"space_hash", "h"}});
    j.note("bo: the GP fit: nlopt failed from 2 of 3 starts", 1.5);
    j.note("bo: no posterior could be formed from 3 measurements", 2.5);
  }
  const JournalContents c = read_journal(path);
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_EQ(c.notes[0], "bo: the GP fit: nlopt failed from 2 of 3 starts");
  SearchSpace space({{"batch_size", {I(16), I(32)}, Scale::log}}, {});
  JournalContents same = c;
  same.header["space_hash"] = space.hash();
  EXPECT_EQ(replay_journal(same, space, path).study.notes, c.notes);
}

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

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
  auto m = [](double t, double rsd, double windows) {
    Outcome o = Outcome::success(t);
    o.metrics["throughput_rsd"] = rsd;
    o.metrics["mean_windows"] = windows;
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

}  // namespace
}  // namespace autotune

namespace autotune {
namespace {

// A measurement with a 2% spread over 5 windows: within_noise's figures.
Outcome outcome(double t) {
  Outcome o = Outcome::success(t);
  o.metrics["throughput_rsd"] = 0.02;
  o.metrics["mean_windows"] = 5;
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
