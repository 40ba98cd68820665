// What the rest of the machine does during a trial, read through the binary
// as a user meets it: a busy loop beside a trial reads as about one foreign
// core, a trial alone reads as the machine's ambient load, and
// `search.busy: wait` holds a trial until a busy loop ends.
//
// The machine may be busy with other work (CI machines are shared): every
// figure is taken against the ambient load read just before, and the suite
// runs these tests alone (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "tests/support/shell.hpp"
#include "tests/support/test_dir.hpp"
#include "tuner/run/machine_load.hpp"

namespace {

namespace fs = std::filesystem;

// A process that spins on one core until killed, started and ended by its pid.
class BusyLoop {
 public:
  BusyLoop() {
    m_pid = ::fork();
    if (m_pid == 0) {
      volatile unsigned long n = 0;
      for (;;) n = n + 1;
    }
  }
  ~BusyLoop() { stop(); }
  void stop() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
    m_pid = -1;
  }

 private:
  pid_t m_pid = -1;
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class MachineLoad : public ::testing::Test {
 protected:
  void SetUp() override { m_dir = autotune::testing::fresh_test_dir("machine_load"); }
  void TearDown() override { fs::remove_all(m_dir); }

  // space.yaml for the command `sh job.sh` (`job`, written beside it) over
  // the knob x with `values`, and the `search:` map's contents.
  void write_spec(const std::string& job, const std::string& values, const std::string& search) {
    std::ofstream(m_dir / "job.sh") << job;
    std::ofstream(m_dir / "space.yaml") << "workload: {kind: command, timeout: 120s, command: \"sh "
                                        << (m_dir / "job.sh").string() << "\"}\n"
                                        << "space:\n  x: {values: [" << values << "]}\n"
                                        << "search: {" << search << "}\n"
                                        << "output: {tuned: " << (m_dir / "tuned.yaml").string() << "}\n";
  }
  // autotune on space.yaml in the background, its output in run.log; its pid.
  pid_t spawn() {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string cmd = "exec " + std::string(AUTOTUNE_BINARY) + " " + (m_dir / "space.yaml").string() + " >" +
                              log().string() + " 2>&1";
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      ::_exit(127);
    }
    return pid;
  }
  fs::path log() const { return m_dir / "run.log"; }
  // Polls until `done` holds, for at most two minutes.
  static bool wait_for(const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!done() && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  }

  // One trial of a job that sleeps `seconds` (using no CPU itself); its foreign_cores.
  std::optional<double> one_sleeping_trial(double seconds) {
    write_spec("sleep " + std::to_string(seconds) + "\necho '{\"throughput\": 10}'\n", "1", "strategy: grid, budget: 1");
    const auto r = autotune::testing::run_shell(std::string(AUTOTUNE_BINARY) + " " + (m_dir / "space.yaml").string() +
                                                " --fresh 2>&1");
    EXPECT_EQ(r.status, 0) << r.out;
    m_out = r.out;
    std::istringstream lines(read(m_dir / "tuned.journal.jsonl"));
    for (std::string l; std::getline(lines, l);) {
      const auto rec = nlohmann::json::parse(l);
      if (rec["type"] == "finish" && rec["metrics"].contains("foreign_cores"))
        return rec["metrics"]["foreign_cores"].get<double>();
    }
    return std::nullopt;
  }
  fs::path m_dir;
  std::string m_out;
};

// A reading is judged against the machine's own load read just before and
// just after it; when those two differ by more than 0.15 cores the machine
// changed under the trial and the attempt says nothing: up to three are made.
struct Reading {
  double ambient = 0, foreign = 0;
};

TEST_F(MachineLoad, ATrialAloneReadsTheAmbientLoadAndABusyLoopBesideItReadsAsOneCore) {
  if (autotune::usable_cores() < 2) GTEST_SKIP() << "needs two cores: one for the loop, one for the rest";
  auto steady_reading = [&](bool with_loop) -> std::optional<Reading> {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const auto before = autotune::sample_foreign_cores(1.0);
      std::unique_ptr<BusyLoop> loop;
      if (with_loop) loop = std::make_unique<BusyLoop>();
      const auto foreign = one_sleeping_trial(2.0);
      loop.reset();
      const auto after = autotune::sample_foreign_cores(1.0);
      if (!before || !after || !foreign) return std::nullopt;
      if (std::abs(*before - *after) <= 0.15) return Reading{(*before + *after) / 2, *foreign};
    }
    return std::nullopt;
  };
  const auto alone = steady_reading(false);
  if (!alone) GTEST_SKIP() << "the machine's own load kept changing: " << m_out;
  EXPECT_LT(alone->foreign, alone->ambient + 0.2) << "ambient " << alone->ambient;

  const auto beside = steady_reading(true);
  if (!beside) GTEST_SKIP() << "the machine's own load kept changing: " << m_out;
  // On a machine whose other cores are taken too, the loop gets less than a core.
  if (beside->ambient > autotune::usable_cores() - 0.9) GTEST_SKIP() << "the machine is too busy: " << beside->ambient;
  EXPECT_NEAR(beside->foreign - beside->ambient, 1.0, 0.25) << "ambient " << beside->ambient;
  EXPECT_NE(m_out.find("machine: other processes used"), std::string::npos) << m_out;
}

