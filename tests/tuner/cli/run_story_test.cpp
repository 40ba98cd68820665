// One run, one story: the journal records how each run (and each resumed
// run) ended, and the report reads it, so that after Ctrl-C and --resume,
// a second --resume, or a new --budget, the report's state, budget and
// trial table match what happened. Through the binary, as a user meets it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/shell.hpp"
#include "tests/support/test_dir.hpp"

namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

class RunStory : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = autotune::testing::fresh_test_dir("run_story"); }
  void TearDown() override { fs::remove_all(m_dir); }
  autotune::testing::ShellRun run(const std::string& args) { return autotune::testing::run_autotune(args); }
  std::string report() { return run("report --text " + (m_dir / "tuned.journal.jsonl").string()).out; }
  // Runs autotune on `spec` in a child of its own, sends it `signal` once
  // the journal holds `n` occurrences of `what` (or after `limit`), and
  // returns its wait status.
  int stop_when(const fs::path& spec, const std::string& what, std::size_t n, int signal,
                std::chrono::seconds limit = std::chrono::seconds(120)) {
    const fs::path journal = m_dir / "tuned.journal.jsonl";
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string cmd = "exec " + std::string(AUTOTUNE_BINARY) + " " + spec.string() + " >/dev/null 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      ::_exit(127);
    }
    const auto until = std::chrono::steady_clock::now() + limit;
    while (count(read(journal), what) < n && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(pid, signal);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return st;
  }
  // The journal's records, in order.
  std::vector<nlohmann::json> records() {
    std::vector<nlohmann::json> out;
    std::istringstream lines(read(m_dir / "tuned.journal.jsonl"));
    for (std::string l; std::getline(lines, l);) out.push_back(nlohmann::json::parse(l));
    return out;
  }
  fs::path m_dir;
};

// Ctrl-C during trial 3 of 4, then --resume, a second --resume and a
// resume with a larger budget.
TEST_F(RunStory, InterruptResumeTwiceAndANewBudgetAreToldAsTheyHappened) {
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: synthetic, profile: balanced, noise: 0.02, trial_seconds: 0.4}\n"
                         "space:\n  batch_size: {values: [16, 32, 64, 128]}\n  num_workers: {range: [0, 4]}\n"
                         "search: {strategy: random, budget: 4, seed: 5}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  // Interrupted while trial 3 runs.
  const int st = stop_when(spec, "\"type\":\"start\"", 3, SIGINT, std::chrono::seconds(60));
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << read(journal);
  std::string r = report();
  EXPECT_NE(r.find("NOT FINISHED: interrupted after 2 search trials"), std::string::npos) << r;
  EXPECT_NE(r.find("1 trial was cut short when the run ended (trial 3)"), std::string::npos) << r;
  EXPECT_EQ(r.find("running"), std::string::npos) << r;
  EXPECT_EQ(r.find("may still be going"), std::string::npos) << r;

  auto resumed = run(spec.string() + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  r = report();
  EXPECT_NE(r.find("finished: the trial budget (4) was spent"), std::string::npos) << r;
  EXPECT_NE(r.find("run again as trial 4"), std::string::npos) << r;
  EXPECT_EQ(r.find("NOT FINISHED"), std::string::npos) << r;
  // The progress line names each new best by its trial's number: the
  // figure beside "(trial N)" is trial N's in the journal (trial 3 was cut
  // short and measured as trial 4).
  const std::size_t progress = r.find("progress: best ");
  ASSERT_NE(progress, std::string::npos) << r;
  std::istringstream steps(r.substr(progress + 15, r.find('\n', progress) - progress - 15));
  std::map<int, double> measured;
  for (const auto& rec : records())
    if (rec["type"] == "finish" && rec["status"] == "ok")
      measured[rec["trial"].get<int>()] = rec["throughput"].get<double>();
  int named = 0;
  for (std::string figure, trial, number, arrow; steps >> figure >> trial >> number; steps >> arrow) {
    const int n = std::stoi(number);  // "3)" reads as 3
    ASSERT_TRUE(measured.count(n)) << "trial " << n << " has no ok finish: " << r;
    EXPECT_NEAR(std::stod(figure), measured[n], 0.5) << "trial " << n;
    ++named;
  }
  EXPECT_GE(named, 1) << r;
  EXPECT_EQ(r.find("cut short"), std::string::npos) << r;

  resumed = run(spec.string() + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_EQ(report(), r.substr(0, r.size()));  // nothing new ran: the same story
  EXPECT_EQ(count(read(journal), "\"type\":\"end\""), 3u);

  resumed = run(spec.string() + " --resume --budget 6");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  r = report();
  EXPECT_NE(r.find("finished: the trial budget (6) was spent"), std::string::npos) << r;
  EXPECT_NE(r.find("6 search trials"), std::string::npos) << r;
}

// A journal from before the `end` record (the same records without it)
// still reads: its end is inferred from the budget, as it was.
TEST_F(RunStory, AJournalWithoutEndRecordsStillReads) {
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: synthetic, profile: balanced, noise: 0.02}\n"
                         "space:\n  batch_size: {values: [16, 32, 64, 128]}\n"
                         "search: {strategy: random, budget: 3, seed: 5}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  ASSERT_EQ(run(spec.string()).status, 0);
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  std::istringstream lines(read(journal));
  std::string older;
  for (std::string l; std::getline(lines, l);)
    if (l.find("\"type\":\"end\"") == std::string::npos) older += l + "\n";
  ASSERT_LT(older.size(), read(journal).size());
  std::ofstream(journal, std::ios::binary | std::ios::trunc) << older;
  const std::string r = report();
  EXPECT_NE(r.find("finished: the trial budget (3) was spent"), std::string::npos) << r;
  EXPECT_EQ(run(spec.string() + " --resume --budget 4").status, 0);
  EXPECT_NE(report().find("finished: the trial budget (4) was spent"), std::string::npos) << report();
}

