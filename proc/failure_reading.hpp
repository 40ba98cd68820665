#pragma once
// How a job ended, read from what stands between the tuner and it.
//
// A trial's own signal is the best witness (subprocess.hpp), but a shell, a
// launcher or a framework often stands in between and turns it into an exit
// status and a line of text. These functions read those reports back into
// the signal or the memory failure they name (DESIGN, "The command
// contract"):
//
// - a shell that ran a job killed by signal N exits 128+N and prints the
//   signal's description ("Killed", "bash: line 1: 4667 Segmentation fault");
// - torchrun (torch.distributed.elastic) summarises a failed rank as
//   `exitcode  : -N (pid: P)` and `Signal N (SIGKILL) received by PID P`;
// - torch.multiprocessing.spawn reports a rank's signal from its parent:
//   `ProcessExitedException: process R terminated with signal SIGSEGV`;
// - PyTorch's DataLoader reports a worker's death from the main process:
//   `DataLoader worker (pid P) is killed by signal: Killed.`,
//   `DataLoader worker (pid(s) P) exited unexpectedly`, and a worker that
//   ran out of shared memory prints `ERROR: Unexpected bus error encountered
//   in worker. This might be caused by insufficient shared memory (shm).`
//
// SIGKILL that the tuner did not send is the kernel's OOM killer (host_oom);
// other signals are crashes; a DataLoader worker's bus error is /dev/shm
// running out (host_oom). Every reading keeps the framework's own line as its
// reason, so the progress line and the journal show what the job said.
#include <optional>
#include <string>
#include <string_view>

#include "core/outcome.hpp"

namespace autotune {

struct FailureReading {
  Status status = Status::error;
  std::string reason;  // one line
};

// Reads a job's standard error (its tail) and exit status for a failure that
// a shell, a launcher or PyTorch reported on a process's behalf. `via_shell`:
// the process the tuner started is a shell (`sh -c`), so 128+N with the
// shell's message means signal N. nullopt when nothing is recognised.
std::optional<FailureReading> read_reported_failure(std::string_view stderr_tail, int exit_code, bool via_shell);

// The status a signal that the tuner did not send stands for: SIGKILL is the
// kernel's OOM killer (host_oom), anything else a crash.
Status status_of_signal(int signal);

// "SIGKILL" for 9; "signal 77" when it has no name.
std::string signal_name(int signal);

// What /dev/shm holds, for a reason: "/dev/shm is 64.0 MiB, 1.2 MiB free"
// (or that it could not be read).
std::string shm_summary(const char* path = "/dev/shm");

// The last non-blank line of `text`, trimmed; empty when there is none.
std::string last_line(std::string_view text);

}  // namespace autotune