TEST_F(MachineLoad, BusyWaitHoldsTheTrialWhileALoopRunsAndStartsItAfterTheLoopEnds) {
  if (autotune::usable_cores() < 2) GTEST_SKIP() << "needs two cores";
  if (const auto ambient = autotune::sample_foreign_cores(1.0); !ambient || *ambient >= 0.3)
    GTEST_SKIP() << "the machine is busy without our loop: the trial would wait for it too";
  write_spec("echo '{\"throughput\": 10}'\n", "1", "strategy: grid, budget: 1, busy: wait");
  auto loop = std::make_unique<BusyLoop>();
  const fs::path log = this->log();
  const pid_t pid = spawn();
  ASSERT_TRUE(wait_for([&] { return read(log).find("waiting up to") != std::string::npos; })) << read(log);
  // Held: the journal has its header and no trial.
  EXPECT_EQ(read(m_dir / "tuned.journal.jsonl").find("\"type\":\"start\""), std::string::npos);
  loop.reset();
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st)) << read(log);
  EXPECT_EQ(WEXITSTATUS(st), 0) << read(log);
  EXPECT_NE(read(log).find("quiet again"), std::string::npos) << read(log);
  EXPECT_NE(read(m_dir / "tuned.journal.jsonl").find("\"type\":\"finish\""), std::string::npos);
}

// A load that starts mid-session (a busy loop, and the job running at half
// speed) makes every later trial read slower. Drift control measures the
// control (the baseline) again when the load changes and reads the later
// trials against it, so the fastest configuration, measured last, is still
// the answer.
TEST_F(MachineLoad, ALoadThatStartsMidSessionIsReadAgainstTheControlMeasuredUnderIt) {
  if (autotune::usable_cores() < 2) GTEST_SKIP() << "needs two cores";
  if (const auto ambient = autotune::sample_foreign_cores(1.0); !ambient || *ambient >= 0.3)
    GTEST_SKIP() << "the machine is busy without our loop: the change would not be ours";
  // x = 4 waits for `go`, which the test gives once the load has begun.
  write_spec("cd " + m_dir.string() + "\n" +
                 "if [ \"$AUTOTUNE_X\" = 4 ]; then while [ ! -e go ]; do sleep 0.05; done; sleep 1; fi\n"
                 "t=$((100 + 10 * AUTOTUNE_X)); [ -e slow ] && t=$((t / 2))\n"
                 "sleep 0.3; echo \"{\\\"throughput\\\": $t}\"\n",
             "1, 2, 3, 4, 5, 6, 7, 8",
             "strategy: grid, budget: 8, explain: false, remeasure: 0, race: false, initial: [{x: 1}]");
  const fs::path log = this->log();
  const pid_t pid = spawn();
  auto finished = [&] {
    std::size_t n = 0;
    const std::string j = read(m_dir / "tuned.journal.jsonl");
    for (auto p = j.find("\"type\":\"finish\""); p != std::string::npos; p = j.find("\"type\":\"finish\"", p + 1)) ++n;
    return n;
  };
  ASSERT_TRUE(wait_for([&] { return finished() >= 3; })) << read(log);
  auto loop = std::make_unique<BusyLoop>();
  std::ofstream(m_dir / "slow").close();
  std::ofstream(m_dir / "go").close();
  int st = 0;
  ::waitpid(pid, &st, 0);
  loop.reset();
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read(log);
  const std::string journal = read(m_dir / "tuned.journal.jsonl");
  EXPECT_NE(journal.find("\"control\":true"), std::string::npos) << read(log);
  EXPECT_NE(read(log).find("control trial"), std::string::npos) << read(log);
  const YAML::Node tuned = YAML::LoadFile((m_dir / "tuned.yaml").string());
  EXPECT_EQ(tuned["best"]["x"].as<int>(), 8) << read(m_dir / "tuned.yaml") << read(log);
}

