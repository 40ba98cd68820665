// The trial executors under fault injection: in-process workloads that hang,
// crash, throw or allocate, run through the process executor (a forked child
// per trial), and command trials through both executors.
#include "tuner/run/runner.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/support/proc_util.hpp"
#include "tuner/run/scheduler.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

using testing::ScratchDir;

// A workload whose measure() is a test's lambda.
class LambdaWorkload : public Workload {
 public:
  explicit LambdaWorkload(std::function<Outcome(const TrialContext&)> f) : m_f(std::move(f)) {}
  std::string_view kind() const override { return "lambda"; }
  Outcome measure(const Assignment&, const TrialContext& ctx) override { return m_f(ctx); }

 private:
  std::function<Outcome(const TrialContext&)> m_f;
};

// One trial as the tuner measures it: a runner's measurements, with the
// scheduler's repeats and limits around them, on one local slot.
class OneTrial {
 public:
  OneTrial(std::unique_ptr<TrialRunner> runner, int repeats) : m_runner(std::move(runner)), m_repeats(repeats) {}
  Outcome run(const Assignment& a, const TrialContext& c) {
    auto pool = make_local_executor([this](const Assignment& x, const TrialContext& y) { return m_runner->once(x, y); });
    TrialSettings s;
    s.repeats = m_repeats;
    s.limits = c.limits;
    Scheduler scheduler(*pool, s);
    scheduler.submit(c.trial, a, c);
    return scheduler.wait_next().outcome;
  }

 private:
  std::unique_ptr<TrialRunner> m_runner;
  int m_repeats;
};
std::unique_ptr<OneTrial> make_process_executor(Workload& w, int repeats, double grace = 5.0) {
  return std::make_unique<OneTrial>(make_process_runner(w, grace), repeats);
}
std::unique_ptr<OneTrial> make_inline_executor(Workload& w, int repeats) {
  return std::make_unique<OneTrial>(make_inline_runner(w), repeats);
}

Assignment cfg() { return Assignment({{"batch_size", Value{std::int64_t{64}}}}); }

TrialContext ctx_with(double timeout_s) {
  TrialContext c;
  c.trial = 1;
  c.timeout_s = timeout_s;
  return c;
}

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::unique_ptr<Workload> make_command(const std::string& command) {
  const WorkloadInfo info = command_workload_info();
  return info.make(Options::with_defaults(info.options, {{"command", command}}), WorkloadEnv{{"batch_size"}, "/"});
}

TEST(ProcessExecutor, ReturnsTheChildsOutcome) {
  LambdaWorkload w([](const TrialContext& c) {
    Outcome o = Outcome::success(100 + static_cast<double>(c.trial));
    o.set(metric::vram_bytes, 123);
    o.labels["node"] = "here";
    return o;
  });
  auto exec = make_process_executor(w, 1);
  Outcome o = exec->run(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 101);
  EXPECT_DOUBLE_EQ(o.get(metric::vram_bytes).value_or(0), 123);
  EXPECT_EQ(o.labels["node"], "here");
  EXPECT_GT(o.get(metric::ram_bytes).value_or(0), 0);
  EXPECT_GT(o.seconds, 0);
}

TEST(ProcessExecutor, ChildStateDoesNotLeakIntoTheTuner) {
  int counter = 0;
  LambdaWorkload w([&](const TrialContext&) { return Outcome::success(++counter); });
  auto exec = make_process_executor(w, 1);
  EXPECT_DOUBLE_EQ(exec->run(cfg(), ctx_with(5)).throughput, 1);
  EXPECT_DOUBLE_EQ(exec->run(cfg(), ctx_with(5)).throughput, 1);
  EXPECT_EQ(counter, 0);
}

TEST(ProcessExecutor, HangIsTimeoutAndSigtermIgnorerIsKilled) {
  LambdaWorkload w([](const TrialContext&) {
    ::signal(SIGTERM, SIG_IGN);  // a trial that will not stop politely
    ::sleep(1000);
    return Outcome::success(1);
  });
  auto exec = make_process_executor(w, 1, /*term_grace_s=*/0.5);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = exec->run(cfg(), ctx_with(1));
  EXPECT_EQ(o.status, Status::timeout) << o.reason;
  EXPECT_NE(o.reason.find("killed after the grace"), std::string::npos) << o.reason;
  EXPECT_LT(secs_since(t0), 1 + 0.5 + 1.0);
}

