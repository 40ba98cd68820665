// The command workload under fault injection: small scripts that hang,
// crash, run out of memory, print garbage or leave a grandchild behind.
// Every trial goes through CommandWorkload::measure(), which runs the script
// as its own process group (the same code as the process executor).
#include "workloads/command.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>

#include "tests/support/proc_util.hpp"
#include "workloads/subprocess.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

using testing::ScratchDir;

const std::vector<std::string> kParams = {"batch_size", "num_workers", "precision", "pin_memory"};

Assignment cfg(std::int64_t bs = 64) {
  return Assignment({{"batch_size", Value{bs}},
                     {"num_workers", Value{std::int64_t{4}}},
                     {"precision", Value{std::string("bf16")}},
                     {"pin_memory", Value{true}}});
}

std::unique_ptr<Workload> make_command(const std::string& command,
                                       std::map<std::string, OptionValue> extra = {}) {
  const WorkloadInfo info = command_workload_info();
  extra["command"] = command;
  return info.make(Options::with_defaults(info.options, extra), WorkloadEnv{kParams, "/"});
}

TrialContext ctx_with(double timeout_s, int trial = 1) {
  TrialContext c;
  c.trial = trial;
  c.timeout_s = timeout_s;
  return c;
}

double secs_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(CommandWorkload, IsRegistered) {
  const WorkloadInfo* info = find_workload("command");
  ASSERT_NE(info, nullptr);
  const auto cmd = std::find_if(info->options.begin(), info->options.end(),
                                [](const OptionSpec& o) { return o.key == "command"; });
  ASSERT_NE(cmd, info->options.end());
  EXPECT_FALSE(cmd->default_value) << "`command` is required";
}

TEST(CommandWorkload, OkFromLastStdoutLine) {
  auto w = make_command(R"(echo '{"throughput": 123.5, "vram_bytes": 1000}')");
  Outcome o = w->measure(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 123.5);
  EXPECT_DOUBLE_EQ(o.metric("vram_bytes").value_or(0), 1000);
  EXPECT_GT(o.metric("ram_bytes").value_or(0), 0) << "the runner measures RAM when the script does not";
  EXPECT_GT(o.seconds, 0);
}

TEST(CommandWorkload, UsesLastJsonObjectLineDespiteTrailingText) {
  auto w = make_command(R"(echo '{"throughput": 1}'; echo '{"throughput": 2, "loss": 0.5}'; echo 'done, bye')");
  Outcome o = w->measure(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 2);
  EXPECT_DOUBLE_EQ(o.metric("loss").value_or(-1), 0.5);
}

TEST(CommandWorkload, ResultFileWinsOverStdout) {
  ScratchDir dir;
  dir.write("t.sh",
            "#!/bin/sh\necho '{\"throughput\": 1}'\n"
            "printf '{\"throughput\": 42, \"ram_bytes\": 7, \"gpu_busy\": 0.9}' > \"$AUTOTUNE_RESULT\"\n");
  auto w = make_command("sh " + (dir.path() / "t.sh").string());
  Outcome o = w->measure(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 42);
  EXPECT_DOUBLE_EQ(o.metric("ram_bytes").value_or(0), 7) << "reported RAM is kept, not overwritten";
  EXPECT_DOUBLE_EQ(o.metric("gpu_busy").value_or(0), 0.9);
}

TEST(CommandWorkload, ResultFileKeptInLogDir) {
  ScratchDir dir;
  auto w = make_command(R"(echo hello; echo oops >&2; printf '{"throughput": 3}' > "$AUTOTUNE_RESULT")");
  TrialContext c = ctx_with(5);
  c.log_dir = dir.path() / "trial-1";
  Outcome o = w->measure(cfg(), c);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(dir.read("trial-1/stdout.txt"), "hello\n");
  EXPECT_EQ(dir.read("trial-1/stderr.txt"), "oops\n");
  EXPECT_EQ(dir.read("trial-1/result.json"), R"({"throughput": 3})");
}

