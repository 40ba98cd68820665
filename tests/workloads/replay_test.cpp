#include "workloads/replay.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>

#include "workloads/workloads.hpp"

namespace autotune {
namespace {

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = std::filesystem::temp_directory_path() / ("autotune_replay_" + std::to_string(::getpid()));
    std::filesystem::create_directories(m_dir);
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    auto p = m_dir / name;
    std::ofstream(p) << text;
    return p;
  }
  static Assignment a(std::int64_t bs, bool pin) {
    return Assignment({{"batch_size", Value{bs}}, {"pin_memory", Value{pin}}});
  }
  std::filesystem::path m_dir;
};

TEST_F(ReplayTest, LooksUpRowsRepeatsStatusesAndMetrics) {
  auto f = write("t.csv",
                 "batch_size,pin_memory,status,throughput,vram_bytes\n"
                 "32,false,ok,100,1000\n"
                 "32,true,ok,120,1000\n"
                 "32,true,ok,130,1000\n"
                 "\n"
                 "64,True,oom,,\n");
  ReplayTable t(f, {"batch_size", "pin_memory"});
  EXPECT_EQ(t.size(), 3u);
  ASSERT_TRUE(t.find(a(32, true)));
  EXPECT_EQ(t.find(a(32, true))->size(), 2u);
  EXPECT_NEAR(t.mean(a(32, true))->throughput, std::sqrt(120.0 * 130.0), 1e-9);
  EXPECT_EQ(t.mean(a(32, false))->get(metric::vram_bytes).value(), 1000);
  EXPECT_EQ(t.mean(a(64, true))->status, Status::oom);
  EXPECT_FALSE(t.find(a(128, true)));

  auto info = replay_workload_info();
  WorkloadEnv env{{"batch_size", "pin_memory"}, m_dir};
  auto w = info.make(Options::with_defaults(info.options, {{"file", OptionValue{f.string()}}}), env);
  std::set<double> seen;
  for (std::uint64_t s = 0; s < 40; ++s) {
    TrialContext ctx;
    ctx.seed = s;
    seen.insert(w->measure(a(32, true), ctx).throughput);
  }
  EXPECT_EQ(seen, (std::set<double>{120, 130}));  // repeats replayed by seed
  Outcome missing = w->measure(a(256, false), {});
  EXPECT_EQ(missing.status, Status::error);
  EXPECT_NE(missing.reason.find("not in the replay table"), std::string::npos);
}

TEST_F(ReplayTest, ErrorsNameTheFileAndLine) {
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    auto f = write("bad.csv", text);
    try {
      ReplayTable t(f, {"batch_size", "pin_memory"});
      ADD_FAILURE() << "no error for: " << text;
    } catch (const WorkloadConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("batch_size,throughput\n32,1\n", "bad.csv:1: no column 'pin_memory'");
  expect_error("batch_size,pin_memory,status,throughput\n32,false,ok,1\n64,false,exploded,\n",
               "bad.csv:3: unknown status 'exploded'");
  expect_error("batch_size,pin_memory,throughput\n32,false,fast\n", "bad.csv:2: expected a positive number");
  expect_error("batch_size,pin_memory,throughput\n32,false\n", "bad.csv:2: 2 fields, the header has 3");
  expect_error("batch_size,pin_memory,throughput\n32,\"false,1\n", "bad.csv:");
  expect_error("", "bad.csv:1: the file has no header row");
  try {
    ReplayTable t(m_dir / "absent.csv", {"batch_size"});
    ADD_FAILURE();
  } catch (const WorkloadConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

// The stop on the spread's fewest_windows reaches the measurement the
// virtual clock makes (as it reaches the cpu and cuda harnesses' through the
// same options): a steady level settles at 3 windows, or at 5 with 5.
TEST_F(ReplayTest, FewestWindowsReachesTheSimulatedMeasurement) {
  auto f = write("steady.csv",
                 "batch_size,pin_memory,status,throughput,throughput_rsd\n"
                 "32,true,ok,1000,0.001\n");
  auto info = replay_workload_info();
  WorkloadEnv env{{"batch_size", "pin_memory"}, m_dir};
  auto windows = [&](std::int64_t fewest) {
    auto w = info.make(Options::with_defaults(info.options, {{"file", OptionValue{f.string()}},
                                                             {"simulated_time", OptionValue{true}},
                                                             {"fewest_windows", OptionValue{fewest}}}),
                       env);
    TrialContext ctx;
    ctx.seed = 7;
    const Outcome o = w->measure(a(32, true), ctx);
    EXPECT_EQ(o.status, Status::ok) << o.reason;
    EXPECT_TRUE(o.has(metric::stopped_by_rsd));
    EXPECT_EQ(o.has(metric::settled_early), fewest < 5);
    return o.get(metric::windows).value_or(0);
  };
  EXPECT_EQ(windows(3), 3);
  EXPECT_EQ(windows(5), 5);
}

}  // namespace
}  // namespace autotune