TEST(ProcessExecutor, SegfaultIsCrashAndTheTunerSurvives) {
  LambdaWorkload w([](const TrialContext&) {
    ::raise(SIGSEGV);
    return Outcome::success(1);
  });
  auto exec = make_process_executor(w, 1);
  Outcome o = exec->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::crash) << o.reason;
  EXPECT_NE(o.reason.find("SEGV"), std::string::npos) << o.reason;
}

TEST(ProcessExecutor, SigkillIsHostOom) {
  LambdaWorkload w([](const TrialContext&) {
    ::raise(SIGKILL);
    return Outcome::success(1);
  });
  EXPECT_EQ(make_process_executor(w, 1)->run(cfg(), ctx_with(5)).status, Status::host_oom);
}

TEST(ProcessExecutor, ThrowIsErrorAndExitWithoutOutcomeIsErrorWithTail) {
  LambdaWorkload thrower([](const TrialContext&) -> Outcome { throw std::runtime_error("bug in workload"); });
  Outcome o = make_process_executor(thrower, 1)->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("bug in workload"), std::string::npos) << o.reason;

  LambdaWorkload quitter([](const TrialContext&) -> Outcome {
    std::fprintf(stderr, "giving up early\n");
    std::fflush(stderr);
    ::_exit(0);
  });
  o = make_process_executor(quitter, 1)->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("giving up early"), std::string::npos) << o.reason;
}

TEST(ProcessExecutor, MeasuresRamAndEnforcesTheLimit) {
  LambdaWorkload w([](const TrialContext&) {
    std::vector<char> block(200u << 20);
    std::memset(block.data(), 1, block.size());  // touched: resident
    ::usleep(200000);
    return Outcome::success(block[12345]);
  });
  auto exec = make_process_executor(w, 1);
  Outcome o = exec->run(cfg(), ctx_with(10));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_GE(o.get(metric::ram_bytes).value_or(0), 150e6);

  TrialContext limited = ctx_with(10);
  limited.limits.ram_bytes = 100e6;
  o = exec->run(cfg(), limited);
  EXPECT_EQ(o.status, Status::invalid);
  EXPECT_NE(o.reason.find("host memory"), std::string::npos) << o.reason;
}

TEST(ProcessExecutor, RepeatsKeepTheMedian) {
  // Throughput from the per-repeat seed: 3 distinct values, median known.
  LambdaWorkload w([](const TrialContext& c) {
    static const double kValues[] = {10, 30, 20};
    std::size_t r = 0;
    while (r < 3 && c.seed != r * 0x9E3779B97F4A7C15ull) ++r;  // the executor's per-repeat seed
    Outcome o = Outcome::success(r < 3 ? kValues[r] : -1);
    o.metrics["tag"] = o.throughput;
    return o;
  });
  auto exec = make_process_executor(w, 3);
  TrialContext c = ctx_with(5);
  c.seed = 0;
  Outcome o = exec->run(cfg(), c);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 20);
  EXPECT_DOUBLE_EQ(o.metric("tag").value_or(0), 20) << "metrics of the median run";
  EXPECT_NEAR(o.get(metric::throughput_rsd).value_or(0), 10.0 / 20.0, 1e-9);
}

TEST(ProcessExecutor, FirstFailingRepeatEndsTheRepeats) {
  ScratchDir dir;
  auto count = (dir.path() / "count").string();
  auto w = make_command("echo x >> " + count + "; n=$(wc -l < " + count +
                        "); if [ $n -ge 2 ]; then exit 4; fi; echo '{\"throughput\": 9}'");
  Outcome o = make_process_executor(*w, 5)->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("repeat 2 of 5"), std::string::npos) << o.reason;
  EXPECT_EQ(dir.read("count"), "x\nx\n");
}

