#pragma once
// One trial in a child process: its own process group, a timeout (SIGTERM to
// the group, a grace period, then SIGKILL), standard output and error drained
// through pipes into bounded tails, peak host memory of the whole group
// polled from /proc, and nothing of the group left alive when it returns.
//
// Promises:
// - run_child() returns within timeout + grace + drain (plus polling slack),
//   whatever the child does: a grandchild that keeps the pipes open is killed
//   with the group once the child has exited and `drain_s` has passed.
// - It never throws for anything the child does; a failure to start is
//   ExternalRun::spawn_error.
// - Safe to call from several threads at once (parallel slots): pipes are
//   close-on-exec and an exec'd child closes every other descriptor.
// - If the tuner itself dies, however it dies (SIGKILL included), the whole
//   group gets SIGKILL: a watchdog process that the tuner forks at its first
//   trial watches every trial's group (warm workers' too) and kills those
//   left when the tuner's end of its socket closes
//   (subprocess_watchdog.cpp); the direct child also has PR_SET_PDEATHSIG.
// Not covered: a descendant that leaves the group (setsid, setpgid) escapes
// the final kill and the watchdog; that needs cgroups, which we do not
// assume. A watchdog killed by SIGKILL together with the tuner (a kill of
// every process of the user) cannot act.
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/outcome.hpp"
#include "proc/external_run.hpp"

namespace autotune {

struct ChildOptions {
  double timeout_s = 0;              // 0: none
  double term_grace_s = 5.0;         // SIGTERM -> SIGKILL
  double drain_s = 0.5;              // after the child exits, how long to keep reading pipes
  std::size_t tail_bytes = 64 * 1024;  // kept of each of stdout and stderr
  double ram_poll_s = 0.05;          // /proc sampling period
  std::vector<int> cpus;             // affinity of the child (empty: inherited)
  std::function<bool()> cancel;      // polled; true stops the child like a timeout (Ctrl-C)
  std::filesystem::path log_dir;     // non-empty: stdout.txt / stderr.txt tails written there
  // With exit_grace_s > 0: once `result_file` is written, the child has that
  // long to exit before it is stopped (ExternalRun::stopped_after_result).
  // With any grace, a timeout that finds the result written stops it the
  // same way: what it measured is kept. run_external sets both from the
  // ExternalCommand.
  std::filesystem::path result_file;
  double exit_grace_s = 0;
  // A warm worker's trial: polled; true when the process says the trial is
  // over and it waits for the next one. The run then returns with the
  // process alive (ExternalRun::worker_kept) instead of waiting for its exit.
  std::function<bool()> trial_done;
};

// Forks a child that runs `body(result_fd)` in this program (no exec), with
// stdout/stderr redirected into the pipes; whatever it writes to result_fd
// comes back as ExternalRun::result. The child _exit()s with body's return
// value (127 when body throws). For in-process workloads under isolation.
ExternalRun run_forked(const std::function<int(int result_fd)>& body, const ChildOptions& opt);

// Starts an ExternalCommand: environment = this process's less every
// AUTOTUNE_* variable (unless cmd.pass_autotune_env), then `extra_env`
// (e.g. TrialContext::env), then cmd.env. Reads and (unless
// kept) removes cmd.result_file, as read_job_file allows (a file that is
// refused sets ExternalRun::result_refused and is removed, kept or not).
ExternalRun run_external(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                         const ChildOptions& opt);

// A warm worker: one process group (`shell -c command`) that runs trial
// after trial, so that a job's start-up is paid once. The first trial
// starts it with that trial's environment plus AUTOTUNE_WARM_DIR (a folder
// of its own); autotune_trial.trials() writes `entered` there as it starts
// (its start-up done: the worker reads the group's memory and removes it,
// which the script waits for), then `ready-<trial>` once a trial is over
// and its loader's workers are gone, and waits for `next.json`
// ({"env": {AUTOTUNE_*...}}) or `stop`; before the next trial it changes
// back to the folder it started in. A job of N ranks is one worker (the
// launcher's whole tree): its rank 0 alone speaks this protocol, for every
// rank (python/autotune_trial/_ranks.py). Isolation is a cold
// trial's: its own process group, the timeout and Ctrl-C kill the group,
// and a worker that dies mid-trial gives the trial the status a cold
// trial's death would. A script that never enters trials() exits after its
// first trial: each trial then starts it anew. Per-trial figures: the
// group's peak memory counters (VmHWM) are reset before each trial after
// the first, and each trial's output goes to that trial's log.
//
// Host memory (ram_bytes) of a trial: the first trial of a worker counts
// its start-up, as a cold trial does (the group's peak). A later trial
// counts the worker's start-up `base` plus what it added over the group's
// resident memory when it began: base + (peak - resident at its start), so
// that what earlier trials left behind (a leak, a cache) is not charged to
// it. `base` is the group's resident memory when the script entered
// autotune_trial.trials() (it says so with `entered` in its folder), else
// (a worker that does not say) the resident memory when its first trial
// ended. For a worker that keeps nothing between trials the figure is a
// cold trial's. What a trial keeps and a later one reuses (a cache the
// first trial builds: pinned host buffers) is charged to the trial that
// built it only: put what every trial needs before the loop.
// A worker whose resident memory between trials has grown by more than
// 25% of what it held when its first trial ended (at least 64 MiB) is
// replaced before the next trial (ExternalRun::worker_replaced, metric
// worker_replaced): a leak does not pile up, neither into later trials'
// figures nor into the machine's memory.
// One thread at a time (one worker per parallel slot).
class WarmWorker {
 public:
  WarmWorker() = default;
  WarmWorker(const WarmWorker&) = delete;
  WarmWorker& operator=(const WarmWorker&) = delete;
  ~WarmWorker() { stop(); }

