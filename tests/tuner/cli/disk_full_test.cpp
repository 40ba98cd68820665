// A failure of the tool itself in the middle of a run: the disk under the
// journal fills while trials are in flight. The run must end within seconds
// with its own status and a one-line reason, leave no trial process behind,
// and keep every record written before, which --resume then carries on from.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/proc_util.hpp"
#include "tests/support/shell.hpp"
#include "tuner/record/journal.hpp"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::size_t count_finished(const fs::path& journal) {
  std::ifstream in(journal);
  std::size_t n = 0;
  for (std::string l; std::getline(in, l);)
    n += l.find("\"type\":\"finish\"") != std::string::npos && l.find("\"control\":true") == std::string::npos;
  return n;
}

// Writes until the file system says it is full.
void fill(const fs::path& file) {
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::vector<char> block(64 * 1024, 'x');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size() && std::fflush(f) == 0) {
  }
  std::fclose(f);
}

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
    m_mnt = m_dir.path() / "small";
    fs::create_directories(m_mnt);
    if (::mount("tmpfs", m_mnt.c_str(), "tmpfs", 0, "size=2m") != 0)
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    m_mounted = true;
  }
  void TearDown() override {
    if (m_mounted) ::umount2(m_mnt.c_str(), MNT_DETACH);
  }
  testing::ScratchDir m_dir;
  fs::path m_mnt;
  bool m_mounted = false;
};

TEST_F(DiskFull, StopsWithItsOwnStatusKeepsEveryRecordAndResumes) {
  // Grid order over 1..120 on two slots: trial 2 holds its slot in a long
  // sleep (until the resume), the others take a moment each. Every trial
  // writes its shell's pid where the test can find it.
  const fs::path pids = m_dir.path() / "pids";
  const fs::path resumed = m_dir.path() / "resumed";
  const std::string command = "echo $$ >> " + pids.string() + "; if [ {batch_size} -eq 2 ] && [ ! -e " +
                              resumed.string() + " ]; then exec sleep 120; fi; sleep 0.02; "
                              "echo '{\\\"throughput\\\": {batch_size}}'";  // \" inside YAML's double quotes
  const fs::path spec = m_dir.write("space.yaml",
                                    "workload: {kind: command, command: \"" + command + "\", timeout: 300}\n"
                                    "space:\n  batch_size: {range: [1, 120]}\n"
                                    "search: {strategy: grid, parallel: 2, budget: 120}\n"
                                    "output: {tuned: " + (m_mnt / "tuned.yaml").string() + "}\n",
                                    false);
  const fs::path journal = m_mnt / "tuned.journal.jsonl";
  const fs::path log = m_dir.path() / "run.log";
  const std::string cmd = std::string(AUTOTUNE_BINARY) + " --config " + spec.string() + " > " + log.string() + " 2>&1";

  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), nullptr);
    ::_exit(127);
  }
  // Wait for the journal to hold a few finished trials, then fill the disk.
  auto log_text = [&] {
    std::ifstream in(log);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const auto t0 = Clock::now();
  int st = 0;
  while (count_finished(journal) < 5 && Clock::now() - t0 < std::chrono::seconds(60)) {
    ASSERT_EQ(::waitpid(pid, &st, WNOHANG), 0) << "the tuner ended early:\n" << log_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(count_finished(journal), 5u) << "the run never got going:\n" << log_text();
  fill(m_mnt / "filler");
  const auto filled = Clock::now();

  while (::waitpid(pid, &st, WNOHANG) == 0) {
    if (Clock::now() - filled > std::chrono::seconds(60)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      FAIL() << "the tuner did not stop within 60 s of the disk filling";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double stop_s = std::chrono::duration<double>(Clock::now() - filled).count();
  const std::string out = log_text();
  ASSERT_TRUE(WIFEXITED(st)) << "ended by a signal: " << WTERMSIG(st) << "\n" << out;
  EXPECT_EQ(WEXITSTATUS(st), 3) << out;
  EXPECT_LT(stop_s, 15.0) << out;
  EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
  EXPECT_NE(out.find("--resume"), std::string::npos) << out;

  // No trial left behind: the long sleep of trial 2 was stopped with the rest.
  std::ifstream pin(pids);
  std::size_t started = 0;
  for (long p; pin >> p; ++started) EXPECT_TRUE(testing::gone_within(p, 5.0)) << "trial process " << p << " is left";
  EXPECT_GE(started, 5u);

  // Every record before the failure is whole; the journal reads.
  const JournalContents before = read_journal(journal);
  std::size_t kept = 0;
  for (const auto& t : before.trials) kept += t.outcome.has_value();
  EXPECT_GE(kept, 5u);

  // Room again: --resume replays what was kept and measures the rest once.
  fs::remove(m_mnt / "filler");
  std::ofstream(resumed) << "yes";
  const testing::ShellRun again =
      testing::run_shell(std::string(AUTOTUNE_BINARY) + " --config " + spec.string() + " --resume 2>&1");
  const std::string& rout = again.out;
  ASSERT_EQ(again.status, 0) << rout;
  std::size_t replayed = 0;
  for (std::size_t pos = 0; (pos = rout.find("(from the journal)", pos)) != std::string::npos; ++pos) ++replayed;
  EXPECT_EQ(replayed, kept) << rout;
  std::map<std::string, int> finished;
  for (const auto& t : read_journal(journal).trials)
    if (t.outcome && t.phase != Phase::control) ++finished[t.config.describe()];
  EXPECT_EQ(finished.size(), 120u);
  for (const auto& [config, n] : finished) EXPECT_EQ(n, 1) << config << " finished " << n << " times";
}

}  // namespace
}  // namespace autotune
