// The Slurm executor against a real one-node Slurm cluster started for the
// test (tests/slurm/cluster.sh: munged, slurmctld, slurmd on loopback). Skips
// with the reason where Slurm cannot be started (not root, not installed).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "tuner/record/journal.hpp"

namespace {

namespace fs = std::filesystem;

std::pair<int, std::string> sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

class SlurmExecutor : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("autotune_slurm_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    const auto [rc, out] = sh(std::string(AUTOTUNE_SOURCE_DIR) + "/tests/slurm/cluster.sh start " + (m_dir / "cluster").string());
    if (rc != 0) {
      m_skip = "Slurm could not be started here: " + out;
      return;
    }
    m_conf = (m_dir / "cluster" / "slurm.conf").string();
  }
  void TearDown() override {
    if (!m_conf.empty()) sh(std::string(AUTOTUNE_SOURCE_DIR) + "/tests/slurm/cluster.sh stop " + (m_dir / "cluster").string());
    fs::remove_all(m_dir);
  }
  std::string slurm(const std::string& cmd) { return "SLURM_CONF=" + m_conf + " " + cmd; }
  // squeue's jobs once the queue is empty or `seconds` have passed, polling
  // the controller; what is left at the deadline is returned for the message.
  std::string queue_once_drained(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string jobs = sh(slurm("squeue --noheader")).second;
    while (!jobs.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      jobs = sh(slurm("squeue --noheader")).second;
    }
    return jobs;
  }

  fs::path m_dir;
  std::string m_conf, m_skip;
};

TEST_F(SlurmExecutor, TrialsRunAsStepsHangsAreCancelledCrashesClassified) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  // A trial script whose behaviour is a parameter; the hang records its pid.
  std::ofstream(m_dir / "trial.sh") << "case \"$1\" in\n"
                                       "  fast) echo \"{\\\"throughput\\\": $((100 * $2))}\" ;;\n"
                                       "  hang) echo $$ >> " << (m_dir / "hung.pids").string() << "; exec sleep 1000 ;;\n"
                                       "  crash) kill -SEGV $$ ;;\n"
                                       "esac\n";
  std::ofstream(m_dir / "space.yaml")
      << "workload: {kind: command, command: \"sh " << (m_dir / "trial.sh").string() << " {mode} {x}\", timeout: 3s}\n"
      << "space:\n  mode: {values: [fast, hang, crash]}\n  x: {values: [1, 2]}\n"
      << "search: {strategy: grid, budget: 6, parallel: 2}\n"
      << "executor: {kind: slurm, cpus_per_trial: 1}\n"
      << "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";

  // Outside an allocation the executor refuses, saying how to get one.
  const auto outside = sh(slurm(std::string(AUTOTUNE_BINARY) + " --quiet --config " + (m_dir / "space.yaml").string()));
  EXPECT_EQ(outside.first, 2) << outside.second;
  EXPECT_NE(outside.second.find("salloc"), std::string::npos) << outside.second;

  const auto [rc, out] = sh(slurm("salloc --quiet -n 2 " + std::string(AUTOTUNE_BINARY) + " --config " +
                                  (m_dir / "space.yaml").string()));
  ASSERT_EQ(rc, 0) << out;
  auto journal = autotune::read_journal(m_dir / "tuned.journal.jsonl");
  // Drift control's re-measurements of the control come and go with the machine's load.
  std::erase_if(journal.trials, [](const autotune::JournalTrial& t) { return t.phase == autotune::Phase::control; });
  ASSERT_EQ(journal.trials.size(), 6u) << out;
  const std::string host = sh("hostname -s").second.substr(0, sh("hostname -s").second.find('\n'));
  std::set<std::string> steps;
  for (const auto& t : journal.trials) {
    ASSERT_TRUE(t.outcome);
    const std::string mode = t.config.get_string("mode", "");
    const auto status = t.outcome->status;
    if (mode == "fast") {
      EXPECT_EQ(status, autotune::Status::ok) << t.outcome->reason;
      EXPECT_EQ(t.outcome->throughput, 100.0 * t.config.get_int("x", 0));
    }
    if (mode == "hang") {
      EXPECT_EQ(status, autotune::Status::timeout) << t.outcome->reason;
    }
    if (mode == "crash") {
      EXPECT_EQ(status, autotune::Status::crash) << t.outcome->reason;
    }
    EXPECT_EQ(t.outcome->labels.count("slurm_step"), 1u);
    steps.insert(t.outcome->labels.at("slurm_step"));
    if (mode != "hang") {
      ASSERT_EQ(t.outcome->labels.count("node"), 1u) << t.outcome->reason;
      EXPECT_EQ(t.outcome->labels.at("node"), host) << "the journal records the node";
    }
  }
  EXPECT_EQ(steps.size(), 6u) << "one step per trial";

  // Nothing left running in Slurm or on the machine. No step may remain once
  // salloc has returned; the allocation itself may still be completing (CG)
  // while slurmd finishes its clean-up, so the queue is given until then to
  // empty: a step that could not be killed would hold it there past KillWait.
  EXPECT_EQ(sh(slurm("squeue --noheader --steps")).second, "");
  EXPECT_EQ(queue_once_drained(30.0), "");
  std::ifstream pids(m_dir / "hung.pids");
  int n = 0;
  for (int pid; pids >> pid; ++n) {
    // Gone, or a zombie waiting for init to reap it: either way not running.
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(st, line);
    const auto close = line.rfind(')');
    const bool running = !line.empty() && close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
    EXPECT_FALSE(running) << "hung trial " << pid << " still running: " << line;
  }
  EXPECT_EQ(n, 2);
}