// One figure per fact: the answer's search trial read 200 once (selection
// inflates it); measured again side by side it reads 150 against the
// baseline's 100. The summary, the text report and the HTML show 150 and
// 100, never the single 200.
TEST_F(RunStory, TheAnswersFigureIsTheRemeasuredOneEverywhere) {
  std::ofstream(m_dir / "job.sh") << "cd " << m_dir.string() << "\n"
                                  << "if [ \"$AUTOTUNE_X\" = 1 ]; then t=100\n"
                                     "elif [ -e seen ]; then t=150\n"
                                     "else touch seen; t=200; fi\n"
                                     "echo \"{\\\"throughput\\\": $t}\"\n";
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: command, command: \"sh " << (m_dir / "job.sh").string() << "\"}\n"
                      << "space:\n  x: {values: [1, 2]}\n"
                         "search: {strategy: grid, budget: 2, explain: false, race: false, remeasure: 3, busy: ignore, "
                         "initial: [{x: 1}]}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const auto tuned = run(spec.string() + " --report");
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("150.0 samples/s (the median of 3 side-by-side runs)"), std::string::npos) << tuned.out;
  EXPECT_NE(tuned.out.find("1.50x the baseline"), std::string::npos) << tuned.out;
  const std::string text = report();
  EXPECT_NE(text.find("          150.0 samples/s, 1.50x the baseline (100.0 samples/s"), std::string::npos) << text;
  const std::string html = read(m_dir / "tuned.report.html");
  EXPECT_NE(html.find("<p class=\"big\">150.0 samples/s"), std::string::npos);
  EXPECT_EQ(html.find("<p class=\"big\">200.0"), std::string::npos);
}

