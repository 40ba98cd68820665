// The autotune binary end to end: exit codes, files written (or not), resume,
// Ctrl-C, sweep -> replay.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "core/machine.hpp"
#include "search/strategy.hpp"
#include "tests/support/test_dir.hpp"
#include "tests/support/shell.hpp"
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

using CliRun = autotune::testing::ShellRun;  // stdout and stderr together
CliRun run(const std::string& args) { return autotune::testing::run_autotune(args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = autotune::testing::fresh_test_dir("cli");
  }
  void TearDown() override { fs::remove_all(m_dir); }

  fs::path write(const std::string& name, const std::string& text) {
    auto p = m_dir / name;
    std::ofstream(p) << text;
    return p;
  }
  // `budget` is spliced in rather than appended: a duplicate key is a spec error.
  std::string synthetic_spec(const std::string& budget = "12", const std::string& workload_extra = "") {
    return "workload: {kind: synthetic, profile: balanced, noise: 0.02" + workload_extra +
           "}\n"
           "space:\n"
           "  batch_size: {values: [16, 32, 64, 128, 256]}\n"
           "  num_workers: {range: [0, 8]}\n"
           "  pin_memory: {values: [false, true]}\n"
           "  precision: {values: [fp32, bf16]}\n"
           "constraints:\n"
           "  rules: [\"batch_size <= 256\"]\n"
           "search: {strategy: random, budget: " + budget + ", seed: 5"
           ", initial: [{batch_size: 32, num_workers: 0, pin_memory: false, precision: fp32}]}\n"
           "output: {tuned: " +
           (m_dir / "tuned.yaml").string() + "}\n";
  }
  std::size_t count_finished(const fs::path& journal) {
    std::ifstream in(journal);
    std::size_t n = 0;
    for (std::string l; std::getline(in, l);)  // search trials and confirmations (not explanations)
      n += l.find("\"type\":\"finish\"") != std::string::npos && l.find("\"explain\":true") == std::string::npos &&
           l.find("\"control\":true") == std::string::npos;
    return n;
  }
  // Polls until `done` holds (an event: a file, a journal line), for at most a minute.
  static bool wait_until(const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  // Starts autotune with `args` through sh, its output discarded; its pid.
  static pid_t spawn(const std::string& args) {
    const std::string cmd = std::string(AUTOTUNE_BINARY) + " " + args;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  }
  // Sends `sig` to the spawned tuner once `ready` holds, and waits for it:
  // its exit status, -1 if a signal ended it, -2 if `ready` never held.
  static int stop_when(pid_t pid, int sig, const std::function<bool()>& ready) {
    const bool was_ready = wait_until(ready);
    ::kill(pid, was_ready ? sig : SIGKILL);
    int st = 0;
    ::waitpid(pid, &st, 0);
    if (!was_ready) return -2;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  static bool written(const fs::path& p) { return fs::exists(p) && fs::file_size(p) > 0; }
  // A space of two trials, x = 1 and x = 2, of a command job (`command`,
  // YAML-escaped for a double-quoted string), graded in that order.
  fs::path two_command_trials(const std::string& command, const std::string& options = "",
                              const std::string& more = "") {
    return write("space.yaml", "workload: {kind: command, timeout: 300s, " + options + "command: \"" + command +
                                   "\"}\nspace:\n  x: {values: [1, 2]}\nsearch: {strategy: grid, budget: 2}\n" + more);
  }
  fs::path m_dir;
};

// A knob whose AUTOTUNE_<NAME> is the tool's own is refused before anything
// runs, where it was written.
TEST_F(Cli, ValidateRefusesAKnobNamedLikeTheToolsOwnVariables) {
  auto spec = write("space.yaml", "workload: {kind: synthetic}\nspace:\n  batch_size: [16, 32]\n  stop_below: [1, 2]\n"
                                  "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  CliRun v = run("validate " + spec.string());
  EXPECT_EQ(v.status, 2) << v.out;
  EXPECT_NE(v.out.find(spec.string() + ":4:3: space.stop_below: expected"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("AUTOTUNE_STOP_BELOW"), std::string::npos) << v.out;
  EXPECT_EQ(run(spec.string() + " --quiet").status, 2);
  EXPECT_FALSE(fs::exists(m_dir / "tuned.yaml"));
}

TEST_F(Cli, HelpListsSubcommandsAndOverrides) {
  CliRun r = run("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* s : {"--config", "--strategy", "--budget", "--seed", "--out", "--resume", "validate", "sweep"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  // --strategy lists the registry's strategies.
  const std::size_t at = r.out.find("--strategy");
  ASSERT_NE(at, std::string::npos);
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  for (const auto& name : autotune::strategy_names()) EXPECT_NE(line.find(name), std::string::npos) << name << ": " << line;
}

// A workload that measures only some precisions says so (its info declares
// them); one that measures any says nothing.
TEST_F(Cli, ValidateWarnsOfPrecisionsTheWorkloadDoesNotMeasure) {
  const std::string space = "space:\n  batch_size: [16, 32]\n  precision: [fp32, bf16]\n";
  CliRun cpu = run("validate " + write("cpu.yaml", "workload: {kind: cpu}\n" + space).string());
  EXPECT_EQ(cpu.status, 0) << cpu.out;
  EXPECT_NE(cpu.out.find("warning: the cpu workload measures fp32 only; precision bf16 gives `error` trials"),
            std::string::npos)
      << cpu.out;
  EXPECT_EQ(cpu.out.find("precision fp32 gives"), std::string::npos) << cpu.out;
  CliRun synthetic = run("validate " + write("synthetic.yaml", "workload: {kind: synthetic}\n" + space).string());
  EXPECT_EQ(synthetic.status, 0) << synthetic.out;
  EXPECT_EQ(synthetic.out.find("measures"), std::string::npos) << synthetic.out;
}

// The habits of git and cmake: the file as a positional argument, `help`,
// a near miss suggested, the exit statuses and a trial's environment in --help.
TEST_F(Cli, FollowsCommandLineHabits) {
  auto spec = write("space.yaml", synthetic_spec("4"));
  CliRun v = run("validate " + spec.string());
  EXPECT_EQ(v.status, 0) << v.out;
  EXPECT_NE(v.out.find(spec.string() + ": ok"), std::string::npos) << v.out;
  CliRun d = run("validate");
  EXPECT_EQ(d.status, 0) << d.out;
  EXPECT_NE(d.out.find("the embedded default"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("autotune validate space.yaml"), std::string::npos) << d.out;

  CliRun t = run(spec.string() + " --quiet");
  EXPECT_EQ(t.status, 0) << t.out;
  EXPECT_EQ(count_finished(m_dir / "tuned.journal.jsonl"), 4u);

  CliRun typo = run(spec.string() + " --budjet 5");
  EXPECT_EQ(typo.status, 2) << typo.out;
  EXPECT_NE(typo.out.find("did you mean '--budget'?"), std::string::npos) << typo.out;
  CliRun sub_typo = run("validate " + spec.string() + " --confg x");
  EXPECT_EQ(sub_typo.status, 2) << sub_typo.out;
  EXPECT_NE(sub_typo.out.find("did you mean '--config'?"), std::string::npos) << sub_typo.out;

  // A mistyped command reads as a config file; it is named as the command it nearly is.
  for (const std::string& line : {"valdate " + spec.string(), std::string("valdate")}) {
    CliRun cmd_typo = run(line);
    EXPECT_EQ(cmd_typo.status, 2) << cmd_typo.out;
    EXPECT_NE(cmd_typo.out.find("did you mean 'validate'?"), std::string::npos) << line << ": " << cmd_typo.out;
  }

  CliRun help = run("help");
  EXPECT_EQ(help.status, 0) << help.out;
  EXPECT_EQ(help.out.find("the command whose help to show"), std::string::npos) << "autotune's help, not help's";
  for (const char* s : {"validate", "--budget", "Exit status:", "130", "AUTOTUNE_RESULT", "AUTOTUNE_STOP_BELOW", "AUTOTUNE_TRIAL",
                        "AUTOTUNE_<NAME>"})
    EXPECT_NE(help.out.find(s), std::string::npos) << s << "\n" << help.out;
  CliRun help_sweep = run("help sweep");
  EXPECT_EQ(help_sweep.status, 0) << help_sweep.out;
  EXPECT_NE(help_sweep.out.find("--repeats"), std::string::npos) << help_sweep.out;
  CliRun help_typo = run("help valdate");
  EXPECT_EQ(help_typo.status, 2) << help_typo.out;
  EXPECT_NE(help_typo.out.find("did you mean 'validate'?"), std::string::npos) << help_typo.out;

  CliRun py = run("--python-path");
  ASSERT_EQ(py.status, 0) << py.out;
  EXPECT_TRUE(fs::exists(fs::path(py.out.substr(0, py.out.find('\n'))) / "autotune_trial" / "__init__.py")) << py.out;
}

// A budget flag says which limit it sets and which of the spec's still holds.
TEST_F(Cli, ABudgetFlagSaysWhichLimitStillHolds) {
  auto spec = write("space.yaml", synthetic_spec("3"));
  CliRun r = run(spec.string() + " --budget 10m");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("--budget 10m sets the time limit; the spec's limit of 3 trials still holds"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("stopped by budget"), std::string::npos) << r.out;
}

// One numbering: a trial's line on screen carries the number of its journal
// records and of its log folder, also after a resume re-runs a trial.
TEST_F(Cli, TheScreenNumbersTrialsAsTheJournalAndLogsDo) {
  auto spec = two_command_trials("echo '{\\\"throughput\\\": {x}}'", "",
                                 "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  CliRun r = run(spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("trial 1 (1/2)  1.0 samples/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trial 2 (2/2)  2.0 samples/s"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(m_dir / "tuned.journal.trials" / "trial-2"));
  // A journal whose trial 2 started and never finished: the resume re-runs
  // it as trial 3, and says so under that number.
  std::ifstream in(m_dir / "tuned.journal.jsonl");
  std::string kept;
  for (std::string l; std::getline(in, l);)
    if (l.find("\"type\":\"finish\"") == std::string::npos || l.find("\"trial\":2") == std::string::npos)
      kept += l + "\n";
  in.close();
  std::ofstream(m_dir / "tuned.journal.jsonl") << kept;
  CliRun resumed = run(spec.string() + " --resume");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("trial 3 (2/2)  2.0 samples/s"), std::string::npos) << resumed.out;
  EXPECT_TRUE(fs::exists(m_dir / "tuned.journal.trials" / "trial-3"));
}

// search.explain: the knob table in the output and tuned.yaml; its trials
// are journaled, and a resumed run reads them instead of measuring again.
TEST_F(Cli, TheAnswersKnobsAreExplainedAndTheExplanationSurvivesAResume) {
  auto spec = write("space.yaml", synthetic_spec("10"));
  CliRun r = run(spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("knobs:  "), std::string::npos) << r.out;
  const auto journal = m_dir / "tuned.journal.jsonl";
  auto explained = [&] {
    std::ifstream in(journal);
    std::size_t n = 0;
    for (std::string l; std::getline(in, l);)
      n += l.find("\"type\":\"finish\"") != std::string::npos && l.find("\"explain\":true") != std::string::npos;
    return n;
  };
  const std::size_t first = explained();
  ASSERT_GT(first, 0u) << r.out;
  const YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  ASSERT_TRUE(y["knobs"] && y["knobs"].size() > 0);
  EXPECT_TRUE(y["knobs"][0]["knob"]);
  const std::string best = YAML::Dump(y["best"]), knobs = YAML::Dump(y["knobs"]);
  CliRun again = run(spec.string() + " --resume");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(explained(), first) << "explained again instead of read from the journal";
  const YAML::Node z = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(YAML::Dump(z["best"]), best);
  EXPECT_EQ(YAML::Dump(z["knobs"]), knobs);
  // The report reads the same answer from the journal.
  CliRun report = run("report --text " + journal.string());
  ASSERT_EQ(report.status, 0) << report.out;
  EXPECT_NE(report.out.find("moved:    " + y["knobs"][0]["knob"].as<std::string>() + " "), std::string::npos)
      << report.out;
  EXPECT_NE(report.out.find("batch_size=" + z["best"]["batch_size"].as<std::string>()), std::string::npos)
      << "the report's answer is tuned.yaml's: " << report.out;
}

TEST_F(Cli, TunesASyntheticSpaceAndWritesAFeasibleBest) {
  auto spec = write("space.yaml", synthetic_spec());
  CliRun r = run("--config " + spec.string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(y["best"].size(), 4u);
  EXPECT_LE(y["best"]["batch_size"].as<int>(), 256);
  EXPECT_GT(y["metrics"]["throughput"].as<double>(), 0);
  EXPECT_EQ(y["search"]["trials"].as<int>(), 12);
  EXPECT_TRUE(y["baseline"]["speedup"]);
  EXPECT_EQ(count_finished(m_dir / "tuned.journal.jsonl"), 12u);
}

TEST_F(Cli, BadConfigExitsTwoAndWritesNothing) {
  auto spec = write("bad.yaml", "workload: {kind: synthetic}\nspace:\n  batch_size: {values: [16, oops]}\n"
                                "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  CliRun r = run("--config " + spec.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("bad.yaml:3:"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(m_dir / "tuned.yaml"));
  EXPECT_FALSE(fs::exists(m_dir / "tuned.journal.jsonl"));
  CliRun v = run("validate --config " + spec.string());
  EXPECT_EQ(v.status, 2);
  CliRun missing = run("--config " + (m_dir / "absent.yaml").string());
  EXPECT_EQ(missing.status, 2);
}

TEST_F(Cli, BadOverridesExitTwo) {
  auto spec = write("space.yaml", synthetic_spec());
  EXPECT_EQ(run("--config " + spec.string() + " --strategy nope").status, 2);
  EXPECT_EQ(run("--config " + spec.string() + " --budget lots").status, 2);
  EXPECT_EQ(run("--config " + spec.string() + " --no-such-flag").status, 2);
  EXPECT_EQ(run("--config " + spec.string() + " --confirm -1").status, 2);
  EXPECT_EQ(run("--config " + spec.string() + " --seed=").status, 2) << "given empty is not left out";
  EXPECT_EQ(run("--config " + spec.string() + " --out=").status, 2);
  EXPECT_FALSE(fs::exists(m_dir / "tuned.yaml"));
  // `autotune trial` checks its seed in the same words as tune's --seed.
  const std::string values = R"( --values '{"batch_size":32}')";
  CliRun trial = run("trial -c " + spec.string() + values + " --seed -1");
  EXPECT_EQ(trial.status, 2);
  EXPECT_NE(trial.out.find("--seed: expected a non-negative integer, found '-1'"), std::string::npos) << trial.out;
}

TEST_F(Cli, ConfirmReMeasuresTheBestAfterTheBudget) {
  auto spec = write("space.yaml", synthetic_spec("8"));
  CliRun r = run("--config " + spec.string() + " --confirm 3");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("confirm 3/3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+ 3 confirmations"), std::string::npos) << r.out;
  YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(y["search"]["trials"].as<int>(), 8);
  EXPECT_EQ(y["search"]["confirmations"].as<int>(), 3);
  ASSERT_EQ(y["confirm"].size(), 3u);
  int chosen = 0;
  for (const auto& row : y["confirm"]) {
    EXPECT_EQ(row["throughputs"].size(), 2u);
    if (row["chosen"].as<bool>()) {
      ++chosen;
      EXPECT_EQ(row["config"]["batch_size"].as<int>(), y["best"]["batch_size"].as<int>());
      EXPECT_NEAR(row["mean"].as<double>(), y["metrics"]["throughput_mean"].as<double>(), 1.0);
      EXPECT_NEAR(row["throughputs"][1].as<double>(), y["metrics"]["throughput"].as<double>(), 1.0);
    }
  }
  EXPECT_EQ(chosen, 1);
  EXPECT_EQ(count_finished(m_dir / "tuned.journal.jsonl"), 11u);  // 8 trials + 3 confirmations
}

TEST_F(Cli, ValidatePrintsTheResolvedSpace) {
  auto spec = write("space.yaml", synthetic_spec());
  CliRun r = run("validate --config " + spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("size: 180 configurations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("valid: 180"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("num_workers"), std::string::npos);
}

// Each configuration's processes on this node: per rank its loader workers
// and threads, times the ranks, against the cores here.
TEST_F(Cli, ValidateCountsEachConfigurationsProcessesAgainstTheCores) {
  const int cores = autotune::usable_cores();
  const std::string space =
      "workload: {kind: synthetic}\n"
      "space:\n  num_workers: [0, 4]\n  threads: [1, 2]\n";
  auto spec = write("space.yaml", space + "constraints: {ranks: 2}\n");
  CliRun r = run("validate " + spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  int within = 0;
  for (int total : {2, 4, 10, 12}) within += total <= cores ? 1 : 0;
  EXPECT_NE(r.out.find(fmt::format("cores: {} here; the configurations ask for 2-12 processes (the most: 2 ranks x (4 "
                                   "workers + 2 threads) = 12); {} of 4 keep within the cores",
                                   cores, within)),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("ranks * (num_workers + threads) <= cores") != std::string::npos, cores < 12) << r.out;
  if (cores < 2) GTEST_SKIP() << "one core: no configuration of 2 ranks keeps within it";
  // The rule it suggests keeps the search within the cores: no warning.
  auto kept = write("kept.yaml", space + "constraints: {ranks: 2, rules: [\"ranks * (num_workers + threads) <= cores\"]}\n");
  r = run("validate " + kept.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(fmt::format("valid: {} configurations", within)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("{} of {} keep within the cores", within, within)), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning: beyond the cores"), std::string::npos) << r.out;
  // An answer within the cores: no cores line, and none in tuned.yaml.
  auto within_spec = write("within.yaml", space + "constraints: {ranks: 2, rules: [\"ranks * (num_workers + threads) <= cores\"]}\n"
                                                  "search: {strategy: grid}\noutput: {tuned: " +
                                                  (m_dir / "within.yaml.tuned").string() + "}\n");
  r = run("--config " + within_spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("cores:  "), std::string::npos) << r.out;
  EXPECT_FALSE(YAML::LoadFile((m_dir / "within.yaml.tuned").string())["cores"]) << r.out;
}

// The summary says when the answer asks for more processes than there are cores.
TEST_F(Cli, TheSummarySaysWhenTheAnswerAsksForMoreProcessesThanCores) {
  const int cores = autotune::usable_cores();
  if (cores >= 18) GTEST_SKIP() << "18 or more cores: the answer keeps within them";
  auto spec = write("space.yaml",
                    "workload: {kind: synthetic}\n"
                    "space:\n  batch_size: [32, 64]\n  num_workers: [8]\n"
                    "constraints: {ranks: 2}\n"
                    "search: {strategy: grid}\n"
                    "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  CliRun r = run("--config " + spec.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find(fmt::format("cores:  the answer asks for 2 ranks x (8 workers + 1 thread) = 18 processes on {} "
                                   "cores",
                                   cores)),
            std::string::npos)
      << r.out;
  // tuned.yaml says it too.
  const YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  ASSERT_TRUE(y["cores"]) << r.out;
  EXPECT_EQ(y["cores"]["asked"].as<int>(), 18);
  EXPECT_EQ(y["cores"]["here"].as<int>(), cores);
  EXPECT_NE(y["cores"]["note"].as<std::string>().find("under load, fewer may be faster"), std::string::npos);
}

TEST_F(Cli, OverridesAndResumeContinueWithoutRerunning) {
  auto spec = write("space.yaml", synthetic_spec());
  const auto out = m_dir / "o" / "t.yaml";
  ASSERT_EQ(run("--config " + spec.string() + " --quiet --strategy grid --budget 6 --out " + out.string()).status, 0);
  const auto journal = m_dir / "o" / "t.journal.jsonl";
  EXPECT_EQ(count_finished(journal), 6u);
  CliRun r = run("--config " + spec.string() + " --quiet --strategy grid --budget 10 --resume --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_finished(journal), 10u);
  EXPECT_EQ(YAML::LoadFile(out.string())["search"]["trials"].as<int>(), 10);
  // Another space refuses to resume onto this journal.
  auto other = write("other.yaml", "workload: {kind: synthetic}\nspace:\n  batch_size: [16, 32]\n");
  CliRun refused = run("--config " + other.string() + " --quiet --resume --out " + out.string());
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_NE(refused.out.find("another search space"), std::string::npos) << refused.out;
}

TEST_F(Cli, CtrlCWritesTheBestSoFarAndExits130) {
  auto spec = write("space.yaml", synthetic_spec("400", ", trial_seconds: 0.1"));
  pid_t pid = spawn("--config " + spec.string() + " --quiet >/dev/null 2>&1");
  ASSERT_EQ(stop_when(pid, SIGINT, [&] { return count_finished(m_dir / "tuned.journal.jsonl") >= 3; }), 130);
  YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(y["search"]["stopped_by"].as<std::string>(), "interrupted");
  const auto finished = count_finished(m_dir / "tuned.journal.jsonl");
  EXPECT_GE(finished, 3u);
  EXPECT_EQ(y["search"]["trials"].as<std::size_t>(), finished);
}

// Running a finished run's command again, or after editing its spec, keeps
// every measured trial: it refuses and names both ways on; --fresh moves the
// earlier run aside whole (journal, trial logs, tuned.yaml), never deleting it.
TEST_F(Cli, RunningAgainNeverReplacesAJournalThatHoldsMeasurements) {
  auto spec = write("space.yaml", synthetic_spec("4"));
  const std::string cmd = "--config " + spec.string() + " --quiet";
  ASSERT_EQ(run(cmd).status, 0);
  const auto journal = m_dir / "tuned.journal.jsonl";
  const auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string first = bytes(journal);
  ASSERT_EQ(count_finished(journal), 4u);

  CliRun again = run(cmd);
  EXPECT_EQ(again.status, 2) << again.out;
  EXPECT_NE(again.out.find("measured trials of an earlier run"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find(std::string(AUTOTUNE_BINARY) + " --config " + spec.string() + " --quiet --resume"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find(" --quiet --fresh"), std::string::npos) << again.out;
  EXPECT_EQ(bytes(journal), first);

  // An edited spec is refused the same way.
  write("space.yaml", synthetic_spec("6"));
  EXPECT_EQ(run(cmd).status, 2);
  EXPECT_EQ(bytes(journal), first);

  CliRun fresh = run(cmd + " --fresh");
  ASSERT_EQ(fresh.status, 0) << fresh.out;
  EXPECT_EQ(bytes(m_dir / "tuned.journal-1.jsonl"), first);
  EXPECT_TRUE(fs::exists(m_dir / "tuned-1.yaml"));
  EXPECT_EQ(count_finished(journal), 6u);
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["trials"].as<int>(), 6);

  // Another fresh start takes the next free name and leaves the first alone.
  ASSERT_EQ(run(cmd + " --fresh").status, 0);
  EXPECT_EQ(bytes(m_dir / "tuned.journal-1.jsonl"), first);
  EXPECT_EQ(count_finished(m_dir / "tuned.journal-2.jsonl"), 6u);
  EXPECT_EQ(run(cmd + " --fresh --resume").status, 2);
}

// A trial's logs travel with its journal when a run is set aside.
TEST_F(Cli, AFreshStartKeepsTheEarlierRunsTrialLogs) {
  auto spec = two_command_trials("echo '{\\\"throughput\\\": {x}}'", "",
                                 "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  ASSERT_EQ(run("--config " + spec.string() + " --quiet").status, 0);
  ASSERT_TRUE(fs::exists(m_dir / "tuned.journal.trials"));
  ASSERT_EQ(run("--config " + spec.string() + " --quiet --fresh").status, 0);
  EXPECT_TRUE(fs::exists(m_dir / "tuned.journal-1.trials"));
  EXPECT_EQ(count_finished(m_dir / "tuned.journal-1.jsonl"), 2u);
  EXPECT_EQ(count_finished(m_dir / "tuned.journal.jsonl"), 2u);
}

// Ctrl-C says how to carry on, and the command it gives does.
TEST_F(Cli, CtrlCNamesTheCommandThatResumes) {
  auto spec = write("space.yaml", synthetic_spec("24", ", trial_seconds: 0.1"));
  const auto err = m_dir / "err.txt";
  pid_t pid = spawn("--config " + spec.string() + " --quiet 2>" + err.string());
  ASSERT_EQ(stop_when(pid, SIGINT, [&] { return count_finished(m_dir / "tuned.journal.jsonl") >= 3; }), 130);
  std::ifstream e(err);
  std::string said((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  const std::string resume = std::string(AUTOTUNE_BINARY) + " --config " + spec.string() + " --quiet --resume";
  ASSERT_NE(said.find("\n  " + resume + "\n"), std::string::npos) << said;
  const auto before = count_finished(m_dir / "tuned.journal.jsonl");
  const auto r = autotune::testing::run_shell(resume + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_finished(m_dir / "tuned.journal.jsonl"), 24u);
  EXPECT_LT(before, 24u);
}

// Closing the terminal (SIGHUP) stops the run as Ctrl-C does: the best so
// far written, the finished trials kept and the command that carries on said.
TEST_F(Cli, HangupStopsLikeCtrlC) {
  auto spec = write("space.yaml", synthetic_spec("400", ", trial_seconds: 0.1"));
  const auto err = m_dir / "err.txt";
  pid_t pid = spawn("--config " + spec.string() + " --quiet 2>" + err.string());
  const int status = stop_when(pid, SIGHUP, [&] { return count_finished(m_dir / "tuned.journal.jsonl") >= 1; });
  EXPECT_TRUE(status == 129 || status == 130) << status;
  ASSERT_TRUE(written(m_dir / "tuned.yaml"));
  YAML::Node y = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(y["search"]["stopped_by"].as<std::string>(), "interrupted");
  EXPECT_GE(y["search"]["trials"].as<std::size_t>(), 1u);
  std::ifstream e(err);
  const std::string said((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find(" --quiet --resume\n"), std::string::npos) << said;
}

// A job's escape codes (colour, clear screen, window title, the C1 CSI) are
// shown as text, never passed to the terminal: in the progress lines and in
// report --text.
TEST_F(Cli, AJobsEscapeCodesNeverReachTheTerminal) {
  auto job = write("job.sh", "printf '\\033[2J\\033[31mboom\\033]0;pwned\\007 \\302\\233K\\r\\n' >&2\nexit 3\n");
  auto spec = write("space.yaml", "workload: {kind: command, command: \"sh " + job.string() +
                                      "\"}\nspace:\n  x: {values: [1, 2]}\nsearch: {strategy: grid, budget: 2}\n"
                                      "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  const auto clean = [](const std::string& out) {
    return out.find("\xc2\x9b") == std::string::npos &&  // U+009B, CSI
           std::none_of(out.begin(), out.end(), [](char c) {
             const auto u = static_cast<unsigned char>(c);
             return (u < 0x20 && c != '\n' && c != '\t') || u == 0x7f;
           });
  };
  CliRun tune = run(spec.string());
  EXPECT_EQ(tune.status, 1) << tune.out;
  EXPECT_TRUE(clean(tune.out)) << tune.out;
  EXPECT_NE(tune.out.find("\\x1b[31mboom\\x1b]0;pwned\\x07 \\x9bK"), std::string::npos) << tune.out;
  CliRun text = run("report " + (m_dir / "tuned.journal.jsonl").string() + " --text");
  EXPECT_EQ(text.status, 0) << text.out;
  EXPECT_TRUE(clean(text.out)) << text.out;
  EXPECT_NE(text.out.find("\\x1b[31mboom"), std::string::npos) << text.out;
}

TEST_F(Cli, SigkilledTunerResumesWithoutLosingOrRepeatingTrials) {
  // Trials in child processes (the default isolation), each taking 0.15 s.
  auto spec = write("space.yaml", synthetic_spec("24", ", trial_seconds: 0.15"));
  pid_t pid = spawn("--config " + spec.string() + " --quiet >/dev/null 2>&1");
  ASSERT_TRUE(wait_until([&] { return count_finished(m_dir / "tuned.journal.jsonl") >= 2; }));
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  const auto journal = m_dir / "tuned.journal.jsonl";
  const std::size_t before = count_finished(journal);
  ASSERT_GE(before, 2u);
  ASSERT_LT(before, 24u);

  CliRun r = run("--config " + spec.string() + " --quiet --resume");
  ASSERT_EQ(r.status, 0) << r.out;
  // Every trial finished exactly once over both runs: none lost, none re-run.
  std::ifstream in(journal);
  std::map<std::string, int> finished;  // configuration -> finish records
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["type"] == "finish" && !j.value("explain", false)) ++finished[j["config"].dump()];
  }
  EXPECT_EQ(finished.size(), 24u);
  for (const auto& [config, n] : finished) EXPECT_EQ(n, 1) << config << " finished " << n << " times";
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["trials"].as<int>(), 24);
}

TEST_F(Cli, SweepRecordsATableThatReplayReads) {
  auto spec = write("space.yaml", synthetic_spec());
  const auto csv = m_dir / "table.csv";
  CliRun s = run("sweep --config " + spec.string() + " --out " + csv.string());
  ASSERT_EQ(s.status, 0) << s.out;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("batch_size,num_workers,pin_memory,precision,status,throughput", 0), 0u) << header;
  std::size_t rows = 0;
  for (std::string l; std::getline(in, l);) rows += !l.empty();
  EXPECT_EQ(rows, 180u);
  EXPECT_FALSE(fs::exists(csv.string() + ".partial"));

  auto replay = write("replay.yaml", "workload: {kind: replay, file: table.csv}\n"
                                     "space:\n"
                                     "  batch_size: {values: [16, 32, 64, 128, 256]}\n"
                                     "  num_workers: {range: [0, 8]}\n"
                                     "  pin_memory: {values: [false, true]}\n"
                                     "  precision: {values: [fp32, bf16]}\n"
                                     "search: {strategy: grid, budget: 200}\n"
                                     "output: {tuned: " + (m_dir / "replayed.yaml").string() + "}\n");
  CliRun r = run("--config " + replay.string() + " --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(YAML::LoadFile((m_dir / "replayed.yaml").string())["search"]["ok"].as<int>(), 180);
}

// A sweep's rows are measurements: a second sweep to the same CSV refuses
// until told to keep the first aside.
TEST_F(Cli, SweepNeverWritesOverAnEarlierTable) {
  auto spec = two_command_trials("echo '{\\\"throughput\\\": {x}}'");
  const auto csv = m_dir / "table.csv";
  ASSERT_EQ(run("sweep --config " + spec.string() + " --out " + csv.string()).status, 0);
  std::ifstream in(csv);
  const std::string first((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CliRun again = run("sweep --config " + spec.string() + " --out " + csv.string());
  EXPECT_EQ(again.status, 2) << again.out;
  EXPECT_NE(again.out.find("--fresh"), std::string::npos) << again.out;
  ASSERT_EQ(run("sweep --config " + spec.string() + " --out " + csv.string() + " --fresh").status, 0);
  std::ifstream kept(m_dir / "table-1.csv");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>()), first);
  EXPECT_TRUE(fs::exists(csv));
}

// Ctrl-C while a job that has written its result hangs in its teardown
// (within its exit_grace): the measurement is done, and it is kept, not
// dropped as a trial the stop cut short.
TEST_F(Cli, CtrlCWhileAFinishedJobHangsKeepsItsResult) {
  const auto started = m_dir / "done.pid";
  auto spec = two_command_trials("printf '{\\\"throughput\\\": 42}' > \\\"$AUTOTUNE_RESULT\\\"; echo $$ > " +
                                     started.string() + "; exec sleep 1000",
                                 "exit_grace: 120s, ", "output: {tuned: " + (m_dir / "tuned.yaml").string() + "}\n");
  pid_t pid = spawn("--config " + spec.string() + " --quiet >/dev/null 2>&1");
  ASSERT_EQ(stop_when(pid, SIGINT, [&] { return written(started); }), 130);
  std::ifstream in(m_dir / "tuned.journal.jsonl");
  int finished = 0;
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    if (j["type"] != "finish") continue;
    ++finished;
    EXPECT_EQ(j["status"], "ok") << l;
    EXPECT_EQ(j["throughput"], 42) << l;
    EXPECT_EQ(j["metrics"]["stopped_after_result"], 1) << l;
  }
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["ok"].as<int>(), 1);
}

// A sweep stopped while a trial runs keeps the rows measured and leaves out
// the trial its own stop killed: a replay of the partial table must not read
// a `timeout` into a configuration that was never measured (seen on a GPU
// sweep cut by `timeout`: its last row was a 0.9 s "timeout").
TEST_F(Cli, AnInterruptedSweepLeavesOutTheTrialItsStopCutShort) {
  const auto started = m_dir / "slow.pid";
  auto spec = two_command_trials("if [ {x} = 1 ]; then echo '{\\\"throughput\\\": 5}'; else echo $$ > " +
                                 started.string() + "; exec sleep 1000; fi");
  const auto csv = m_dir / "table.csv";
  const auto err = m_dir / "err.txt";
  pid_t pid = spawn("sweep --config " + spec.string() + " --out " + csv.string() + " 2>" + err.string());
  ASSERT_EQ(stop_when(pid, SIGTERM, [&] { return written(started); }), 130);
  EXPECT_FALSE(fs::exists(csv));
  std::ifstream in(csv.string() + ".partial");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u) << "expected the header and x=1's row";
  EXPECT_EQ(lines[1].rfind("1,ok,5", 0), 0u) << lines[1];
  std::ifstream e(err);
  const std::string said((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  EXPECT_NE(said.find("1 trial cut short left out"), std::string::npos) << said;
}

}  // namespace