TEST(ProcessExecutor, CommandTimeoutKillsTheWholeGroup) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("trap '' TERM; sleep 1000 & echo $! > " + pidfile + "; wait; wait; wait");
  auto exec = make_process_executor(*w, 1, 0.5);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = exec->run(cfg(), ctx_with(1));
  EXPECT_EQ(o.status, Status::timeout) << o.reason;
  EXPECT_LT(secs_since(t0), 1 + 0.5 + 1.0);
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0));
}

TEST(ProcessExecutor, CommandGrandchildIsKilledAndTheTrialReturnsPromptly) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("(sleep 1000 & echo $! > " + pidfile + ") ; echo '{\"throughput\": 5}'");
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = make_process_executor(*w, 1)->run(cfg(), ctx_with(30));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_LT(secs_since(t0), 3.0);
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0));
}

TEST(ProcessExecutor, CommandRamLimitIsInvalid) {
  ScratchDir dir;
  dir.write("alloc.py", "import time\nb = bytearray(200 * 1024 * 1024)\ntime.sleep(0.5)\nprint('{\"throughput\": 1}')\n");
  auto w = make_command("python3 " + (dir.path() / "alloc.py").string());
  TrialContext c = ctx_with(10);
  c.limits.ram_bytes = 100e6;
  Outcome o = make_process_executor(*w, 1)->run(cfg(), c);
  EXPECT_EQ(o.status, Status::invalid) << o.reason;
  EXPECT_GE(o.get(metric::ram_bytes).value_or(0), 150e6);
}

TEST(ProcessExecutor, SlotEnvironmentAndLogs) {
  ScratchDir dir;
  auto w = make_command("echo \"gpu=$CUDA_VISIBLE_DEVICES\" >&2; echo '{\"throughput\": 1}'");
  TrialContext c = ctx_with(5);
  c.env["CUDA_VISIBLE_DEVICES"] = "3";
  c.log_dir = dir.path() / "t1";
  Outcome o = make_process_executor(*w, 1)->run(cfg(), c);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(dir.read("t1/stderr.txt"), "gpu=3\n");
}

TEST(ProcessExecutor, ParallelCallsAreIndependent) {
  auto w = make_command("sleep 0.3; echo \"{\\\"throughput\\\": $AUTOTUNE_BATCH_SIZE}\"");
  auto exec = make_process_executor(*w, 1);
  std::vector<Outcome> outs(4);
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      outs[static_cast<std::size_t>(i)] = exec->run(Assignment({{"batch_size", Value{std::int64_t{i + 1}}}}), ctx_with(5));
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(outs[static_cast<std::size_t>(i)].status, Status::ok) << outs[static_cast<std::size_t>(i)].reason;
    EXPECT_DOUBLE_EQ(outs[static_cast<std::size_t>(i)].throughput, i + 1);
  }
  EXPECT_LT(secs_since(t0), 2.5) << "trials in flight must not wait for each other's pipes";
}

TEST(InlineExecutor, MeasuresInProcessAndCatchesThrows) {
  int counter = 0;
  LambdaWorkload w([&](const TrialContext&) -> Outcome {
    if (++counter == 2) throw std::runtime_error("second call fails");
    return Outcome::success(counter);
  });
  auto exec = make_inline_executor(w, 1);
  EXPECT_DOUBLE_EQ(exec->run(cfg(), ctx_with(5)).throughput, 1);
  Outcome o = exec->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("second call fails"), std::string::npos);
  EXPECT_EQ(counter, 2);
}

TEST(InlineExecutor, CommandTrialStillIsolated) {
  auto w = make_command("kill -SEGV $$");
  Outcome o = make_inline_executor(*w, 1)->run(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::crash) << o.reason;
}

TEST(InlineExecutor, RepeatsWithRsd) {
  int n = 0;
  LambdaWorkload w([&](const TrialContext&) { return Outcome::success(++n * 10.0); });  // 10, 20, 30, 40
  Outcome o = make_inline_executor(w, 4)->run(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok);
  EXPECT_DOUBLE_EQ(o.throughput, 25);
  EXPECT_EQ(o.get(metric::repeats).value_or(0), 4);
  EXPECT_GT(o.get(metric::throughput_rsd).value_or(0), 0.4);
}

}  // namespace
}  // namespace autotune
