// How a job ended, read through what stands between: a shell, torchrun,
// PyTorch's DataLoader. The texts are as those programs print them; the
// same failures from real processes, through the command workload, are in
// tests/workloads/reported_failure_test.cpp.
#include "proc/failure_reading.hpp"

#include <gtest/gtest.h>

#include <string>

namespace autotune {
namespace {

TEST(ReportedFailure, ShellExitWithItsMessageIsTheSignal) {
  auto r = read_reported_failure("loading...\nKilled\n", 137, /*via_shell=*/true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_NE(r->reason.find("'Killed'"), std::string::npos) << r->reason;
  EXPECT_NE(r->reason.find("SIGKILL"), std::string::npos) << r->reason;

  r = read_reported_failure("bash: line 1:  4667 Segmentation fault      python3 train.py\n", 139, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::crash);
  EXPECT_NE(r->reason.find("Segmentation fault"), std::string::npos);
}

TEST(ReportedFailure, ExitStatusAloneOrWithoutAShellIsNotASignal) {
  EXPECT_FALSE(read_reported_failure("Traceback ...\nValueError: x\n", 137, true)) << "exit(137) by the script";
  EXPECT_FALSE(read_reported_failure("Killed\n", 137, /*via_shell=*/false));
  EXPECT_FALSE(read_reported_failure("Killed\n", 1, true));
}

TEST(ReportedFailure, TorchrunSummaryOfAKilledRank) {
  const std::string text =
      "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
      "============================================================\n"
      "train.py FAILED\n"
      "------------------------------------------------------------\n"
      "Root Cause (first observed failure):\n[0]:\n"
      "  time      : 2026-11-23_19:14:42\n  host      : node1\n  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -9 (pid: 4242)\n  error_file: <N/A>\n"
      "  traceback : Signal 9 (SIGKILL) received by PID 4242\n"
      "============================================================\n";
  auto r = read_reported_failure(text, 1, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_NE(r->reason.find("Signal 9 (SIGKILL) received by PID 4242"), std::string::npos) << r->reason;

  r = read_reported_failure("  exitcode  : -11 (pid: 7)\n", 1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::crash);
  EXPECT_FALSE(read_reported_failure("  exitcode  : 1 (pid: 7)\n", 1, false)) << "a rank that exited 1 is an error";
}

TEST(ReportedFailure, SpawnsReportOfARankThatDiedByASignal) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 140, in join\n"
      "    raise ProcessExitedException(\n"
      "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV\n";
  auto r = read_reported_failure(text, 1, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::crash);
  EXPECT_NE(r->reason.find("rank 1 terminated with signal SIGSEGV"), std::string::npos) << r->reason;

  r = read_reported_failure("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal "
                            "SIGKILL\n", 1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_FALSE(read_reported_failure("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated "
                                     "with exit code 3\n", 1, true))
      << "a rank that exited 3 is an error";
}

TEST(ReportedFailure, DataLoaderWorkers) {
  auto r = read_reported_failure(
      "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed. \n", 1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_NE(r->reason.find("DataLoader worker (pid 1234) is killed by signal: Killed."), std::string::npos);

  r = read_reported_failure("RuntimeError: DataLoader worker (pid(s) 10813) exited unexpectedly\n", 1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);

  r = read_reported_failure(
      "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
      "(shm).\nRuntimeError: DataLoader worker (pid(s) 10963) exited unexpectedly\n",
      1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_NE(r->reason.find("/dev/shm"), std::string::npos) << r->reason;
  EXPECT_NE(r->reason.find("MiB"), std::string::npos) << "names the size: " << r->reason;

  r = read_reported_failure(
      "ERROR: Unexpected segmentation fault encountered in worker.\n"
      "RuntimeError: DataLoader worker (pid 11034) is killed by signal: Segmentation fault. \n"
      "RuntimeError: DataLoader worker (pid(s) 11034) exited unexpectedly\n",
      1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::crash) << "a segfault in a worker is not memory: " << r->reason;

  // A worker killed as the main process took a batch's shared memory from it:
  // no DataLoader message, only the connection's EOFError (a real traceback,
  // Debian's python3-torch, shortened).
  const std::string handover =
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1120, in _try_get_data\n"
      "    data = self._data_queue.get(timeout=timeout)\n"
      "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 122, in get\n"
      "    return _ForkingPickler.loads(res)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/reductions.py\", line 305, in "
      "rebuild_storage_fd\n"
      "    fd = df.detach()\n"
      "  File \"/usr/lib/python3.11/multiprocessing/resource_sharer.py\", line 58, in detach\n"
      "    return reduction.recv_handle(conn)\n"
      "  File \"/usr/lib/python3.11/multiprocessing/reduction.py\", line 159, in recvfds\n"
      "    raise EOFError\n"
      "EOFError\n";
  r = read_reported_failure(handover, 1, false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, Status::host_oom);
  EXPECT_NE(r->reason.find("DataLoader worker"), std::string::npos) << r->reason;
  // The same error elsewhere (a script's own pipe) stays the script's error.
  EXPECT_FALSE(read_reported_failure("Traceback (most recent call last):\n  File \"train.py\", line 3\nEOFError\n", 1,
                                     false));
}

}  // namespace
}  // namespace autotune