  // One trial of `cmd` (whose env holds the trial's AUTOTUNE_* values): sent
  // to the live worker, or starting one (with `extra_env` and opt.cpus)
  // when there is none. The run's worker_kept says whether it lives on.
  ExternalRun run(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                  const ChildOptions& opt);
  // Ends the worker: asks it to stop, then kills its group. No-op when none.
  void stop();
  bool alive() const { return m_pid > 0; }

 private:
  int m_pid = -1;
  int m_out = -1, m_err = -1;  // its output pipes' read ends
  double m_base_rss = -1;        // resident memory when the script entered trials(); -1 unknown
  double m_first_idle_rss = -1;  // resident memory when its first trial ended; -1 before
  std::filesystem::path m_dir;
  // The thread that forked the worker, kept until it ends (see run()).
  std::thread m_keeper;
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_release = false;
};

// The worker's side of that protocol, for a worker written in C++ (the
// built-in harness's `autotune __worker`; autotune_trial.trials() is the
// Python one): warm_trial_over() says trial `trial` is over (its result
// written); warm_next_trial() then waits for the next trial and sets its
// AUTOTUNE_* environment in this process (the old trial's unset), or
// returns false when told to stop or orphaned.
void warm_trial_over(const std::filesystem::path& dir, const std::string& trial);
bool warm_next_trial(const std::filesystem::path& dir);

// A file a trial controls (its result file), read with care: only a
// regular file (not a symbolic link, a FIFO or a device: looked at with
// lstat before it is opened, opened with O_NOFOLLOW | O_NONBLOCK), at most
// `cap` bytes, never blocking. Absent: state absent. Anything else is
// refused with `why` ("is a FIFO, not a regular file: not read"), and
// nothing of it is read.
struct JobFile {
  enum State { absent, read, refused } state = absent;
  std::string text;  // when read
  std::string why;   // when refused
};
JobFile read_job_file(const std::filesystem::path& path, std::size_t cap);
// What a trial's result file may hold at most.
inline constexpr std::size_t kResultFileCap = 1 << 20;
// "1 MiB", "64 KiB", "100 bytes".
std::string format_cap(std::size_t bytes);

// Python's json writes NaN, Infinity and -Infinity, which JSON lacks: those
// tokens outside strings become the strings kNonFiniteMark + token, so that
// the text parses and its reader can say which number was not finite.
inline constexpr const char* kNonFiniteMark = "autotune:nonfinite:";
std::string mark_nonfinite(std::string_view text);

// The classification every external trial shares: could not start -> error,
// timeout -> timeout, cancelled -> timeout, SIGKILL not sent by the runner ->
// host_oom, other signals -> crash. nullopt when the program exited by itself
// or was stopped after writing its result (stopped_after_result).
std::optional<Outcome> classify_termination(const ExternalRun& run);

// Device (or host) out-of-memory messages in a program's standard error:
// Status::oom for CUDA/HIP/cuBLAS/cuDNN/XLA/TensorFlow device allocation
// failures, Status::host_oom for std::bad_alloc and Python's MemoryError,
// nullopt otherwise. The matched text is put in `what`.
std::optional<Status> find_oom_message(std::string_view text, std::string* what = nullptr);

// The last `max_bytes` of `text`, with a marker when cut (for reasons).
std::string tail_for_reason(std::string_view text, std::size_t max_bytes = 2000);

// ": <the last line of standard error>" (for a Python traceback, the
// exception itself), or empty: what a one-line reason adds of the output.
std::string stderr_said(const ExternalRun& run);

// Both output tails after a reason's first line, for a trial with no log
// folder; empty when `log_dir` is set (stdout.txt and stderr.txt keep them).
std::string output_tails(const ExternalRun& run, const std::filesystem::path& log_dir);

}  // namespace autotune

namespace autotune {

// What every external trial adds to its Outcome: `ram_bytes` from the
// runner's own measurement unless the program reported it, and the wall time
// unless the outcome already says how long it took (a forked workload's own
// seconds: the synthetic workload's simulated ones).
Outcome with_run_facts(Outcome o, const ExternalRun& run);

}  // namespace autotune
