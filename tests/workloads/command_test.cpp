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
  EXPECT_DOUBLE_EQ(o.get(metric::vram_bytes).value_or(0), 1000);
  EXPECT_GT(o.get(metric::ram_bytes).value_or(0), 0) << "the runner measures RAM when the script does not";
  EXPECT_GT(o.seconds, 0);
}

TEST(CommandWorkload, UsesLastJsonObjectLineDespiteTrailingText) {
  auto w = make_command(R"(echo '{"throughput": 1}'; echo '{"throughput": 2, "loss": 0.5}'; echo 'done, bye')");
  Outcome o = w->measure(cfg(), ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_DOUBLE_EQ(o.throughput, 2);
  EXPECT_DOUBLE_EQ(o.get(metric::loss).value_or(-1), 0.5);
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
  EXPECT_DOUBLE_EQ(o.get(metric::ram_bytes).value_or(0), 7) << "reported RAM is kept, not overwritten";
  EXPECT_DOUBLE_EQ(o.get(metric::gpu_busy).value_or(0), 0.9);
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

TEST(CommandWorkload, ThreadsReachTheJobAsOmpNumThreadsAsItStarts) {
  ScratchDir dir;
  auto out = (dir.path() / "seen.txt").string();
  // The knob's value wins over `env:` (it is what is being tuned).
  auto w = make_command("echo \"$AUTOTUNE_THREADS $OMP_NUM_THREADS\" > " + out + "; echo '{\"throughput\": 1}'",
                        {{"env", std::map<std::string, std::string>{{"OMP_NUM_THREADS", "8"}}}});
  Assignment a = cfg();
  a.set("threads", Value{std::int64_t{3}});
  Outcome o = w->measure(a, ctx_with(5));
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(dir.read("seen.txt"), "3 3\n");
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
  EXPECT_DOUBLE_EQ(o.get(metric::gpu_busy).value_or(0), 0.5);
  EXPECT_TRUE(o.has(metric::stopped_after_result));
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
  EXPECT_TRUE(o.has(metric::stopped_after_result));
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
  EXPECT_DOUBLE_EQ(o.get(metric::gpu_busy).value_or(0), 0.25);
  EXPECT_TRUE(o.has(metric::stopped_after_result));
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
  EXPECT_DOUBLE_EQ(o.get(metric::vram_bytes).value_or(0), 5e10);
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
  EXPECT_GE(o.get(metric::ram_bytes).value_or(0), 150e6);
  EXPECT_LT(o.get(metric::ram_bytes).value_or(0), 1e9);
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

// What the shell starts (a launcher's ranks, `cd x && python3 ...`) goes
// with a tuner killed by SIGKILL too, not only the shell: the watchdog
// kills the group. The tuner here is a fork of this test, which may have a
// watchdog of its own already: the fork must start its own.
TEST(CommandWorkload, AGrandchildDiesWithAKilledTuner) {
  ScratchDir dir;
  auto pidfile = dir.path() / "pid";
  auto warmup = make_command("echo '{\"throughput\": 1}'");
  ASSERT_EQ(warmup->measure(cfg(), ctx_with(10)).status, Status::ok);  // this process's watchdog, started
  auto w = make_command("sleep 1000 & echo $! > " + pidfile.string() + "; wait");
  const pid_t tuner = ::fork();
  ASSERT_GE(tuner, 0);
  if (tuner == 0) {
    w->measure(cfg(), ctx_with(30));
    ::_exit(0);
  }
  long trial = -1;
  for (int i = 0; i < 3000 && trial <= 0; ++i, ::usleep(10000)) trial = testing::read_pid(pidfile);
  ASSERT_GT(trial, 0);
  ::kill(tuner, SIGKILL);
  ::waitpid(tuner, nullptr, 0);
  EXPECT_TRUE(testing::gone_within(trial, 2.0)) << "the shell's child outlived the tuner";
  if (testing::process_alive(trial)) ::kill(static_cast<pid_t>(trial), SIGKILL);
}

// A knob value is one shell word wherever its placeholder stands: nothing
// in it runs, redirects, globs or splits (a categorical value is data).
TEST(CommandWorkload, APlaceholderIsOneShellWordWhateverItsValue) {
  ScratchDir dir;
  dir.write("argv.sh", "#!/bin/sh\nprintf '%s\\n' \"$#\" > \"$OUT\"; printf '%s' \"$1\" >> \"$OUT\"\n");
  dir.write("glob-me", "");
  const std::string evil = "; touch PWNED $(touch PWNED2) `touch PWNED3` > out * two words 'q' \"d\" \\ $HOME\nx";
  Assignment config({{"batch_size", Value{std::int64_t{1}}},
                     {"num_workers", Value{std::int64_t{0}}},
                     {"precision", Value{evil}},
                     {"pin_memory", Value{true}}});
  const std::string argv_sh = (dir.path() / "argv.sh").string();
  for (const std::string& where : {std::string("{precision}"), std::string("\"{precision}\""),
                                   std::string("'{precision}'"), std::string("--p={precision}")}) {
    const auto out = dir.path() / "argv.txt";
    std::filesystem::remove(out);
    auto w = make_command("sh " + argv_sh + " " + where + "; echo '{\"throughput\": 1}'",
                          {{"cwd", dir.path().string()},
                           {"env", std::map<std::string, std::string>{{"OUT", out.string()}}}});
    Outcome o = w->measure(config, ctx_with(10));
    ASSERT_EQ(o.status, Status::ok) << where << ": " << o.reason;
    EXPECT_EQ(dir.read("argv.txt"), "1\n" + std::string(where.rfind("--p=", 0) == 0 ? "--p=" : "") + evil) << where;
    for (const char* f : {"PWNED", "PWNED2", "PWNED3", "out"})
      EXPECT_FALSE(std::filesystem::exists(dir.path() / f)) << where << ": " << f;
  }
  // Plain values are left as they are; the rest single-quoted.
  EXPECT_EQ(shell_word("bf16"), "bf16");
  EXPECT_EQ(shell_word("/data/x.y:1,2@3%4+5-6"), "/data/x.y:1,2@3%4+5-6");
  EXPECT_EQ(shell_word(""), "''");
  EXPECT_EQ(shell_word("a'b"), "'a'\"'\"'b'");
  EXPECT_EQ(shell_word("~x"), "'~x'");
  EXPECT_EQ(shell_word("a=b"), "'a=b'");
}

// `raw: true` pastes the value as shell text, as a value meant to be one.
TEST(CommandWorkload, RawPlaceholdersAreShellText) {
  ScratchDir dir;
  dir.write("argv.sh", "#!/bin/sh\necho \"$#\" > argv.txt\n");
  Assignment config({{"batch_size", Value{std::int64_t{1}}},
                     {"num_workers", Value{std::int64_t{0}}},
                     {"precision", Value{std::string("two words")}},
                     {"pin_memory", Value{true}}});
  auto w = make_command("sh argv.sh {precision}; echo '{\"throughput\": 1}'",
                        {{"cwd", dir.path().string()}, {"raw", OptionValue{true}}});
  ASSERT_EQ(w->measure(config, ctx_with(10)).status, Status::ok);
  EXPECT_EQ(dir.read("argv.txt"), "2\n");
}

// AUTOTUNE_* variables exported in the user's shell do not reach a trial:
// it sees its own knobs, not a num_workers=8 left from an earlier run.
TEST(CommandWorkload, InheritedAutotuneVariablesDoNotReachATrial) {
  ScratchDir dir;
  ::setenv("AUTOTUNE_NUM_WORKERS", "8", 1);
  ::setenv("AUTOTUNE_STOP_BELOW", "1e9", 1);
  ::setenv("AUTOTUNE_BATCH_SIZE", "999", 1);
  const WorkloadInfo info = command_workload_info();
  const std::map<std::string, OptionValue> given = {
      {"command", std::string("env > env.txt; echo '{\"throughput\": 1}'")},
      {"cwd", dir.path().string()},
      {"env", std::map<std::string, std::string>{{"AUTOTUNE_MINE", "asked"}}}};
  auto w = info.make(Options::with_defaults(info.options, given), WorkloadEnv{{"batch_size"}, "/"});
  Outcome o = w->measure(Assignment({{"batch_size", Value{std::int64_t{64}}}}), ctx_with(10));
  ::unsetenv("AUTOTUNE_NUM_WORKERS");
  ::unsetenv("AUTOTUNE_STOP_BELOW");
  ::unsetenv("AUTOTUNE_BATCH_SIZE");
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  const std::string env = "\n" + dir.read("env.txt");
  EXPECT_EQ(env.find("AUTOTUNE_NUM_WORKERS"), std::string::npos) << env;
  EXPECT_EQ(env.find("AUTOTUNE_STOP_BELOW"), std::string::npos) << env;
  EXPECT_NE(env.find("\nAUTOTUNE_BATCH_SIZE=64\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nAUTOTUNE_TRIAL=1\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nAUTOTUNE_MINE=asked\n"), std::string::npos) << "the workload's own env: is asked for" << env;
}

// $AUTOTUNE_RESULT is read only as a regular file, and only so much of it:
// a link to another file copies nothing of it, a huge file is refused.
TEST(CommandWorkload, AResultFileThatIsNotARegularFileIsRefusedUnread) {
  auto link = make_command("ln -sf /etc/passwd \"$AUTOTUNE_RESULT\"; echo '{\"throughput\": 1}'");
  Outcome o = link->measure(cfg(), ctx_with(10));
  EXPECT_EQ(o.status, Status::error) << o.reason;
  EXPECT_NE(o.reason.find("symbolic link"), std::string::npos) << o.reason;
  EXPECT_EQ(o.reason.find("root:"), std::string::npos) << o.reason;
  EXPECT_EQ(o.throughput, 0);

  auto big = make_command("head -c 2000000 /dev/zero | tr '\\0' ' ' > \"$AUTOTUNE_RESULT\"; "
                          "printf '{\"throughput\": 1}' >> \"$AUTOTUNE_RESULT\"");
  o = big->measure(cfg(), ctx_with(10));
  EXPECT_EQ(o.status, Status::error) << o.reason;
  EXPECT_NE(o.reason.find("over 1 MiB"), std::string::npos) << o.reason;

  auto dir = make_command("mkdir \"$AUTOTUNE_RESULT\"; echo '{\"throughput\": 1}'");
  o = dir->measure(cfg(), ctx_with(10));
  EXPECT_EQ(o.status, Status::error) << o.reason;
  EXPECT_NE(o.reason.find("a folder"), std::string::npos) << o.reason;
}

// The trial's log folder holds its result file, so the job can write
// there: a link or a FIFO it leaves at a log's name is replaced, never
// written through or waited on.
TEST(CommandWorkload, TheLogsAreWrittenOverWhatTheJobLeftAtTheirNames) {
  ScratchDir dir;
  dir.write("victim.txt", "keep me\n", false);
  auto w = make_command("d=$(dirname \"$AUTOTUNE_RESULT\"); ln -sf " + (dir.path() / "victim.txt").string() +
                        " \"$d/stdout.txt\"; mkfifo \"$d/stderr.txt\"; echo '{\"throughput\": 1}'");
  TrialContext c = ctx_with(10);
  c.log_dir = dir.path() / "trial-1";
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = w->measure(cfg(), c);
  EXPECT_LT(secs_since(t0), 8.0);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(dir.read("victim.txt"), "keep me\n");
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(c.log_dir / "stdout.txt")));
  EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(c.log_dir / "stderr.txt")));
  EXPECT_EQ(dir.read("trial-1/stdout.txt"), "{\"throughput\": 1}\n");
}

