// How a job ended, read through what stands between: real shells, real
// DataLoader workers and torch's own ChildFailedError, through the command
// workload as a user's trial runs (the texts alone:
// tests/proc/failure_reading_test.cpp).
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "tests/support/proc_util.hpp"
#include "tests/support/python_util.hpp"
#include "workloads/command.hpp"
#include "workloads/workloads.hpp"

namespace autotune {
namespace {

using testing::ScratchDir;

// ---------------------------------------------------------------- exec_form

TEST(ExecForm, SimpleCommandsAreExecdCompoundOnesAreNot) {
  EXPECT_EQ(exec_form("python3 train.py --bs 64"), "exec python3 train.py --bs 64");
  EXPECT_EQ(exec_form("OMP_NUM_THREADS=1 python3 t.py"), "OMP_NUM_THREADS=1 exec python3 t.py");
  EXPECT_EQ(exec_form("python3 t.py > log.txt 2>&1"), "exec python3 t.py > log.txt 2>&1");
  EXPECT_EQ(exec_form("python3 -c 'a; b | c'"), "exec python3 -c 'a; b | c'") << "quoted operators";
  for (const char* keep : {"cd x && python3 t.py", "python3 a.py; python3 b.py", "a | b", "(python3 t.py)",
                           "python3 t.py &", "exit 3", "exec python3 t.py", "if true; then x; fi",
                           "python3 t.py --n $(nproc)", "for i in 1; do x; done", "FOO=1", "",
                           "python3 'unbalanced"})
    EXPECT_EQ(exec_form(keep), keep);
}

// ---------------------------------------------------------------- real processes

const std::vector<std::string> kParams = {"num_workers"};

std::unique_ptr<Workload> command(const std::string& text) {
  const WorkloadInfo info = command_workload_info();
  std::map<std::string, OptionValue> opts{{"command", text}};
  return info.make(Options::with_defaults(info.options, opts), WorkloadEnv{kParams, "/"});
}

Outcome run(const std::string& text, const ScratchDir& dir, double timeout_s = 60) {
  TrialContext c;
  c.trial = 1;
  c.timeout_s = timeout_s;
  c.log_dir = dir.path() / "trial-1";
  return command(text)->measure(Assignment({{"num_workers", Value{std::int64_t{2}}}}), c);
}

// Processes whose command line mentions `needle` (a scratch folder).
std::vector<long> processes_mentioning(const std::string& needle) {
  std::vector<long> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos && testing::process_alive(std::stol(e->d_name)))
      out.push_back(std::stol(e->d_name));
  }
  if (d) ::closedir(d);
  return out;
}

TEST(ReportedFailureProcess, SimpleCommandIsExecdSoNothingStandsBetween) {
  ScratchDir dir;
  // The job's parent is this process: the shell replaced itself with it.
  Outcome o = run(R"(python3 -c 'import os; print("{\"throughput\": %d}" % os.getppid())')", dir);
  ASSERT_EQ(o.status, Status::ok) << o.reason;
  EXPECT_EQ(static_cast<long>(o.throughput), static_cast<long>(::getpid()));
}

TEST(ReportedFailureProcess, CompoundShellCommandWhoseChildIsSigkilledIsHostOom) {
  ScratchDir dir;
  Outcome o = run("cd " + dir.path().string() + " && python3 -c 'import os; os.kill(os.getpid(), 9)'", dir);
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  EXPECT_NE(o.reason.find("Killed"), std::string::npos) << o.reason;
  EXPECT_EQ(o.reason.find('\n'), std::string::npos) << "one line: " << o.reason;
}

TEST(ReportedFailureProcess, CompoundShellCommandThatSegfaultsIsCrash) {
  ScratchDir dir;
  Outcome o = run("true; python3 -c 'import ctypes; ctypes.string_at(0)'; exit $?", dir);
  EXPECT_EQ(o.status, Status::crash) << o.reason;
  EXPECT_NE(o.reason.find("SIGSEGV"), std::string::npos) << o.reason;
}

TEST(ReportedFailureProcess, ScriptExitingWith137ByItselfIsAnError) {
  ScratchDir dir;
  Outcome o = run("true; python3 -c 'import sys; sys.exit(137)'", dir);
  EXPECT_EQ(o.status, Status::error) << o.reason;
}

TEST(ReportedFailureProcess, ErrorReasonIsTheExceptionLineAndTheLogKeepsTheTail) {
  ScratchDir dir;
  Outcome o = run("python3 -c 'print(1)\nraise ValueError(\"bad batch size\")'", dir);
  EXPECT_EQ(o.status, Status::error);
  EXPECT_EQ(o.reason, "exited with status 1: ValueError: bad batch size");
  std::ifstream log(dir.path() / "trial-1" / "stderr.txt");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("Traceback (most recent call last)"), std::string::npos) << text;
}

