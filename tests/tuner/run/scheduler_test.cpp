// The scheduler over a local executor: one context and seed per trial,
// repeats and limits around the executor, placement by the slots, and
// stopping whatever runs.
#include "tuner/run/scheduler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <latch>
#include <mutex>
#include <set>

#include "core/metric_names.hpp"
#include "tests/support/proc_util.hpp"
#include "tuner/run/runner.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

Assignment cfg(std::int64_t bs) { return Assignment({{"batch_size", Value{bs}}}); }

TEST(Scheduler, OneContextPerTrialSeededByTheRunAndTheKey) {
  TrialSettings s;
  s.seed = 7;
  s.timeout_s = 12;
  s.log_root = "/tmp/run.trials";
  const TrialContext c = make_trial_context(s, 3, 3);
  EXPECT_EQ(c.trial, 3);
  EXPECT_EQ(c.seed, trial_seed(7, 3));
  EXPECT_NE(trial_seed(7, 3), trial_seed(8, 3));
  EXPECT_NE(trial_seed(7, 3), trial_seed(7, 4));
  EXPECT_DOUBLE_EQ(c.timeout_s, 12);
  EXPECT_EQ(c.log_dir, std::filesystem::path("/tmp/run.trials/trial-3"));
}

TEST(Scheduler, RepeatsRunAroundTheExecutorWithAFreshSeedEachAndTheMedianKept) {
  std::mutex mu;
  std::map<std::int64_t, std::set<std::uint64_t>> seeds;  // batch size -> seeds its repeats had
  auto pool = make_local_executor(
      [&](const Assignment& a, const TrialContext& c) {
        std::lock_guard<std::mutex> lock(mu);
        const auto bs = a.get_int("batch_size", 0);
        seeds[bs].insert(c.seed);
        return Outcome::success(static_cast<double>(bs * 10 + static_cast<std::int64_t>(seeds[bs].size())));
      },
      2);
  TrialSettings s;
  s.repeats = 3;
  Scheduler sch(*pool, s);
  sch.submit(1, cfg(1));
  sch.submit(2, cfg(2));
  EXPECT_FALSE(sch.has_room());
  std::map<int, Outcome> done;
  while (sch.in_flight() > 0) {
    auto d = sch.wait_next();
    done[d.trial] = d.outcome;
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_DOUBLE_EQ(done[1].throughput, 12) << "median of 11, 12, 13";
  EXPECT_DOUBLE_EQ(done[2].throughput, 22);
  EXPECT_EQ(done[1].get(metric::repeats).value_or(0), 3);
  EXPECT_EQ(seeds[1].size(), 3u) << "each repeat its own seed";
  EXPECT_EQ(done[1].labels.count("slot"), 1u) << "two slots: the slot is recorded";
}

TEST(Scheduler, LimitsAreAppliedOnceToTheTrialsOutcome) {
  auto pool = make_local_executor([](const Assignment&, const TrialContext&) {
    Outcome o = Outcome::success(5);
    o.set(metric::ram_bytes, 3e9);
    return o;
  });
  TrialSettings s;
  s.limits.ram_bytes = 2e9;
  Scheduler sch(*pool, s);
  sch.submit(1, cfg(1));
  const Outcome o = sch.wait_next().outcome;
  EXPECT_EQ(o.status, Status::invalid);
  EXPECT_NE(o.reason.find("host memory"), std::string::npos) << o.reason;
}

TEST(Scheduler, TheSlotsPlacementReachesTheTrialAndItsLabels) {
  const SlotPlan plan = plan_slots(2, {"3", "5"}, {0, 1}, true);
  std::latch both_running(2);  // a finished trial would free its slot for the next
  auto pool = make_local_executor(
      [&](const Assignment&, const TrialContext& c) {
        both_running.arrive_and_wait();
        Outcome o = Outcome::success(1);
        o.labels["seen"] = c.env.count("CUDA_VISIBLE_DEVICES") ? c.env.at("CUDA_VISIBLE_DEVICES") : "";
        return o;
      },
      plan);
  Scheduler sch(*pool, TrialSettings{});
  sch.submit(1, cfg(1));
  sch.submit(2, cfg(2));
  std::set<std::string> gpus;
  for (int i = 0; i < 2; ++i) {
    const Outcome o = sch.wait_next().outcome;
    EXPECT_EQ(o.labels.at("seen"), o.labels.at("gpus"));
    gpus.insert(o.labels.at("gpus"));
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"3", "5"}));
}

