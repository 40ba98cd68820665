// The journal: every trial recorded, resume without a rerun, a torn or
// corrupt journal, another space refused, the search's notes replayed.
#include "tuner/run/tune.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tuner/record/journal.hpp"

#include "tests/tuner/run/tune_test_util.hpp"

namespace autotune {
namespace {

using testing::I;
using testing::TuneTest;

// Measures with `w`, but Ctrl-C arrives while the `n`-th measurement runs
// (counted in `calls`): that trial's process group is stopped.
MeasureFn cut_short_at(Workload& w, int n, int* calls) {
  return [&w, n, calls](const Assignment& a, const TrialContext& ctx) {
    if (++*calls == n) {
      request_interrupt();
      return Outcome::failure(Status::crash, "killed by SIGINT");
    }
    return w.measure(a, ctx);
  };
}

// A start record without its finish, as a tuner killed mid-trial leaves it.
void append_unfinished_start(const Spec& spec, int trial, const Config& c, double time) {
  std::ofstream out(spec.output.journal, std::ios::app);
  out << nlohmann::json{{"type", "start"}, {"trial", trial}, {"config", to_json(spec.space.to_assignment(c))},
                        {"time", time}}
             .dump()
      << "\n";
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
  append_unfinished_start(spec, 6, extra, 1.0);
  {
    std::ofstream out(spec.output.journal, std::ios::app);
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

// The study's one list of trials through an interrupt and two resumes: the
// trial Ctrl-C cut short is `cut short`, then `pending` in the resumed
// run's replay, then `superseded` by its re-run, which is `finished`; the
// report's in-flight and cut-short lists are the log's.
TEST_F(TuneTest, EveryTrialHasItsStateThroughAnInterruptAndTwoResumes) {
  Spec spec = make_spec("random", 6);
  auto w = synthetic();
  int calls = 0;
  Study first = run_tuning(spec, cut_short_at(*w, 3, &calls), {});
  clear_interrupt();
  ASSERT_EQ(first.stopped_by, RunEnd::interrupted);
  EXPECT_EQ(first.trials_in(TrialState::finished), (std::vector<int>{1, 2}));
  EXPECT_EQ(first.trials_in(TrialState::cut_short), std::vector<int>{3});
  const Config cut = first.entry(3)->config;

  // Read back as a resume reads it: trial 3 cut short, its configuration pending.
  const Replay replay = replay_journal(read_journal(spec.output.journal), spec.space, spec.output.journal);
  EXPECT_EQ(replay.study.trials_in(TrialState::cut_short), std::vector<int>{3});
  EXPECT_EQ(replay.study.pending(), std::vector<Config>{cut});
  EXPECT_EQ(replay.next_trial, 4);

  TuneOptions resume;
  resume.resume = true;
  Study second = run_tuning(spec, measure_with(*w), resume);
  EXPECT_EQ(second.stopped_by, RunEnd::budget);
  EXPECT_TRUE(second.pending().empty());
  ASSERT_TRUE(second.entry(3));
  EXPECT_EQ(second.entry(3)->state, TrialState::superseded);
  EXPECT_EQ(second.entry(3)->superseded_by, 4);
  EXPECT_EQ(second.entry(4)->state, TrialState::finished);
  EXPECT_EQ(second.entry(4)->config, cut);
  EXPECT_TRUE(second.entry(1)->replayed);
  EXPECT_FALSE(second.entry(4)->replayed);
  EXPECT_TRUE(second.trials_in(TrialState::running).empty());
  EXPECT_TRUE(second.trials_in(TrialState::cut_short).empty());

  // A second resume finds nothing to run again, and reads the same states.
  calls = 0;
  Study third = run_tuning(spec, measure_with(*w, &calls), resume);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(third.entry(3)->state, TrialState::superseded);
  EXPECT_EQ(third.trials_in(TrialState::finished), second.trials_in(TrialState::finished));
  EXPECT_EQ(third.log.size(), second.log.size());
}

// Cut short, then its re-run cut short too: the next resume runs it once.
TEST_F(TuneTest, ATrialCutShortTwiceIsRunAgainOnce) {
  Spec spec = make_spec("random", 6);
  auto w = synthetic();
  int calls = 0;
  const Study first = run_tuning(spec, cut_short_at(*w, 3, &calls), {});
  clear_interrupt();
  const Config cut = first.entry(3)->config;
  TuneOptions resume;
  resume.resume = true;
  calls = 0;
  const Study second = run_tuning(spec, cut_short_at(*w, 1, &calls), resume);  // its re-run, trial 4, is cut short too
  clear_interrupt();
  EXPECT_EQ(second.entry(3)->state, TrialState::superseded);
  EXPECT_EQ(second.entry(3)->superseded_by, 4);
  EXPECT_EQ(second.entry(4)->state, TrialState::cut_short);
  const Replay r = replay_journal(read_journal(spec.output.journal), spec.space, spec.output.journal);
  EXPECT_EQ(r.study.pending(), std::vector<Config>{cut});
  int runs_of_cut = 0;
  const Study third = run_tuning(
      spec,
      [&](const Assignment& a, const TrialContext& ctx) {
        if (spec.space.from_assignment(a) == cut) ++runs_of_cut;
        return w->measure(a, ctx);
      },
      resume);
  EXPECT_EQ(runs_of_cut, 1);
  EXPECT_EQ(third.entry(4)->state, TrialState::superseded);
  EXPECT_EQ(third.entry(5)->state, TrialState::finished);
  EXPECT_EQ(third.entry(5)->config, cut);
}

// Started and never finished, with no end after it (the tuner was killed):
// `running`, which the report lists as in flight; it is run again on resume.
TEST_F(TuneTest, ATrialWithNoEndAfterItIsRunningAndPending) {
  Spec spec = make_spec("random", 3);
  auto w = synthetic();
  run_tuning(spec, measure_with(*w), {});
  // Another start after the run's end, as a run killed mid-trial leaves it.
  const Config extra{5, 4, 2, 1, 1, 0};
  append_unfinished_start(spec, 4, extra, 9.0);
  const Replay r = replay_journal(read_journal(spec.output.journal), spec.space, spec.output.journal);
  EXPECT_EQ(r.study.trials_in(TrialState::running), std::vector<int>{4});
  EXPECT_EQ(r.study.pending(), std::vector<Config>{extra});
  EXPECT_EQ(trial_state_name(r.study.entry(4)->state), "running");
}

}  // namespace
}  // namespace autotune
