#pragma once
// What the child-process layer starts (ExternalCommand: a program, its
// environment, its result file) and what it reports back (ExternalRun: how
// the process ended, its output tails, its result, its peak memory). The
// functions that run them are in proc/subprocess.hpp.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace autotune {

// A trial that is an external program (the command workload): what the runner
// starts, in its own process group, through the same code whether the
// workload runs inline or in a child (see proc/subprocess.hpp).
struct ExternalCommand {
  std::vector<std::string> argv;               // argv[0]: a path, or a name looked up in PATH
  std::map<std::string, std::string> env;      // set over the tuner's environment and TrialContext::env
  std::filesystem::path cwd;                   // empty: the tuner's
  std::filesystem::path result_file;           // the program may write its JSON result there; empty: none
  bool keep_result_file = false;               // false: removed once read
  bool via_shell = false;                      // argv is `shell -c text`: 128+N means signal N
  // Once result_file is written, how long the program may take to exit
  // before it is stopped and its result taken as it stands (a job that hangs
  // in its teardown: NCCL, DataLoader workers, a logger's flush); 0: wait
  // for it, up to the timeout (which, finding the result written, stops it
  // the same way).
  double exit_grace_s = 0;
  // Run in a warm worker (workload `warm: true`): the process is kept
  // between trials and sent the next trial's AUTOTUNE_* environment
  // (autotune_trial.trials()); see WarmWorker (proc/subprocess.hpp).
  bool warm = false;
  // The program is autotune itself (the built-in harness's worker): the
  // tuner's own AUTOTUNE_* settings (AUTOTUNE_CUDA_MODULE, ...) reach it.
  // Otherwise every inherited AUTOTUNE_* is cleared: a trial sees only those
  // in `env` (its knobs, AUTOTUNE_TRIAL, AUTOTUNE_RESULT, ...).
  bool pass_autotune_env = false;
};

// What running an ExternalCommand (or a forked in-process trial) produced.
struct ExternalRun {
  std::string spawn_error;     // non-empty: it never ran (no such program, fork failed)
  int exit_code = -1;          // when it exited; -1 when a signal ended it
  int signal = 0;              // the signal that ended it; 0 when it exited
  bool timed_out = false;      // the timeout fired (the runner sent SIGTERM, maybe SIGKILL)
  bool cancelled = false;      // the tuner was interrupted (Ctrl-C) and stopped it
  bool runner_killed = false;  // the runner sent the signal that ended it (timeout, cancel, after its result)
  bool stopped_after_result = false;  // it had written its result and outstayed exit_grace_s (or the timeout): stopped
  std::string stdout_tail;     // the last bytes of standard output (bounded)
  std::string stderr_tail;     // the last bytes of standard error (bounded)
  std::optional<std::string> result;  // the result file's (or result pipe's) contents, when written
  std::string result_refused;  // non-empty: the result file was not read, and why ("is a FIFO, ...")
  double peak_ram_bytes = 0;   // peak of the summed VmHWM/VmRSS over the process group; 0 unknown
  double wall_s = 0;
  bool via_shell = false;      // copied from ExternalCommand::via_shell
  int oom_kills = 0;           // the kernel's OOM kills (anywhere) while it ran (/proc/vmstat oom_kill)
  std::string oom_killed;      // those of its own processes, "python3 (pid 1531)", when the kernel log says
  int oom_kills_elsewhere = 0; // of those, the kernel log names only processes outside its group: how many
  bool worker_kept = false;    // a warm worker finished the trial and waits for the next (exit_code 0)
  bool worker_replaced = false;  // a warm worker grown too big was replaced before this trial (WarmWorker)
  bool worker_entered = false;   // a warm worker's script entered autotune_trial.trials() (said `entered`)
};

}  // namespace autotune