TEST(CommandWorkload, PlaceholdersAndEnvironment) {
  ScratchDir dir;
  auto out = (dir.path() / "seen.txt").string();
  auto w = make_command(
      "echo \"{batch_size} {precision} {pin_memory} {{x}} $AUTOTUNE_BATCH_SIZE $AUTOTUNE_NUM_WORKERS "
      "$AUTOTUNE_PRECISION $AUTOTUNE_PIN_MEMORY $AUTOTUNE_TRIAL $MY_VAR ${{MY_VAR}} $(pwd)\" > " + out +
          "; test -n \"$AUTOTUNE_RESULT\" && echo '{\"throughput\": 1}'",
      {{"env", std::map<std::string, std::string>{{"MY_VAR", "mine"}}}, {"cwd", dir.path().string()}});
  Outcome o = w->measure(cfg(128), ctx_with(5, 17));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(dir.read("seen.txt"), "128 bf16 true {x} 128 4 bf16 true 17 mine mine " + dir.path().string() + "\n");
}

TEST(CommandWorkload, UnknownOrMalformedPlaceholderIsAConfigError) {
  EXPECT_THROW(make_command("train --bs {batch_sise}"), WorkloadConfigError);
  EXPECT_THROW(make_command("train --bs {batch_size"), WorkloadConfigError);
  EXPECT_THROW(make_command("train ${HOME}"), WorkloadConfigError);
  EXPECT_NO_THROW(make_command("train {{literal}} {batch_size} ${{HOME}}"));
  // Braces that do not open an identifier placeholder are literal.
  EXPECT_NO_THROW(make_command(R"(awk '{print $1}' x; find . -exec ls {} \; ; echo '{"a": 1}' })"));
  try {
    make_command("python3 t.py --bs {batch_sise}");
  } catch (const WorkloadConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_sise"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("column 19"), std::string::npos) << e.what();
  }
}

TEST(CommandWorkload, EnvNameUpperCases) {
  EXPECT_EQ(autotune_env_name("batch_size"), "AUTOTUNE_BATCH_SIZE");
  EXPECT_EQ(autotune_env_name("lr.warm-up"), "AUTOTUNE_LR_WARM_UP");
}

TEST(CommandWorkload, HangTimesOutWithinTimeoutPlusGrace) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("sleep 1000 & echo $! > " + pidfile + "; wait");
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = w->measure(cfg(), ctx_with(1));
  EXPECT_EQ(o.status, Status::timeout) << o.reason;
  EXPECT_LT(secs_since(t0), 3.0);
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0)) << "the group's sleep must be killed";
}

// A job that wrote its result and then hangs in its teardown (NCCL's
// destroy, a DataLoader worker that never joins, a logger's flush): stopped
// `exit_grace` after the result, its measurement kept, the group killed;
// through a compound shell line, as a launcher line would be.
TEST(CommandWorkload, AJobThatWroteItsResultButHangsIsStoppedAndItsResultKept) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("sleep 1000 & echo $! > " + pidfile +
                            "; printf '{\"throughput\": 42, \"gpu_busy\": 0.5}' > \"$AUTOTUNE_RESULT\"; wait",
                        {{"exit_grace", OptionValue{0.5}}});
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = w->measure(cfg(), ctx_with(30));
  const double took = secs_since(t0);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 42);
  EXPECT_DOUBLE_EQ(o.metric("gpu_busy").value_or(0), 0.5);
  EXPECT_EQ(o.metric("stopped_after_result").value_or(0), 1);
  EXPECT_GE(took, 0.5) << "it had its grace";
  EXPECT_LT(took, 5.0) << "not the 30 s timeout";
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0)) << "the group's sleep must be killed";
}

// With no grace (exit_grace: 0) the job may take up to its timeout; a
// timeout that finds the result written still keeps it.
TEST(CommandWorkload, ATimeoutAfterTheResultIsWrittenKeepsTheResult) {
  auto w = make_command("printf '{\"throughput\": 7}' > \"$AUTOTUNE_RESULT\"; exec sleep 1000",
                        {{"exit_grace", OptionValue{0.0}}});
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = w->measure(cfg(), ctx_with(1));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 7);
  EXPECT_EQ(o.metric("stopped_after_result").value_or(0), 1);
  EXPECT_GE(secs_since(t0), 1.0) << "no grace: the timeout stopped it";
}