// What Python's json writes for a diverged loss (NaN, Infinity) is named as
// such, as are results too large to be measurements.
TEST(CommandWorkload, NonFiniteAndAbsurdFiguresAreErrorsThatSaySo) {
  struct Case {
    std::string line, says;
  };
  for (const Case& c : {Case{R"({"throughput": NaN})", "throughput is NaN"},
                        Case{R"({"throughput": 5, "loss": Infinity})", "loss is Infinity"},
                        Case{R"({"throughput": 5, "metrics": {"x": -Infinity} })", "metrics.x is -Infinity"},
                        Case{R"({"throughput": 1e308})", "beyond any real job"},
                        Case{R"({"throughput": 5, "ram_bytes": -3})", "not a memory size"}}) {
    auto printed = make_command("echo '" + c.line + "'");
    Outcome o = printed->measure(cfg(), ctx_with(10));
    EXPECT_EQ(o.status, Status::error) << c.line;
    EXPECT_NE(o.reason.find(c.says), std::string::npos) << c.line << ": " << o.reason;
    auto written = make_command("printf '%s' '" + c.line + "' > \"$AUTOTUNE_RESULT\"");
    o = written->measure(cfg(), ctx_with(10));
    EXPECT_EQ(o.status, Status::error) << c.line;
    EXPECT_NE(o.reason.find(c.says), std::string::npos) << c.line << ": " << o.reason;
  }
  // A string that says NaN is a string.
  auto text = make_command(R"(echo '{"throughput": 5, "note": "NaN Infinity"}')");
  EXPECT_EQ(text->measure(cfg(), ctx_with(10)).status, Status::ok);

  std::string many = "{\"throughput\": 5";
  for (int i = 0; i < 300; ++i) many += ", \"m" + std::to_string(i) + "\": " + std::to_string(i);
  many += "}";
  auto lots = make_command("echo '" + many + "'");
  Outcome o = lots->measure(cfg(), ctx_with(10));
  EXPECT_EQ(o.status, Status::error);
  EXPECT_NE(o.reason.find("301 metrics, at most 256"), std::string::npos) << o.reason;
}

}  // namespace
}  // namespace autotune