// The run journals its answer as it printed it (an `answer` record before
// its `end`), and the report reads that record rather than deciding again.
TEST_F(RunStory, TheJournalKeepsTheAnswerAsPrintedAndTheReportReadsIt) {
  std::ofstream(m_dir / "job.sh") << "case \"$AUTOTUNE_X\" in 1) t=100;; 2) t=150;; *) t=140;; esac\n"
                                     "echo \"{\\\"throughput\\\": $t}\"\n";
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: command, command: \"sh " << (m_dir / "job.sh").string() << "\"}\n"
                      << "space:\n  x: {values: [1, 2, 3]}\n"
                         "search: {strategy: grid, budget: 3, explain: false, race: false, remeasure: 3, busy: ignore, "
                         "initial: [{x: 1}]}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const auto tuned = run(spec.string());
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("1.50x the baseline"), std::string::npos) << tuned.out;
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  std::vector<std::string> lines;
  {
    std::ifstream in(journal);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::size_t at = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("\"type\":\"answer\"") != std::string::npos) {
      ASSERT_EQ(at, lines.size()) << "one answer record";
      at = i;
    }
  ASSERT_LT(at, lines.size()) << read(journal);
  ASSERT_EQ(at + 2, lines.size()) << "the answer, then the end: " << read(journal);
  EXPECT_NE(lines.back().find("\"type\":\"end\""), std::string::npos);
  const auto answer = nlohmann::json::parse(lines[at]);
  EXPECT_EQ(answer["config"], nlohmann::json({{"x", 2}}));
  EXPECT_DOUBLE_EQ(answer["throughput"].get<double>(), 150);
  EXPECT_DOUBLE_EQ(answer["baseline_throughput"].get<double>(), 100);
  EXPECT_NEAR(answer["speedup"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(answer["runs"], 3);
  EXPECT_EQ(answer["remeasured"], true);
  EXPECT_NE(answer["rule"].get<std::string>().find("the grid strategy's recommendation"), std::string::npos);
  const std::string text = report();
  EXPECT_NE(text.find("answer:   x=2"), std::string::npos) << text;
  EXPECT_NE(text.find("chosen as " + answer["rule"].get<std::string>()), std::string::npos) << text;

  // The record is what the report reads: naming another measured
  // configuration and another rule, the report follows it.
  auto edited = answer;
  edited["config"] = {{"x", 3}};
  edited["rule"] = "the rule this run printed";
  lines[at] = edited.dump();
  {
    std::ofstream out(journal, std::ios::trunc);
    for (const auto& line : lines) out << line << "\n";
  }
  const std::string followed = report();
  EXPECT_NE(followed.find("answer:   x=3"), std::string::npos) << followed;
  EXPECT_NE(followed.find("chosen as the rule this run printed"), std::string::npos) << followed;
}


// A run that converged (budget: until_converged): the journal's end says
// so, and the report's state, budget, trial table and answer match it.
TEST_F(RunStory, ARunThatConvergedIsToldAsConverged) {
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: synthetic, profile: balanced, noise: 0}\n"
                         "space:\n  batch_size: {values: [16, 32, 64, 128, 256, 512]}\n"
                         "  num_workers: {range: [0, 16]}\n  prefetch_factor: {values: [1, 2, 4, 8]}\n"
                         "  precision: {values: [fp32, tf32, fp16, bf16]}\n"
                         "search: {strategy: bo, budget: {trials: 150, until_converged: true}, seed: 7}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const auto tuned = run(spec.string());
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("stopped: converged"), std::string::npos) << tuned.out;
  // The journal: its trials and its end.
  int finished = 0;
  nlohmann::json end, answer;
  for (const auto& rec : records()) {
    if (rec["type"] == "finish") ++finished;
    if (rec["type"] == "end") end = rec;
    if (rec["type"] == "answer") answer = rec;
  }
  ASSERT_GT(finished, 7);
  ASSERT_LT(finished, 150);
  EXPECT_EQ(end.value("reason", ""), "converged");
  const std::string r = report();
  EXPECT_NE(r.find("state:    finished: the strategy converged"), std::string::npos) << r;
  EXPECT_NE(r.find(std::to_string(finished) + " search trials"), std::string::npos) << r;
  // The trial table: one row per finished trial.
  const std::size_t table = r.find("\ntrials:\n");
  ASSERT_NE(table, std::string::npos) << r;
  std::istringstream rows(r.substr(table + 9));
  std::string header;
  std::getline(rows, header);
  int n = 0;
  for (std::string row; std::getline(rows, row) && row.rfind("  ", 0) == 0;) ++n;
  EXPECT_EQ(n, finished) << r;
  // The answer: the journal's, as the report shows it, knob for knob.
  const std::size_t at = r.find("answer:   ");
  ASSERT_NE(at, std::string::npos) << r;
  const std::string line = r.substr(at, r.find('\n', at) - at) + " ";
  ASSERT_EQ(answer["config"].size(), 4u);
  for (const auto& [k, v] : answer["config"].items()) {
    std::string value = v.dump();
    std::erase(value, '"');
    EXPECT_NE(line.find(" " + k + "=" + value + " "), std::string::npos) << k << " in " << line;
  }
}


