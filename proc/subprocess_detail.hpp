#pragma once
// The child-process layer's parts that its files share (subprocess*.cpp);
// nothing outside them includes this. The interface is proc/subprocess.hpp.
//   subprocess_spawn.cpp      starting a child: fork, its own group, exec
//   subprocess_supervise.cpp  one trial's life: timeout, pipes, reaping
//   subprocess_group.cpp      the group as /proc and the kernel log see it
//   subprocess.cpp            run_external, the warm worker, the result file
//   subprocess_reading.cpp    what a finished run says (reasons, OOM text)
//   subprocess_files.cpp      the files a trial controls, read with care
//   subprocess_watchdog.cpp   the process that kills the trials of a tuner that died
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "proc/subprocess.hpp"

namespace autotune::subproc {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Pipe ends, closed on scope exit.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// subprocess_group.cpp

// Sum over every live process of the group. VmHWM is each process's own peak,
// so the sum can exceed the group's true simultaneous peak when members peak
// at different times; it is the bound the DESIGN asks for ("sum of VmHWM").
double group_ram_bytes(pid_t pgid, std::set<long>* members);

// The group's resident memory now (sum of VmRSS), not its peak.
double group_rss_bytes(pid_t pgid);

// The kernel's count of OOM kills since boot (/proc/vmstat, Linux 4.13+);
// -1 when unknown.
long long oom_kill_count();

// Microseconds on the clock the kernel log stamps its records with (the
// time since boot, as CLOCK_MONOTONIC counts it).
long long kernel_clock_us();

// What the kernel log says the OOM killer killed since `since_us` ("Killed
// process 1531 (python3)"): those of `pids` as "python3 (pid 1531)", and how
// many others. Needs /dev/kmsg to be readable (root, or
// kernel.dmesg_restrict=0); readable is false otherwise.
struct KernelOomLog {
  bool readable = false;
  std::string ours;
  int others = 0;
};

KernelOomLog kernel_oom_log(const std::set<long>& pids, long long since_us);

// Resets the peak-memory counter (VmHWM) of every process in the group, so
// that the next trial's peak is its own (Linux: clear_refs 5).
void reset_group_peaks(pid_t pgid);

// subprocess_watchdog.cpp

// The watchdog kills group `pgid` if the tuner dies before forget_group():
// called as a trial's group starts (it starts the watchdog the first time),
// and just before the group is reaped (its pid still held by the zombie).
void watch_group(pid_t pgid);
void forget_group(pid_t pgid);
// In a child forked without exec: closes this process's end of the
// watchdog's socket, so that the watchdog sees the tuner's death, not the
// child's. Async-signal-safe.
void forget_watchdog_in_child();

// subprocess_spawn.cpp

// Starts `cmd` as a child in its own process group with its output on two
// pipes (the read ends returned in out_r/err_r). Returns its pid, or -1
// with `error` set.
pid_t spawn_external(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                     const ChildOptions& opt, Fd& out_r, Fd& err_r, std::string& error);

// subprocess_supervise.cpp

// The parent side shared by run_forked and run_external: `pid` is the child,
// in its own group; the read ends of its pipes. Returns when the child has
// exited (or was killed) and the group is gone.
ExternalRun supervise(pid_t pid, Fd& out_r, Fd& err_r, Fd* res_r, const ChildOptions& opt,
                      Clock::time_point t0);

}  // namespace autotune::subproc
