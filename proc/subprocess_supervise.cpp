// One trial's life in the parent: its stops (the timeout, a cancel, the
// grace after its result), its output drained into bounded tails, its
// group's memory sampled, and the child reaped with its group gone.
#include "proc/subprocess_detail.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace autotune::subproc {
namespace {

// Keeps the last `cap` bytes written to it.
class Tail {
 public:
  explicit Tail(std::size_t cap) : m_cap(cap) {}
  void append(const char* data, std::size_t n) {
    m_buf.append(data, n);
    if (m_buf.size() > 2 * m_cap) m_buf.erase(0, m_buf.size() - m_cap);
  }
  std::string take() {
    if (m_buf.size() > m_cap) m_buf.erase(0, m_buf.size() - m_cap);
    return std::move(m_buf);
  }

 private:
  std::size_t m_cap;
  std::string m_buf;
};

// The trial's folder is the job's to write in too (its result file is
// there): whatever it left at the log's name (a link to a file of the
// user's, a FIFO that would block the write) is replaced, never followed.
void write_log(const std::filesystem::path& dir, const char* name, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path path = dir / name;
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  Fd out(fd);
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

// The trial's pipes as the supervisor reads them: stdout and stderr into
// their tails, the result pipe (when there is one) whole.
struct Pipes {
  Fd& out_r;
  Fd& err_r;
  Fd* res_r;
  Tail out, err;
  std::string result;
  bool got_result = false;
  std::array<char, 16384> buf{};

  bool open() const { return out_r.fd >= 0 || err_r.fd >= 0 || (res_r && res_r->fd >= 0); }

  // Waits up to `ms` for output and reads what came; a pipe at its end is closed.
  void read_for(int ms) {
    std::vector<pollfd> fds;
    std::vector<Fd*> which;
    for (Fd* f : {&out_r, &err_r, res_r})
      if (f && f->fd >= 0) fds.push_back({f->fd, POLLIN, 0}), which.push_back(f);
    if (::poll(fds.data(), fds.size(), ms) <= 0) return;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        which[i]->reset();
        continue;
      }
      const auto k = static_cast<std::size_t>(r);
      if (which[i] == &out_r) out.append(buf.data(), k);
      else if (which[i] == &err_r) err.append(buf.data(), k);
      else result.append(buf.data(), k), got_result = true;
    }
  }
};

// After the trial: whatever of the group is still alive goes, the child is
// reaped, and its status read into `run`, with the kernel's OOM kills of the
// group's processes (`members`) since the trial began.
void reap(pid_t pid, pid_t pgid, bool term_sent, bool kill_sent, const std::set<long>& members,
          long long oom_kills_before, long long kernel_log_since_us, Clock::time_point t0, ExternalRun& run) {
  // No orphans: whatever of the group is still alive (a grandchild holding
  // the pipe, a worker that ignored SIGTERM) goes now; then reap the child.
  ::killpg(pgid, SIGKILL);
  forget_group(pgid);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  run.wall_s = since(t0);
  // ru_maxrss (KiB) covers the child even when it lived between two samples.
  run.peak_ram_bytes = std::max(run.peak_ram_bytes, static_cast<double>(ru.ru_maxrss) * 1024.0);
  if (WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
    run.runner_killed = (run.signal == SIGTERM && term_sent) || (run.signal == SIGKILL && kill_sent);
  }
  // A child that exited (or was killed) after our SIGTERM is still a timeout;
  // one stopped after writing its result (by a signal or by a SIGTERM handler
  // that exits) stays stopped_after_result whatever its status.
  // Host memory that ran out under the job: the kernel's OOM killer may have
  // taken any process of the group (a DataLoader worker, a rank) while what
  // the job printed says nothing useful ("lost sys.stderr").
  // The counter is the machine's: the kernel log, where readable, says
  // whether the kills were of this trial's processes or only of others
  // (another job on a shared machine, or the job's own container).
  if (const long long after = oom_kill_count(); oom_kills_before >= 0 && after > oom_kills_before) {
    run.oom_kills = static_cast<int>(after - oom_kills_before);
    const KernelOomLog log = kernel_oom_log(members, kernel_log_since_us);
    run.oom_killed = log.ours;
    if (log.readable && log.ours.empty()) run.oom_kills_elsewhere = log.others;
  }
}

}  // namespace