// Ctrl-C during the side-by-side pairs after the search, then --resume: the
// resumed run measures its pairs, the pair trial cut short reads "run again
// as trial N", and the report reads finished.
TEST_F(RunStory, AnInterruptDuringThePairsThenResumeReadsFinished) {
  std::ofstream(m_dir / "job.sh") << "sleep 0.3\n"
                                     "echo \"{\\\"throughput\\\": $((80 + 20 * AUTOTUNE_X))}\"\n";
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: command, command: \"sh " << (m_dir / "job.sh").string()
                      << "\", timeout: 30s}\n"
                         "space:\n  x: {values: [1, 2, 3]}\n"
                         "search: {strategy: grid, seed: 1, initial: [{x: 1}], remeasure: 3, busy: ignore}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const fs::path journal = m_dir / "tuned.journal.jsonl";
  // Interrupted while the second pair measurement runs.
  const int st = stop_when(spec, "\"remeasure\":\"", 3, SIGINT);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << read(journal);
  std::string r = report();
  EXPECT_NE(r.find("NOT FINISHED"), std::string::npos) << r;
  EXPECT_NE(r.find("1 trial was cut short when the run ended (trial 5)"), std::string::npos) << r;

  const auto resumed = run(spec.string() + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("x the baseline"), std::string::npos) << resumed.out;
  r = report();
  EXPECT_NE(r.find("finished: every valid configuration was measured"), std::string::npos) << r;
  EXPECT_EQ(r.find("NOT FINISHED"), std::string::npos) << r;
  EXPECT_EQ(r.find("cut short when the run ended"), std::string::npos) << r;
  EXPECT_NE(r.find("run again as trial 6"), std::string::npos) << r;
  EXPECT_NE(r.find("over 3 pairs"), std::string::npos) << r;
}

// The tuner killed (SIGKILL: no `end` record) while trial 3 runs, then
// --resume: trial 3 reads "run again as trial 4", and the report finished.
TEST_F(RunStory, AKilledTunerThenResumeReadsFinished) {
  const fs::path spec = m_dir / "space.yaml";
  std::ofstream(spec) << "workload: {kind: synthetic, profile: balanced, noise: 0.02, trial_seconds: 0.4}\n"
                         "space:\n  batch_size: {values: [16, 32, 64, 128]}\n  num_workers: {range: [0, 4]}\n"
                         "search: {strategy: random, budget: 4, seed: 5}\n"
                         "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  const int st = stop_when(spec, "\"type\":\"start\"", 3, SIGKILL, std::chrono::seconds(60));
  ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  EXPECT_NE(report().find("1 trial started and never finished (trial 3)"), std::string::npos) << report();
  const auto resumed = run(spec.string() + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  const std::string r = report();
  EXPECT_NE(r.find("finished: the trial budget (4) was spent"), std::string::npos) << r;
  EXPECT_NE(r.find("run again as trial 4"), std::string::npos) << r;
  EXPECT_EQ(r.find("NOT FINISHED"), std::string::npos) << r;
  EXPECT_EQ(r.find("cut short when the run ended"), std::string::npos) << r;
}

}  // namespace
