// A broken set-up caught through the binary, as a user meets it: a command
// that is not found, or a script whose module is missing, stops the run
// within its first trials with the cause and the fix (exit 1), instead of
// burning the budget; the next run in that folder, once fixed, goes ahead;
// `validate --run-once` checks the set-up with one trial and writes nothing;
// a knob name a letter from a built-in one is refused (exit 2).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/shell.hpp"
#include "tests/support/test_dir.hpp"

namespace {

namespace fs = std::filesystem;

using CliRun = autotune::testing::ShellRun;  // stdout and stderr together
CliRun run(const std::string& args) { return autotune::testing::run_autotune(args); }

// Search trials that finished, as the journal records them.
int finished_trials(const fs::path& journal) {
  std::ifstream in(journal);
  int n = 0;
  for (std::string l; std::getline(in, l);)
    n += l.find("\"type\":\"finish\"") != std::string::npos && l.find("\"control\":true") == std::string::npos;
  return n;
}

int ok_trials(const fs::path& journal) {
  std::ifstream in(journal);
  int n = 0;
  for (std::string l; std::getline(in, l);)
    n += l.find("\"type\":\"finish\"") != std::string::npos && l.find("\"status\":\"ok\"") != std::string::npos;
  return n;
}

class BrokenSetup : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = autotune::testing::fresh_test_dir("setup_failure"); }
  void TearDown() override { fs::remove_all(m_dir); }

  fs::path write(const std::string& name, const std::string& text) {
    const auto p = m_dir / name;
    std::ofstream(p) << text;
    return p;
  }
  // A command run over three batch sizes with a budget of 10 trials; no
  // measurements after the search, so that a run that goes ahead is quick.
  fs::path spec(const std::string& command) {
    return write("space.yaml", "workload:\n  kind: command\n  command: \"" + command +
                                   "\"\n  cwd: .\n  timeout: 60s\n"
                                   "space:\n  batch_size: [16, 32, 64]\n  grad_accum: [1, 2]\n"
                                   "search: {strategy: random, budget: 10, seed: 1, explain: false, remeasure: false,"
                                   " initial: [{batch_size: 16, grad_accum: 1}]}\n"
                                   "output: {tuned: " +
                                   (m_dir / "tuned.yaml").string() + "}\n");
  }
  fs::path journal() const { return m_dir / "tuned.journal.jsonl"; }
  // A job that measures: its throughput grows with the batch.
  static std::string working_command() { return "echo '{\\\"throughput\\\": {batch_size}.5}'"; }

  fs::path m_dir;
};

TEST_F(BrokenSetup, CommandNotFoundStopsWithinThreeTrialsAndTheFixedRunGoesAhead) {
  const fs::path s = spec("no_such_program_4711 --bs {batch_size}");
  const CliRun r = run(s.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(finished_trials(journal()), 3) << r.out;  // of a budget of 10
  EXPECT_NE(r.out.find("'no_such_program_4711' was not found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("to fix: correct the program's name in workload.command"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped: the set-up is broken"), std::string::npos) << r.out;  // the summary
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["stopped_by"].as<std::string>(), "setup_failed");
  // The report read from the journal says the same.
  const CliRun report = run("report --text " + journal().string());
  EXPECT_EQ(report.status, 0) << report.out;
  EXPECT_NE(report.out.find("the set-up is broken"), std::string::npos) << report.out;

  // Fixed, the same command line runs: the failed run is set aside, not refused.
  spec(working_command());
  const CliRun again = run(s.string());
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("holds no successful trial (3 failed): starting afresh"), std::string::npos) << again.out;
  EXPECT_TRUE(fs::exists(m_dir / "tuned.journal-1.jsonl")) << again.out;
  EXPECT_EQ(finished_trials(m_dir / "tuned.journal-1.jsonl"), 3);
  EXPECT_EQ(ok_trials(journal()), 6) << again.out;  // every valid configuration, each measuring
}

TEST_F(BrokenSetup, MissingPythonModuleStopsWithinThreeTrialsNamingIt) {
  write("train.py", "import no_such_module_4711\nprint('{\"throughput\": 1}')\n");
  const fs::path s = spec("python3 train.py --bs {batch_size}");
  const CliRun r = run(s.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(finished_trials(journal()), 3) << r.out;
  EXPECT_NE(r.out.find("has no module 'no_such_module_4711'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("to fix: install it for that Python (`python3 -m pip install no_such_module_4711`"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("No module named 'no_such_module_4711'"), std::string::npos) << r.out;  // the trial's words

  // Fixed (the import removed), the next run in the folder goes ahead.
  write("train.py", "import os\nprint('{\"throughput\": %s}' % os.environ['AUTOTUNE_BATCH_SIZE'])\n");
  const CliRun again = run(s.string());
  EXPECT_EQ(again.status, 0) << again.out;
  EXPECT_GT(ok_trials(journal()), 0) << again.out;
}

TEST_F(BrokenSetup, ConfigurationsThatFailOtherwiseDoNotStopTheRun) {
  // A failure that is not a set-up's (exit 1 with a message of its own) is
  // the search's to learn from: the whole budget runs.
  const fs::path s = spec("echo 'RuntimeError: bad batch' >&2; exit 1");
  const CliRun r = run(s.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(finished_trials(journal()), 6) << r.out;  // every valid configuration
  EXPECT_EQ(r.out.find("set-up is broken"), std::string::npos) << r.out;
}

TEST_F(BrokenSetup, ValidateRunOnceReportsTheFixAndWritesNothing) {
  const fs::path broken = spec("no_such_program_4711 --bs {batch_size}");
  const CliRun r = run("validate --run-once " + broken.string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("run once: batch_size=16 grad_accum=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the set-up is broken: the command's program 'no_such_program_4711' was not found"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("to fix: correct the program's name"), std::string::npos) << r.out;

  const fs::path working = spec(working_command());
  const CliRun ok = run("validate --run-once " + working.string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("run once: ok, 16.5 samples/s"), std::string::npos) << ok.out;
  EXPECT_FALSE(fs::exists(journal()));
  EXPECT_FALSE(fs::exists(m_dir / "tuned.yaml"));
  EXPECT_FALSE(fs::exists(m_dir / "tuned.journal.trials"));
}

TEST_F(BrokenSetup, KnobNameALetterFromABuiltInOneIsRefused) {
  const std::string head = "workload: {kind: synthetic}\nspace:\n  batch_size: [16, 32]\n";
  const fs::path typo = write("typo.yaml", head + "  num_wokers: [0, 2]\n");
  const CliRun r = run("validate " + typo.string());
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(typo.string() + ":4:3: space.num_wokers: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("did you mean 'num_workers'?"), std::string::npos) << r.out;

  const fs::path meant = write("meant.yaml", head + "  num_wokers: {values: [0, 2], custom: true}\n");
  const CliRun ok = run("validate " + meant.string());
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("num_wokers"), std::string::npos) << ok.out;
}

}  // namespace