// Other processes on the trial's GPU, read through NVML (the stand-in
// tests/support/fake_nvml.cpp: pid 4242 with 1 GiB and 40% of device 0's SM
// time, and this test's own process, which is autotune's): per trial, on
// the trial's own device.
TEST(Scheduler, OtherProcessesOnTheTrialsGpuAndTheirShareOfItsTimeAreRecordedPerTrial) {
  ::setenv("AUTOTUNE_NVML_LIBRARY", AUTOTUNE_FAKE_NVML, 1);
  auto pool = make_local_executor([](const Assignment& a, const TrialContext&) {
    Outcome o = Outcome::success(1);
    o.labels["gpus"] = a.get_int("batch_size", 0) == 1 ? "0" : "1";  // as its slot would say
    return o;
  });
  TrialSettings s;
  s.watch_gpus = true;
  Scheduler sch(*pool, s);
  sch.submit(1, cfg(1));
  const Outcome on0 = sch.wait_next().outcome;
  sch.submit(2, cfg(2));
  const Outcome on1 = sch.wait_next().outcome;
  ::unsetenv("AUTOTUNE_NVML_LIBRARY");
  EXPECT_EQ(on0.get(metric::foreign_gpu_processes).value_or(-1), 1);
  EXPECT_DOUBLE_EQ(on0.get(metric::foreign_gpu_bytes).value_or(-1), 1024.0 * 1024 * 1024);
  EXPECT_NEAR(on0.get(metric::foreign_gpu_busy).value_or(-1), 0.40, 1e-9);
  EXPECT_EQ(on1.get(metric::foreign_gpu_processes).value_or(-1), 0);
  EXPECT_NEAR(on1.get(metric::foreign_gpu_busy).value_or(-1), 0.0, 1e-9);
}

// Without NVML the busy share is not made up: nvidia-smi, where it runs,
// lists the processes and their memory only.
TEST(Scheduler, WithoutNvmlNoTrialHasABusyShare) {
  ::setenv("AUTOTUNE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto pool = make_local_executor([](const Assignment&, const TrialContext&) { return Outcome::success(1); });
  TrialSettings s;
  s.watch_gpus = true;
  Scheduler sch(*pool, s);
  sch.submit(1, cfg(1));
  const Outcome o = sch.wait_next().outcome;
  ::unsetenv("AUTOTUNE_NVML_LIBRARY");
  EXPECT_TRUE(o.ok());
  EXPECT_FALSE(o.get(metric::foreign_gpu_busy));
}

TEST(Scheduler, StopAllStopsRunningTrialProcessesAndForgetsThem) {
  testing::ScratchDir dir;
  const WorkloadInfo info = command_workload_info();
  auto w = info.make(Options::with_defaults(info.options, {{"command", std::string("echo $$ >> " + (dir.path() / "pids").string() + "; exec sleep 300")}}),
                     WorkloadEnv{{"batch_size"}, "/"});
  std::shared_ptr<TrialRunner> runner = make_process_runner(*w, 0.5);
  auto pool = make_local_executor([runner](const Assignment& a, const TrialContext& c) { return runner->once(a, c); }, 2);
  TrialSettings s;
  s.timeout_s = 600;
  Scheduler sch(*pool, s);
  sch.submit(1, cfg(1));
  sch.submit(2, cfg(2));
  // Wait for both trials to be running.
  const auto t0 = std::chrono::steady_clock::now();
  auto started = [&] {
    std::ifstream in(dir.path() / "pids");
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  while (started() < 2 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(started(), 2);
  const auto stop0 = std::chrono::steady_clock::now();
  sch.stop_all();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - stop0).count(), 5.0);
  EXPECT_EQ(sch.in_flight(), 0);
  std::ifstream in(dir.path() / "pids");
  for (long pid; in >> pid;) EXPECT_TRUE(testing::gone_within(pid, 5.0)) << "trial " << pid << " left running";
  EXPECT_FALSE(sch.wait_any(std::chrono::milliseconds(50))) << "stopped trials report nothing";
}

}  // namespace
}  // namespace autotune