// A real DataLoader whose worker dies by `sig` on its fifth sample.
std::string dataloader_script(const ScratchDir& dir) {
  return dir.write("loader.py", R"(import os, sys, torch
from torch.utils.data import DataLoader, Dataset
sig = int(sys.argv[1])
class Samples(Dataset):
    def __len__(self): return 1000
    def __getitem__(self, i):
        if i == 5: os.kill(os.getpid(), sig)
        return torch.zeros(8)
for batch in DataLoader(Samples(), batch_size=2, num_workers=2):
    pass
print('{"throughput": 1.0}')
)").string();
}

TEST(ReportedFailureProcess, KilledDataLoaderWorkerIsHostOomAndNothingIsLeft) {
  AUTOTUNE_REQUIRE_TORCH();
  ScratchDir dir;
  Outcome o = run(testing::torch_python() + " " + dataloader_script(dir) + " 9", dir);
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  EXPECT_NE(o.reason.find("DataLoader worker"), std::string::npos) << o.reason;
  EXPECT_TRUE(processes_mentioning(dir.path().string()).empty()) << "no worker left behind";
}

TEST(ReportedFailureProcess, DataLoaderWorkerBusErrorIsHostOomNamingShm) {
  AUTOTUNE_REQUIRE_TORCH();
  ScratchDir dir;
  // SIGBUS in a worker: torch's own handler prints the shared-memory message.
  Outcome o = run("cd " + dir.path().string() + " && " + testing::torch_python() + " loader.py 7 ; exit $?",
                  (dataloader_script(dir), dir));
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  EXPECT_NE(o.reason.find("insufficient shared memory"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("/dev/shm is"), std::string::npos) << o.reason;
}

TEST(ReportedFailureProcess, TorchrunChildFailedErrorForAKilledRankIsHostOom) {
  AUTOTUNE_REQUIRE_TORCH();
  ScratchDir dir;
  // Debian's torch 1.13 launcher does not start on Python 3.11; its summary
  // is torch's own ChildFailedError, raised here as the launcher raises it.
  const auto script = dir.write("launcher.py", R"(from torch.distributed.elastic.multiprocessing.errors import (
    ChildFailedError, ProcessFailure)
raise ChildFailedError("train.py", {0: ProcessFailure(local_rank=0, pid=4242, exitcode=-9, error_file="/none")})
)");
  Outcome o = run(testing::torch_python() + " " + script.string(), dir);
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  EXPECT_NE(o.reason.find("Signal 9 (SIGKILL) received by PID 4242"), std::string::npos) << o.reason;
}