// A job of one's own that prints its result line on standard output and
// then hangs in its teardown: the timeout stops it, and the line it printed
// is its result (through a compound shell line, with a child left in the
// group, as a launcher's would be). A line with neither a throughput nor a
// status is progress, not a result: that stays a timeout.
TEST(CommandWorkload, ATimeoutAfterTheResultLineIsPrintedKeepsTheResult) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("sleep 1000 & echo $! > " + pidfile +
                        "; echo 'loading'; echo '{\"throughput\": 11, \"gpu_busy\": 0.25}'; echo 'tearing down'; wait");
  Outcome o = w->measure(cfg(), ctx_with(1));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 11);
  EXPECT_DOUBLE_EQ(o.metric("gpu_busy").value_or(0), 0.25);
  EXPECT_EQ(o.metric("stopped_after_result").value_or(0), 1);
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0)) << "the group's sleep must be killed";

  auto progress = make_command("echo '{\"step\": 10, \"loss\": 2.5}'; exec sleep 1000");
  EXPECT_EQ(progress->measure(cfg(), ctx_with(1)).status, Status::timeout);
  auto reported = make_command("echo '{\"status\": \"oom\", \"reason\": \"CUDA out of memory\"}'; exec sleep 1000");
  EXPECT_EQ(reported->measure(cfg(), ctx_with(1)).status, Status::oom);
}

// A result file caught half-written (a script writing in place) is no
// result: the grace never starts and the timeout is a plain timeout.
TEST(CommandWorkload, AHalfWrittenResultFileIsNotTakenAsTheResult) {
  auto w = make_command("printf '{\"throughput\": ' > \"$AUTOTUNE_RESULT\"; exec sleep 1000",
                        {{"exit_grace", OptionValue{0.2}}});
  Outcome o = w->measure(cfg(), ctx_with(1));
  EXPECT_EQ(o.status, Status::timeout) << o.reason;
}

// A result that says the job failed stands just the same.
TEST(CommandWorkload, AReportedFailureThenAHangIsThatFailure) {
  auto w = make_command(
      "printf '{\"status\": \"oom\", \"reason\": \"CUDA out of memory\"}' > \"$AUTOTUNE_RESULT\"; exec sleep 1000",
      {{"exit_grace", OptionValue{0.3}}});
  Outcome o = w->measure(cfg(), ctx_with(30));
  EXPECT_EQ(o.status, Status::oom) << o.reason;
  EXPECT_EQ(o.reason, "CUDA out of memory");
}

