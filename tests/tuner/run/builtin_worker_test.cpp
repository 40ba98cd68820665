// The built-in harness in a warm worker (tuner/run/builtin_worker.hpp), through
// the autotune binary as a user runs it: the cpu workload's trials share one
// `autotune __worker` process per slot, and a failed trial gets a new one.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_dir.hpp"
#include "tests/support/journal_records.hpp"
#include "tests/support/shell.hpp"

namespace {

namespace fs = std::filesystem;

class BuiltinWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = autotune::testing::fresh_test_dir("builtin");
  }
  void TearDown() override { fs::remove_all(m_dir); }

  // A grid over `batches` on a small cpu pipeline, one trial each, in order.
  autotune::testing::ShellRun tune(const std::string& batches, const std::string& workload_extra,
                                   const std::string& timeout = "60s") {
    std::ofstream(m_dir / "space.yaml")
        << "workload: {kind: cpu, timeout: " << timeout
        << ", sample_bytes: 1KiB, dataset_samples: 256, width: 32, depth: 1, warmup_seconds: 0.2s, "
           "window_seconds: 0.1s, max_seconds: 1s"
        << workload_extra << "}\n"
        << "space:\n  batch_size: {values: [" << batches << "]}\n  num_workers: {values: [0]}\n"
        << "search: {strategy: grid, explain: false}\n";
    return autotune::testing::run_shell("cd " + m_dir.string() + " && " + AUTOTUNE_BINARY +
                                        " space.yaml --fresh 2>&1");
  }
  std::vector<nlohmann::json> finished() { return autotune::testing::finish_records(m_dir / "tuned.journal.jsonl"); }
  int workers_started() {
    return YAML::LoadFile((m_dir / "tuned.yaml").string())["search"]["time"]["workers_started"].as<int>(0);
  }
  fs::path m_dir;
};

TEST_F(BuiltinWorker, CpuTrialsShareOneWorkerThatStartsOnce) {
  const auto r = tune("8, 16, 32, 64", "");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 4u) << r.out;
  for (const auto& t : f) EXPECT_EQ(t["status"], "ok") << t;
  EXPECT_EQ(f[0]["metrics"]["worker_started"], 1) << f[0];
  for (std::size_t i = 1; i < f.size(); ++i) EXPECT_FALSE(f[i]["metrics"].contains("worker_started")) << f[i];
  EXPECT_EQ(workers_started(), 1);
  // and drift control's re-measurements, which come and go with the machine's load
  const auto all = autotune::testing::finish_records(m_dir / "tuned.journal.jsonl", /*with_controls=*/true).size();
  EXPECT_NE(r.out.find("1 warm worker for " + std::to_string(all) + " trials"), std::string::npos) << r.out;
}

TEST_F(BuiltinWorker, WarmFalseForksAFreshProcessPerTrial) {
  const auto r = tune("8, 16", ", warm: false");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 2u) << r.out;
  for (const auto& t : f) {
    EXPECT_EQ(t["status"], "ok") << t;
    EXPECT_FALSE(t["metrics"].contains("worker_started")) << t;
  }
  EXPECT_EQ(r.out.find("warm worker"), std::string::npos) << r.out;
}

// A trial that outlives its timeout (a batch whose preprocessing takes far
// longer than 3 s) is a timeout, its worker is killed with it, and the next
// trial starts a new one.
TEST_F(BuiltinWorker, ATrialPastItsTimeoutIsKilledAndTheNextGetsANewWorker) {
  const auto r = tune("8, 65536, 16", ", preprocess_passes: 2000", "3s");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto f = finished();
  ASSERT_EQ(f.size(), 3u) << r.out;
  EXPECT_EQ(f[0]["status"], "ok") << f[0];
  EXPECT_EQ(f[0]["metrics"]["worker_started"], 1) << f[0];
  EXPECT_EQ(f[1]["status"], "timeout") << f[1];
  EXPECT_EQ(f[2]["status"], "ok") << f[2];
  EXPECT_EQ(f[2]["metrics"]["worker_started"], 1) << "a new worker after the timeout: " << f[2];
  EXPECT_EQ(workers_started(), 2);
}

}  // namespace