// A memory cgroup (v1 or v2) with `limit` bytes, for a real OOM kill by the
// kernel; empty path (and why) when this machine does not allow one (not
// root, no writable memory controller).
class MemoryCgroup {
 public:
  explicit MemoryCgroup(long long limit) {
    const std::string name = "autotune-test-" + std::to_string(::getpid()) + "-" + std::to_string(++s_count);
    for (const auto& [root, limit_file] : {std::pair<std::string, std::string>{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"},
                                           {"/sys/fs/cgroup/unified", "memory.max"},
                                           {"/sys/fs/cgroup", "memory.max"}}) {
      const std::filesystem::path dir = std::filesystem::path(root) / name;
      std::error_code ec;
      if (!std::filesystem::create_directory(dir, ec)) continue;
      std::ofstream(dir / limit_file) << limit;
      std::ifstream in(dir / limit_file);
      long long got = 0;
      if (in >> got && got > 0 && got <= limit + 4096) {
        m_dir = dir;
        // No swap to fall back on (v1: memsw may be absent; then swap is what the host has).
        std::ofstream(dir / "memory.swappiness") << 0;
        std::ofstream(dir / "memory.swap.max") << 0;
        return;
      }
      std::filesystem::remove(dir, ec);
    }
  }
  ~MemoryCgroup() {
    if (m_dir.empty()) return;
    // The trial's processes are gone (the runner killed the group); rmdir
    // succeeds once the kernel has let go of them.
    for (int i = 0; i < 100 && ::rmdir(m_dir.c_str()) != 0; ++i) ::usleep(20000);
  }
  const std::filesystem::path& dir() const { return m_dir; }

 private:
  static inline int s_count = 0;
  std::filesystem::path m_dir;
};

TEST(ReportedFailureProcess, RealOomKillerThroughACompoundShellCommandIsHostOom) {
  MemoryCgroup cg(150LL << 20);
  if (cg.dir().empty()) GTEST_SKIP() << "no writable memory cgroup here (needs root): no real OOM kill to test";
  ScratchDir dir;
  // The shell stays (a compound command); the kernel kills python3 inside it.
  Outcome o = run("echo $$ > " + (cg.dir() / "cgroup.procs").string() +
                      " && python3 -c 'x = bytearray(600 << 20); print(len(x))'",
                  dir);
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  EXPECT_NE(o.reason.find("Killed"), std::string::npos) << o.reason;
}

TEST(ReportedFailureProcess, RealOomKillerTakingADataLoaderWorkerIsHostOom) {
  AUTOTUNE_REQUIRE_TORCH();
  MemoryCgroup cg(1LL << 30);
  if (cg.dir().empty()) GTEST_SKIP() << "no writable memory cgroup here (needs root): no real OOM kill to test";
  ScratchDir dir;
  const auto script = dir.write("hungry.py", R"(import torch
from torch.utils.data import DataLoader, Dataset
class Hungry(Dataset):
    def __len__(self): return 1000
    def __getitem__(self, i):
        hoard.append(bytearray(64 << 20))  # a worker whose memory grows without bound
        return torch.zeros(4)
hoard = []
for batch in DataLoader(Hungry(), batch_size=1, num_workers=2):
    pass
print('{"throughput": 1.0}')
)");
  Outcome o = run("echo $$ > " + (cg.dir() / "cgroup.procs").string() + " && " + testing::torch_python() + " " +
                      script.string(),
                  dir, 120);
  EXPECT_EQ(o.status, Status::host_oom) << o.reason;
  // Torch's own line when the main process could still print it; under the
  // memory pressure it sometimes cannot ("lost sys.stderr"), and then the
  // kernel's log names the victim.
  EXPECT_TRUE(o.reason.find("DataLoader worker") != std::string::npos ||
              o.reason.find("OOM killer killed") != std::string::npos)
      << o.reason;
  EXPECT_TRUE(processes_mentioning(dir.path().string()).empty()) << "no worker left behind";
}


// The OOM killer takes a process of another job while the trial fails of
// something else: the machine's count rises, but the kernel log names a
// process outside the trial's group, so the failure stays what it was. One
// that exits as a killed process does (137, as `docker run` passes on its
// container's kill) is still read as the host's memory.
TEST(ReportedFailureProcess, RealOomKillerOfAnotherJobIsNotTheTrials) {
  MemoryCgroup cg(150LL << 20);
  if (cg.dir().empty()) GTEST_SKIP() << "no writable memory cgroup here (needs root): no real OOM kill to test";
  if (int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK); fd < 0) GTEST_SKIP() << "the kernel log is not readable";
  else ::close(fd);
  for (const int code : {3, 137}) {
    SCOPED_TRACE(code);
    ScratchDir dir;
    const std::string started = (dir.path() / "started").string(), go = (dir.path() / "go").string();
    // Another job, outside the trial's process group, runs out of its memory
    // once the trial has started; the trial ends when told to.
    std::thread other([&] {
      while (!std::filesystem::exists(started)) std::this_thread::yield();
      const int rc = std::system(("sh -c 'echo $$ > " + (cg.dir() / "cgroup.procs").string() +
                                  " && exec python3 -c \"x = bytearray(600 << 20)\"' 2>/dev/null")
                                     .c_str());
      EXPECT_NE(rc, 0) << "the other job was not killed";
      std::ofstream(go) << 1;
    });
    Outcome o = run("touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.01; done; " +
                        "echo 'RuntimeError: the loss is NaN' >&2; exit " + std::to_string(code),
                    dir);
    other.join();
    if (code == 3) {
      EXPECT_EQ(o.status, Status::error) << o.reason;
      EXPECT_NE(o.reason.find("outside this trial"), std::string::npos) << o.reason;
      EXPECT_NE(o.reason.find("the loss is NaN"), std::string::npos) << o.reason;
    } else {
      EXPECT_EQ(o.status, Status::host_oom) << o.reason;
    }
  }
}

}  // namespace
}  // namespace autotune