// One loop over a trial's life, over 80 lines on purpose: its stops (the
// grace after the result, the timeout, a cancel, SIGKILL after SIGTERM's
// grace), the memory samples and the pipes share one clock and one set of
// flags; the pipes (Pipes) and the reaping (reap) are apart.
ExternalRun supervise(pid_t pid, Fd& out_r, Fd& err_r, Fd* res_r, const ChildOptions& opt,
                      Clock::time_point t0) {
  ::setpgid(pid, pid);  // both sides set it: whichever runs first wins the race
  const pid_t pgid = pid;
  ExternalRun run;
  Pipes pipes{out_r, err_r, res_r, Tail(opt.tail_bytes), Tail(opt.tail_bytes)};

  const double kNever = 1e300;
  double deadline = opt.timeout_s > 0 ? opt.timeout_s : kNever;
  double kill_at = kNever;    // when SIGKILL follows SIGTERM
  double drain_until = kNever;
  bool exited = false, term_sent = false, kill_sent = false;
  double next_sample = 0;
  double idle_us = 200;

  std::set<long> members;  // every process seen in the group: the OOM killer's victims among them
  const long long oom_kills_before = oom_kill_count();
  // The kernel log's clock runs close to CLOCK_MONOTONIC, not exactly on it.
  const long long kernel_log_since_us = kernel_clock_us() - 2'000'000;
  auto sample = [&] {
    run.peak_ram_bytes = std::max(run.peak_ram_bytes, group_ram_bytes(pgid, &members));
  };
  auto stop_group = [&](double now, bool cancelled) {
    if (term_sent) return;
    ::killpg(pgid, SIGTERM);
    term_sent = true;
    run.timed_out = !cancelled;
    run.cancelled = cancelled;
    kill_at = now + std::max(0.0, opt.term_grace_s);
  };
  // The result written, then no exit: a teardown that hangs must not cost
  // what was measured. Looked for every 0.1 s (a stat).
  const bool has_result_file = !opt.result_file.empty();
  const bool watch_result = has_result_file && opt.exit_grace_s > 0;
  double result_seen_at = -1, next_result_check = 0;
  bool kept = false;  // a warm worker handed the trial back and lives on
  double next_done_check = 0;
  // Written means a whole JSON object: a file caught mid-write (a script
  // that writes in place) or empty does not count yet.
  auto result_written = [&] {
    const JobFile f = read_job_file(opt.result_file, kResultFileCap);
    if (f.state != JobFile::read || f.text.empty()) return false;
    return nlohmann::json::parse(mark_nonfinite(f.text), nullptr, /*allow_exceptions=*/false).is_object();
  };
  // Every stop the runner decides (the grace after the result, the timeout,
  // Ctrl-C or the tool's own stop): a job that has written its result is
  // stopped after it, its measurement kept; any other is a timeout or a cancel.
  auto stop = [&](double now, bool cancelled) {
    if (term_sent) return;
    const bool has_result = result_seen_at >= 0 || (has_result_file && result_written());
    stop_group(now, cancelled && !has_result);
    if (has_result) {
      run.timed_out = false;
      run.stopped_after_result = true;
    }
  };

  for (;;) {
    const double now = since(t0);
    if (!exited) {
      if (now >= next_sample) {
        sample();
        next_sample = now + opt.ram_poll_s;
      }
      // Exited already (the job ended by itself, or died): nothing to stop,
      // its own status stands. Looked at before any stop decision, so a job
      // that dies just as its grace runs out is never taken as stopped.
      // WNOWAIT: the zombie keeps its pid (and so the group id) reserved until
      // the final killpg below, so that cannot hit a recycled group.
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        exited = true;
        drain_until = since(t0) + opt.drain_s;
      } else if (opt.trial_done && !term_sent && now >= next_done_check) {
        // A warm worker that says the trial is over: what it wrote before
        // is in the pipes already; read it, and leave the worker running.
        next_done_check = now + 0.005;
        if (opt.trial_done()) {
          sample();  // the peak since the last sample: the worker's memory stays, no rusage comes
          kept = exited = true;
          drain_until = since(t0) + 0.02;
        }
      }
    }
    if (!exited) {
      if (watch_result && !term_sent && result_seen_at < 0 && now >= next_result_check) {
        next_result_check = now + 0.1;
        if (result_written()) result_seen_at = now;
      }
      if (result_seen_at >= 0 && now >= result_seen_at + opt.exit_grace_s) stop(now, false);
      if (now >= deadline) stop(now, false);
      if (!term_sent && opt.cancel && opt.cancel()) stop(now, true);
      if (term_sent && !kill_sent && now >= kill_at) {
        ::killpg(pgid, SIGKILL);
        kill_sent = true;
      }
    }
    if (exited && (!pipes.open() || since(t0) >= drain_until)) break;

    // Sleep until the next thing to do; child exit is noticed by polling
    // (no SIGCHLD handler: the tuner's signal handling stays its own).
    double wake = exited ? drain_until : std::min({next_sample, deadline, kill_at});
    if (!exited) wake = std::min(wake, since(t0) + 0.01);
    int ms = static_cast<int>(std::clamp((wake - since(t0)) * 1000.0, 0.0, 50.0));
    if (!pipes.open()) {
      // Outputs closed, child not yet reaped: usually it is exiting right
      // now, so wait briefly first and back off for one that lives on.
      ::usleep(static_cast<useconds_t>(std::min<double>(ms * 1000.0, idle_us)));
      idle_us = std::min(idle_us * 2, 10000.0);
      continue;
    }
    pipes.read_for(std::max(ms, 1));
  }
  // The trial's output, kept and written to its log folder.
  auto take_output = [&] {
    run.stdout_tail = pipes.out.take();
    run.stderr_tail = pipes.err.take();
    if (pipes.got_result) run.result = std::move(pipes.result);
    if (!opt.log_dir.empty()) {
      write_log(opt.log_dir, "stdout.txt", run.stdout_tail);
      write_log(opt.log_dir, "stderr.txt", run.stderr_tail);
    }
  };
  if (kept) {
    run.worker_kept = true;
    run.exit_code = 0;
    run.wall_s = since(t0);
    take_output();
    return run;
  }
  reap(pid, pgid, term_sent, kill_sent, members, oom_kills_before, kernel_log_since_us, t0, run);
  take_output();
  return run;
}

}  // namespace autotune::subproc