// The side-by-side pairs start on a quiet machine where they can: a busy
// loop that runs through the search holds the first pair until it ends, and
// the speedup printed is then a quiet machine's.
TEST_F(MachineLoad, PairsWaitForTheMachineToBeQuiet) {
  if (autotune::usable_cores() < 2) GTEST_SKIP() << "needs two cores";
  if (const auto ambient = autotune::sample_foreign_cores(1.0); !ambient || *ambient >= 0.3)
    GTEST_SKIP() << "the machine is busy without our loop: the pairs would wait for it too";
  write_spec("sleep 0.3; echo \"{\\\"throughput\\\": $((100 + 10 * AUTOTUNE_X))}\"\n", "1, 2",
             "strategy: grid, budget: 2, explain: false, remeasure: 3, race: false, initial: [{x: 1}]");
  auto loop = std::make_unique<BusyLoop>();
  const fs::path log = this->log();
  const pid_t pid = spawn();
  ASSERT_TRUE(wait_for([&] { return read(log).find("before the next side-by-side pair") != std::string::npos; }))
      << read(log);
  // Held: no pair measured yet.
  EXPECT_EQ(read(m_dir / "tuned.journal.jsonl").find("\"remeasure\":\""), std::string::npos) << read(log);
  loop.reset();
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read(log);
  EXPECT_NE(read(log).find("quiet again"), std::string::npos) << read(log);
  EXPECT_EQ(read(log).find("the pairs ran while"), std::string::npos) << read(log);
  const YAML::Node tuned = YAML::LoadFile((m_dir / "tuned.yaml").string());
  ASSERT_TRUE(tuned["baseline"]["others_cores"]) << read(m_dir / "tuned.yaml");
  EXPECT_LT(tuned["baseline"]["others_cores"].as<double>(), 0.5) << read(m_dir / "tuned.yaml");
}

// Pairs measured under load (search.busy: ignore does not wait) say so
// beside the speedup, and tuned.yaml carries the load.
TEST_F(MachineLoad, PairsMeasuredUnderLoadSaySo) {
  if (autotune::usable_cores() < 2) GTEST_SKIP() << "needs two cores";
  write_spec("sleep 0.3; echo \"{\\\"throughput\\\": $((100 + 10 * AUTOTUNE_X))}\"\n", "1, 2",
             "strategy: grid, budget: 2, explain: false, remeasure: 3, race: false, busy: ignore, initial: [{x: 1}]");
  BusyLoop loop;
  const auto r = autotune::testing::run_shell(std::string(AUTOTUNE_BINARY) + " " + (m_dir / "space.yaml").string() +
                                              " 2>&1");
  loop.stop();
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the pairs ran while other processes used"), std::string::npos) << r.out;
  const YAML::Node tuned = YAML::LoadFile((m_dir / "tuned.yaml").string());
  ASSERT_TRUE(tuned["baseline"]["others_cores"]) << read(m_dir / "tuned.yaml");
  EXPECT_GE(tuned["baseline"]["others_cores"].as<double>(), 0.5) << read(m_dir / "tuned.yaml");
}

// Other processes on the GPU, as nvidia-smi lists them: a stand-in program
// lists one process of ours (its own shell's parent, the test) and one that
// is not (pid 1).
TEST(GpuOthers, CountsTheComputeProcessesOutsideAutotunesTreeOnTheTrialsDevices) {
  const fs::path dir = autotune::testing::fresh_test_dir("gpu_others");
  const fs::path smi = dir / "nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\ncase \"$1\" in\n"
                     << "  --query-gpu=*) echo '0, GPU-aaaa1111'; echo '1, GPU-bbbb2222' ;;\n"
                     << "  *) echo '" << ::getpid() << ", 500, GPU-aaaa1111'; echo '1, 1024, GPU-aaaa1111';"
                     << " echo '7, 2048, GPU-bbbb2222'; echo '[Not Supported]' ;;\nesac\n";
  fs::permissions(smi, fs::perms::owner_all);
  const auto s = autotune::take_gpu_snapshot(smi.string());
  ASSERT_TRUE(s);
  const auto all = autotune::foreign_gpu_use(*s, "");
  EXPECT_EQ(all.processes, 2);  // not ours (this test's pid)
  EXPECT_DOUBLE_EQ(all.bytes, 3072.0 * 1024 * 1024);
  const auto first = autotune::foreign_gpu_use(*s, "0");
  EXPECT_EQ(first.processes, 1);
  EXPECT_DOUBLE_EQ(first.bytes, 1024.0 * 1024 * 1024);
  EXPECT_EQ(autotune::foreign_gpu_use(*s, "GPU-bbbb").processes, 1);  // a UUID prefix, as CUDA takes it
  EXPECT_DOUBLE_EQ(autotune::foreign_gpu_use(*s, "1").bytes, 2048.0 * 1024 * 1024);
  EXPECT_FALSE(autotune::take_gpu_snapshot((dir / "missing").string()));
  fs::remove_all(dir);
}

}  // namespace
