// Warm trials (`workload: {kind: command, warm: true}`) through the autotune
// binary, as a user runs them: a script that loops over
// autotune_trial.trials() pays its start-up once, and every trial is still
// isolated and measured on its own.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_dir.hpp"
#include "tests/support/journal_records.hpp"
#include "tests/support/shell.hpp"

namespace {

namespace fs = std::filesystem;

// The job: `startup` seconds of start-up (imports, a model), then one trial
// per trials() step, each a Meter over a loader paced at 4 ms a batch. Each
// trial writes the pid that ran it to pids/<trial>. `mode` makes a trial
// fail the way real ones do: SIGKILLed (the OOM killer), a CUDA
// out-of-memory, a hang; `mb` touches that much memory in the trial.
constexpr const char* kJob = R"PY(import os, sys, time
if os.environ.get("JOB_SILENT"):  # a script that measures nothing and prints nothing
    sys.exit(0)
import autotune_trial

time.sleep(float(os.environ.get("JOB_STARTUP", "0")))


def paced(every_s):
    # On a clock of deadlines: a late wake-up (a busy machine) is caught up
    # at the next batch, so the pace is 8 samples per every_s on average.
    due = time.monotonic()
    while True:
        due += every_s
        time.sleep(max(0.0, due - time.monotonic()))
        yield [0] * 8


def trial(p):
    with open(os.path.join("pids", os.environ["AUTOTUNE_TRIAL"]), "w") as f:
        f.write(str(os.getpid()))
    block = bytearray(p.mb << 20)
    block[::4096] = b"x" * len(block[::4096])
    if p.mode == "kill":
        os.kill(os.getpid(), 9)
    if p.mode == "hang":
        time.sleep(1000)
    with autotune_trial.Meter(p, warmup_s=0.2, max_s=1.0) as meter:
        if p.mode.startswith("oom"):
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        for _ in meter.batches(paced(0.004)):
            pass
    del block


if os.environ.get("JOB_NO_LOOP"):
    trial(autotune_trial.params(mode="ok", mb=1, batch_size=8))
else:
    for p in autotune_trial.trials(mode="ok", mb=1, batch_size=8):
        trial(p)
)PY";

class Warm : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = autotune::testing::fresh_test_dir("warm");
    fs::create_directories(m_dir / "pids");
    std::ofstream(m_dir / "job.py") << kJob;
  }
  void TearDown() override { fs::remove_all(m_dir); }

  // Tunes a grid over `modes` (one trial each, in order) with `mb` MiB each.
  autotune::testing::ShellRun tune(const std::string& modes, const std::string& mbs, const std::string& extra = "",
                                   const std::string& env = "", bool warm = true,
                                   const std::string& timeout = "20s") {
    std::ofstream(m_dir / "space.yaml")
        << "workload:\n  kind: command\n  command: \"python3 job.py\"\n  timeout: " << timeout << "\n  warm: "
        << (warm ? "true" : "false") << "\n  env: {" << env << "}\n" << extra
        << "space:\n  mode: {values: [" << modes << "]}\n  mb: {values: [" << mbs << "]}\n"
        << "search: {strategy: grid}\n";
    return autotune::testing::run_shell("cd " + m_dir.string() + " && " + AUTOTUNE_BINARY +
                                        " space.yaml --fresh 2>&1");
  }
  // The finish records, in order: (trial, status, metrics).
  std::vector<nlohmann::json> finished() { return autotune::testing::finish_records(m_dir / "tuned.journal.jsonl"); }
  std::string pid_of(int trial) {
    std::ifstream in(m_dir / "pids" / std::to_string(trial));
    std::string pid;
    in >> pid;
    return pid;
  }
  fs::path m_dir;
};

TEST_F(Warm, TrialsShareOneProcessThatPaysItsStartUpOnce) {
  const auto r = tune("ok", "1, 2, 3, 4", "", "JOB_STARTUP: '1.5'");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 4u) << r.out;
  for (const auto& t : f) EXPECT_EQ(t["status"], "ok") << t;
  std::set<std::string> pids;
  for (int i = 1; i <= 4; ++i) pids.insert(pid_of(i));
  EXPECT_EQ(pids.size(), 1u);
  EXPECT_GE(f[0]["metrics"]["startup_seconds"].get<double>(), 1.5);
  EXPECT_EQ(f[0]["metrics"]["worker_started"], 1);
  for (std::size_t i = 1; i < f.size(); ++i) {
    EXPECT_LT(f[i]["metrics"]["startup_seconds"].get<double>(), 0.5) << f[i];
    EXPECT_FALSE(f[i]["metrics"].contains("worker_started")) << f[i];
  }
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["time"]["workers_started"].as<int>(), 1);
  // and drift control's re-measurements, which come and go with the machine's load
  const auto all = autotune::testing::finish_records(m_dir / "tuned.journal.jsonl", /*with_controls=*/true).size();
  EXPECT_NE(r.out.find("1 warm worker for " + std::to_string(all) + " trials"), std::string::npos) << r.out;
  // Each trial's output is in its own log.
  EXPECT_TRUE(fs::exists(m_dir / "tuned.journal.trials" / "trial-3" / "stdout.txt"));
}