TEST(CommandWorkload, SegfaultIsCrash) {
  auto w = make_command("kill -SEGV $$");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::crash) << o.reason;
  EXPECT_NE(o.reason.find("SEGV"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, ForeignSigkillIsHostOom) {
  auto w = make_command("kill -KILL $$");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
}

TEST(CommandWorkload, CudaOomMessageIsOom) {
  auto w = make_command(
      "echo 'Traceback (most recent call last):' >&2; echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to "
      "allocate 2.00 GiB' >&2; exit 1");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::oom) << o.reason;
  EXPECT_NE(o.reason.find("CUDA out of memory"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, ReportedStatusIsUsed) {
  auto w = make_command(R"(echo '{"status": "oom", "vram_bytes": 5e10, "reason": "too big"}'; exit 1)");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::oom) << o.reason;
  EXPECT_EQ(o.reason, "too big");
  EXPECT_DOUBLE_EQ(o.metric("vram_bytes").value_or(0), 5e10);
  auto bad = make_command(R"(echo '{"status": "melted"}')");
  EXPECT_EQ(bad->measure(cfg(), ctx_with(5)).status, Status::error);
}

TEST(CommandWorkload, GarbageIsErrorWithTail) {
  auto w = make_command("echo 'this is not json'; echo '{broken'; echo 'last words of the script'");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("last words of the script"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, LongGarbageTailIsTruncated) {
  auto w = make_command("i=0; while [ $i -lt 3000 ]; do echo \"line $i of noise\"; i=$((i+1)); done");
  Outcome o = w->measure(cfg(), ctx_with(10));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_LT(o.reason.size(), 4000u);
  EXPECT_NE(o.reason.find("line 2999 of noise"), std::string::npos);
}

TEST(CommandWorkload, ExitZeroWithoutResultIsError) {
  auto w = make_command("true");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("no JSON result"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, NonZeroExitIsErrorEvenWithResult) {
  auto w = make_command(R"(echo '{"throughput": 5}'; echo 'boom' >&2; exit 3)");
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("status 3"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("boom"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, MissingThroughputIsError) {
  auto w = make_command(R"(echo '{"samples": 5}')");
  EXPECT_EQ(w->measure(cfg(), ctx_with(5)).status, Status::error);
}

TEST(CommandWorkload, GrandchildHoldingStdoutDoesNotHang) {
  ScratchDir dir;
  auto pidfile = (dir.path() / "pid").string();
  auto w = make_command("(sleep 1000 & echo $! > " + pidfile + ") ; echo '{\"throughput\": 5}'");
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = w->measure(cfg(), ctx_with(30));
  const double took = secs_since(t0);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 5);
  EXPECT_LT(took, 3.0);
  EXPECT_TRUE(testing::gone_within(testing::read_pid(pidfile), 1.0)) << "the grandchild must be killed";
}

TEST(CommandWorkload, MeasuresRamOfThePythonScript) {
  ScratchDir dir;
  dir.write("alloc.py",
            "import time\nb = bytearray(200 * 1024 * 1024)\ntime.sleep(0.5)\nprint('{\"throughput\": 1}')\n");
  auto w = make_command("python3 " + (dir.path() / "alloc.py").string());
  Outcome o = w->measure(cfg(), ctx_with(10));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_GE(o.metric("ram_bytes").value_or(0), 150e6);
  EXPECT_LT(o.metric("ram_bytes").value_or(0), 1e9);
}

TEST(CommandWorkload, SpawnFailureIsError) {
  auto w = make_command("true", {{"shell", std::string("/no/such/shell")}});
  Outcome o = w->measure(cfg(), ctx_with(5));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("/no/such/shell"), std::string::npos) << o.reason;
}

TEST(CommandWorkload, TrialDiesWithAKilledTuner) {
  ScratchDir dir;
  auto pidfile = dir.path() / "pid";
  auto w = make_command("echo $$ > " + pidfile.string() + "; exec sleep 1000");
  const pid_t tuner = ::fork();  // stands in for a tuner that gets SIGKILLed mid-trial
  ASSERT_GE(tuner, 0);
  if (tuner == 0) {
    w->measure(cfg(), ctx_with(30));
    ::_exit(0);
  }
  long trial = -1;
  for (int i = 0; i < 300 && trial <= 0; ++i, ::usleep(10000)) trial = testing::read_pid(pidfile);
  ASSERT_GT(trial, 0);
  ::kill(tuner, SIGKILL);
  ::waitpid(tuner, nullptr, 0);
  EXPECT_TRUE(testing::gone_within(trial, 2.0)) << "an orphaned trial keeps running";
  if (testing::process_alive(trial)) ::kill(static_cast<pid_t>(trial), SIGKILL);
}

TEST(OomMessages, DeviceAndHostPatterns) {
  EXPECT_EQ(find_oom_message("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"), Status::oom);
  EXPECT_EQ(find_oom_message("RuntimeError: CUDA error: out of memory\nCUDA kernel errors"), Status::oom);
  EXPECT_EQ(find_oom_message("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"), Status::oom);
  EXPECT_EQ(find_oom_message("terminate called after throwing an instance of 'std::bad_alloc'"), Status::host_oom);
  EXPECT_EQ(find_oom_message("Traceback...\nMemoryError\n"), Status::host_oom);
  EXPECT_EQ(find_oom_message("MemoryError"), Status::host_oom);
  EXPECT_EQ(find_oom_message("loading 3 GB of memory into cache"), std::nullopt);
  EXPECT_EQ(find_oom_message(""), std::nullopt);
}

}  // namespace
}  // namespace autotune