// A built-in workload's step runs `autotune trial` on the node, which sends
// its Outcome back in the journal's wire format: the node's trial journals
// what a local trial of the same configuration and seed does (status,
// throughput, metrics, reason), plus where it ran.
TEST_F(SlurmExecutor, ABuiltInTrialOnANodeJournalsWhatALocalOneDoes) {
  if (!m_skip.empty()) GTEST_SKIP() << m_skip;
  auto spec = [&](const std::string& name, const std::string& executor) {
    std::ofstream(m_dir / (name + ".yaml"))
        << "workload: {kind: synthetic, profile: balanced, noise: 0.05}\n"
        << "space:\n  batch_size: {values: [32, 64]}\n  num_workers: {values: [0, 4]}\n"
        << "search: {strategy: grid, budget: 4, seed: 9}\n"
        << executor << "output: {tuned: " << (m_dir / (name + ".tuned.yaml")).string() << "}\n";
    return (m_dir / (name + ".yaml")).string();
  };
  const auto local = sh(std::string(AUTOTUNE_BINARY) + " --quiet --config " + spec("local", ""));
  ASSERT_EQ(local.first, 0) << local.second;
  const auto remote = sh(slurm("salloc --quiet -n 1 " + std::string(AUTOTUNE_BINARY) + " --quiet --config " +
                               spec("remote", "executor: {kind: slurm, cpus_per_trial: 1}\n")));
  ASSERT_EQ(remote.first, 0) << remote.second;
  const auto a = autotune::read_journal(m_dir / "local.tuned.journal.jsonl");
  const auto b = autotune::read_journal(m_dir / "remote.tuned.journal.jsonl");
  ASSERT_EQ(a.trials.size(), 4u);
  ASSERT_EQ(b.trials.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(a.trials[i].outcome && b.trials[i].outcome);
    const autotune::Outcome& x = *a.trials[i].outcome;
    const autotune::Outcome& y = *b.trials[i].outcome;
    EXPECT_EQ(a.trials[i].config.describe(), b.trials[i].config.describe());
    EXPECT_EQ(x.status, y.status) << y.reason;
    EXPECT_DOUBLE_EQ(x.throughput, y.throughput) << "the same seed gives the same measurement";
    EXPECT_EQ(x.metrics, y.metrics);
    EXPECT_EQ(x.reason, y.reason);
    EXPECT_EQ(y.labels.count("node"), 1u);
    EXPECT_EQ(y.labels.count("slurm_step"), 1u);
    EXPECT_GT(y.seconds, 0);
  }
}

}  // namespace