// The OOM killer's SIGKILL mid-trial reads as a cold trial's would, and the
// next trial gets a new worker; so does a CUDA out-of-memory, which the job
// survives: its worker is replaced all the same.
TEST_F(Warm, AFailedTrialGetsItsStatusAndTheNextOneANewWorker) {
  const auto r = tune("ok, kill, ok2, oom, ok3", "1");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 5u) << r.out;
  EXPECT_EQ(f[0]["status"], "ok");
  EXPECT_EQ(f[1]["status"], "host_oom") << f[1];
  EXPECT_EQ(f[2]["status"], "ok") << f[2];
  EXPECT_EQ(f[3]["status"], "oom") << f[3];
  EXPECT_EQ(f[4]["status"], "ok") << f[4];
  EXPECT_EQ(pid_of(1), pid_of(2)) << "the kill came in the first worker";
  EXPECT_NE(pid_of(3), pid_of(2));
  EXPECT_EQ(pid_of(4), pid_of(3));
  EXPECT_NE(pid_of(5), pid_of(4));
  EXPECT_EQ(YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["time"]["workers_started"].as<int>(), 3);
}

TEST_F(Warm, AWorkerThatHangsIsKilledAtTheTimeout) {
  const auto r = tune("ok, hang, ok2", "1", "", "", true, "4s");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 3u) << r.out;
  EXPECT_EQ(f[1]["status"], "timeout") << f[1];
  EXPECT_EQ(f[2]["status"], "ok") << f[2];
  EXPECT_NE(pid_of(3), pid_of(2));
}

// A trial's host-memory peak is its own: a small trial after a big one in
// the same process does not read as the big one.
TEST_F(Warm, TheMemoryPeakOfASmallTrialAfterABigOneIsTheSmallOnes) {
  const auto r = tune("ok", "300, 8");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 2u) << r.out;
  EXPECT_EQ(pid_of(1), pid_of(2));
  const double big = f[0]["metrics"]["ram_bytes"].get<double>(), small = f[1]["metrics"]["ram_bytes"].get<double>();
  EXPECT_GT(big, 300.0 * (1 << 20));
  EXPECT_LT(small, 150.0 * (1 << 20)) << "big " << big << ", small " << small;
}

// A script that never enters trials() still works under warm: true, cold,
// and autotune says so once.
TEST_F(Warm, AScriptWithoutTheLoopRunsColdAndIsToldSo) {
  const auto r = tune("ok", "1, 2, 3", "", "JOB_NO_LOOP: '1'");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 3u) << r.out;
  for (const auto& t : f) EXPECT_EQ(t["status"], "ok") << t;
  EXPECT_EQ(std::set<std::string>({pid_of(1), pid_of(2), pid_of(3)}).size(), 3u);
  const std::string said = "never entered autotune_trial.trials()";
  const auto first = r.out.find(said);
  EXPECT_NE(first, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(said, first + 1), std::string::npos) << "once: " << r.out;
}

// A script that never enters trials() and writes no result: every trial an
// `error`, and autotune says once that the script ran cold. One that fails
// inside trials() (a CUDA out-of-memory) is not told so.
TEST_F(Warm, AScriptWithoutTheLoopThatPrintsNothingIsToldSoOnce) {
  const std::string said = "autotune: warm: true, but the script never entered autotune_trial.trials()";
  const auto r = tune("ok", "1, 2, 3", "", "JOB_SILENT: '1'");
  EXPECT_EQ(r.status, 1) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 3u) << r.out;
  for (const auto& t : f) EXPECT_EQ(t["status"], "error") << t;
  const auto first = r.out.find(said);
  EXPECT_NE(first, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(said, first + 1), std::string::npos) << "once: " << r.out;

  const auto in_loop = tune("oom, oom2", "1");
  ASSERT_EQ(finished().size(), 2u) << in_loop.out;
  for (const auto& t : finished()) EXPECT_EQ(t["status"], "oom") << t;
  EXPECT_EQ(in_loop.out.find(said), std::string::npos) << in_loop.out;
}

// The same configuration measured cold and warm reads the same: interleaved
// runs of 3 trials each, medians within 3% (the job is paced on a clock of
// deadlines: its figure is 8 samples / 4 ms whatever else the machine does,
// as long as a wake-up is late by less than a batch on average; paced by
// plain sleeps it read 3.5% apart once under the full suite, as each late
// wake-up added to the period). Seen since: 1.0000 twice with a busy-loop
// process on one core.
TEST_F(Warm, ColdAndWarmMeasureTheSameThroughput) {
  std::vector<double> cold, warm;
  for (int round = 0; round < 3; ++round)
    for (bool w : {round % 2 == 0, round % 2 != 0}) {
      const auto r = tune("ok", "1, 2, 3", "", "", w);
      ASSERT_EQ(r.status, 0) << r.out;
      for (const auto& t : finished()) (w ? warm : cold).push_back(t["throughput"].get<double>());
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  ASSERT_EQ(cold.size(), 9u);
  ASSERT_EQ(warm.size(), 9u);
  std::cout << "warm / cold medians: " << median(warm) / median(cold) << "\n";
  EXPECT_NEAR(median(warm) / median(cold), 1.0, 0.03) << "warm " << median(warm) << ", cold " << median(cold);
}

}  // namespace
