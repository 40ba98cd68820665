#include "workloads/subprocess.hpp"

#include "workloads/atomic_file.hpp"
#include "workloads/failure_reading.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <utility>
#include <array>
#include <set>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

bool make_pipe(Fd& r, Fd& w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  r.fd = p[0];
  w.fd = p[1];
  return true;
}

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

// Reads /proc/<pid>/stat's process group (field 5, after the ")" of comm).
long proc_pgrp(const char* pid) {
  char path[300];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (!p) return -1;
  char state = 0;
  long ppid = 0, pgrp = -1;
  if (std::sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return -1;
  return pgrp;
}

// max(VmHWM, VmRSS) of one process in bytes; 0 when gone or a kernel thread.
double proc_peak_bytes(const char* pid) {
  char path[300];
  std::snprintf(path, sizeof path, "/proc/%s/status", pid);
  std::ifstream in(path);
  std::string line;
  double hwm = 0, rss = 0;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::strtod(line.c_str() + 6, nullptr) * 1024.0;
    else if (line.rfind("VmRSS:", 0) == 0) rss = std::strtod(line.c_str() + 6, nullptr) * 1024.0;
  }
  return std::max(hwm, rss);
}

// Calls `f(pid)` (the /proc entry's name) for every live process of the group.
void for_each_in_group(pid_t pgid, const std::function<void(const char* pid)>& f) {
  DIR* d = ::opendir("/proc");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (proc_pgrp(e->d_name) == pgid) f(e->d_name);
  }
  ::closedir(d);
}

// Sum over every live process of the group. VmHWM is each process's own peak,
// so the sum can exceed the group's true simultaneous peak when members peak
// at different times; it is the bound the DESIGN asks for ("sum of VmHWM").
double group_ram_bytes(pid_t pgid, std::set<long>* members) {
  double sum = 0;
  for_each_in_group(pgid, [&](const char* pid) {
    sum += proc_peak_bytes(pid);
    if (members) members->insert(std::strtol(pid, nullptr, 10));
  });
  return sum;
}

// The kernel's count of OOM kills since boot (/proc/vmstat, Linux 4.13+);
// -1 when unknown.
long long oom_kill_count() {
  std::ifstream in("/proc/vmstat");
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return -1;
}

// Microseconds on the clock the kernel log stamps its records with (the
// time since boot, as CLOCK_MONOTONIC counts it).
long long kernel_clock_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

// What the kernel log says the OOM killer killed since `since_us` ("Killed
// process 1531 (python3)"): those of `pids` as "python3 (pid 1531)", and how
// many others. Needs /dev/kmsg to be readable (root, or
// kernel.dmesg_restrict=0); readable is false otherwise.
struct KernelOomLog {
  bool readable = false;
  std::string ours;
  int others = 0;
};

KernelOomLog kernel_oom_log(const std::set<long>& pids, long long since_us) {
  KernelOomLog log;
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return log;
  log.readable = true;
  std::array<char, 8192> rec;
  for (;;) {
    const ssize_t n = ::read(fd, rec.data(), rec.size() - 1);  // one record per read
    if (n < 0 && errno == EPIPE) continue;  // overwritten while reading: go on
    if (n <= 0) break;
    rec[static_cast<std::size_t>(n)] = '\0';
    const char* k = std::strstr(rec.data(), "Killed process ");
    if (!k) continue;
    // "priority,sequence,microseconds,flags;message"
    long long stamp = -1;
    if (const char* c1 = std::strchr(rec.data(), ','))
      if (const char* c2 = std::strchr(c1 + 1, ',')) stamp = std::strtoll(c2 + 1, nullptr, 10);
    if (stamp >= 0 && stamp < since_us) continue;
    char* end = nullptr;
    const long pid = std::strtol(k + 15, &end, 10);
    if (!end) continue;
    if (!pids.count(pid)) {
      ++log.others;
      continue;
    }
    std::string name;
    if (const char* open = std::strchr(end, '('))
      if (const char* close = std::strchr(open, ')')) name.assign(open + 1, close);
    log.ours += fmt::format("{}{} (pid {})", log.ours.empty() ? "" : ", ", name.empty() ? "a process" : name, pid);
  }
  ::close(fd);
  return log;
}

// In the child, before exec or body: async-signal-safe calls only.
void child_setup(int out_fd, int err_fd, const std::vector<int>& cpus, pid_t parent) {
  ::setpgid(0, 0);
  // If the tuner dies (SIGKILL, a crash), the trial must not run on holding a
  // GPU: the kernel kills it with its parent thread. Survives exec, so with a
  // shell that execs its last command (dash, bash -c) the script gets it too.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the tuner died before prctl
  // Default dispositions and an empty mask: the tuner's handlers and the
  // forking thread's mask must not leak into the trial.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) ::signal(s, SIG_DFL);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
    if (devnull != 0) ::close(devnull);
  }
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  if (!cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    ::sched_setaffinity(0, sizeof set, &set);
  }
}

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

void child_fail(const char* what, const char* detail) {
  const char* msg = std::strerror(errno);  // not strictly async-signal-safe; glibc's is fine here
  write_all(2, "autotune: ", 10);
  write_all(2, what, std::strlen(what));
  write_all(2, " ", 1);
  write_all(2, detail, std::strlen(detail));
  write_all(2, ": ", 2);
  write_all(2, msg, std::strlen(msg));
  write_all(2, "\n", 1);
  ::_exit(127);
}

// Looks a program up in PATH the way execvp would, before fork.
std::string resolve_program(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path;
  if (auto it = env.find("PATH"); it != env.end()) path = it->second;
  else if (const char* p = std::getenv("PATH")) path = p;
  else path = "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

void write_log(const std::filesystem::path& dir, const char* name, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out << text;
}

// The parent side shared by run_forked and run_external: `pid` is the child,
// in its own group; the read ends of its pipes. Returns when the child has
// exited (or was killed) and the group is gone.
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
    std::error_code ec;
    if (std::filesystem::file_size(opt.result_file, ec) == 0 || ec) return false;
    std::ifstream in(opt.result_file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false).is_object();
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

}  // namespace

ExternalRun run_forked(const std::function<int(int result_fd)>& body, const ChildOptions& opt) {
  const auto t0 = Clock::now();
  Fd out_r, out_w, err_r, err_w, res_r, res_w;
  ExternalRun failed;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) || !make_pipe(res_r, res_w)) {
    failed.spawn_error = fmt::format("pipe: {}", std::strerror(errno));
    return failed;
  }
  std::fflush(nullptr);  // buffered output must not be written twice
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    failed.spawn_error = fmt::format("fork: {}", std::strerror(errno));
    return failed;
  }
  if (pid == 0) {
    child_setup(out_w.fd, err_w.fd, opt.cpus, parent);
    int code = 127;
    try {
      code = body(res_w.fd);
    } catch (...) {
      code = 127;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  out_w.reset();
  err_w.reset();
  res_w.reset();
  return supervise(pid, out_r, err_r, &res_r, opt, t0);
}

namespace {

// Starts `cmd` as a child in its own process group with its output on two
// pipes (the read ends returned in out_r/err_r). Returns its pid, or -1
// with `error` set.
pid_t spawn_external(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                     const ChildOptions& opt, Fd& out_r, Fd& err_r, std::string& error) {
  if (cmd.argv.empty()) {
    error = "empty command";
    return -1;
  }
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (the tuner may have other threads).
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : extra_env) env[k] = v;
  for (const auto& [k, v] : cmd.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  const std::string program = resolve_program(args[0], env);
  if (program.empty()) {
    error = fmt::format("'{}' not found in PATH", args[0]);
    return -1;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string cwd = cmd.cwd.string();

  Fd out_w, err_w;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w)) {
    error = fmt::format("pipe: {}", std::strerror(errno));
    return -1;
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    error = fmt::format("fork: {}", std::strerror(errno));
    return -1;
  }
  if (pid == 0) {
    child_setup(out_w.fd, err_w.fd, opt.cpus, parent);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) child_fail("chdir", cwd.c_str());
    // Descriptors the tuner (or another slot's thread) opened without
    // O_CLOEXEC must not reach the trial: a leaked pipe end would keep
    // another trial's output open.
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::execve(program.c_str(), argv.data(), envp.data());
    child_fail("exec", program.c_str());
  }
  return pid;
}

void remove_stale_result(const ExternalCommand& cmd) {
  if (cmd.result_file.empty()) return;
  std::error_code ec;
  std::filesystem::remove(cmd.result_file, ec);  // fresh: a stale result must not count
}

ChildOptions watched_options(const ExternalCommand& cmd, const ChildOptions& opt) {
  ChildOptions watched = opt;
  watched.result_file = cmd.result_file;
  watched.exit_grace_s = cmd.exit_grace_s;
  return watched;
}

void take_result(const ExternalCommand& cmd, ExternalRun& run) {
  run.via_shell = cmd.via_shell;
  if (cmd.result_file.empty()) return;
  std::ifstream in(cmd.result_file, std::ios::binary);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    run.result = ss.str();
  }
  if (!cmd.keep_result_file) {
    std::error_code ec;
    std::filesystem::remove(cmd.result_file, ec);
  }
}

// Resets the peak-memory counter (VmHWM) of every process in the group, so
// that the next trial's peak is its own (Linux: clear_refs 5).
void reset_group_peaks(pid_t pgid) {
  for_each_in_group(pgid, [](const char* pid) { std::ofstream(std::string("/proc/") + pid + "/clear_refs") << "5"; });
}

// The warm protocol's files in the worker's folder (AUTOTUNE_WARM_DIR).
constexpr const char* kWarmNext = "next.json";  // the next trial's environment, from the tuner
constexpr const char* kWarmStop = "stop";       // no more trials
std::filesystem::path warm_ready_file(const std::filesystem::path& dir, const std::string& trial) {
  return dir / ("ready-" + trial);  // the worker is done with `trial`
}

}  // namespace

void warm_trial_over(const std::filesystem::path& dir, const std::string& trial) {
  write_atomically(warm_ready_file(dir, trial), "");
}

bool warm_next_trial(const std::filesystem::path& dir) {
  const auto next = dir / kWarmNext;
  std::error_code ec;
  while (true) {
    if (std::filesystem::exists(next, ec)) {
      std::ifstream in(next);
      std::stringstream ss;
      ss << in.rdbuf();
      std::filesystem::remove(next, ec);
      const auto message = nlohmann::json::parse(ss.str());
      std::vector<std::string> old;
      for (char** e = environ; *e; ++e) {
        const std::string kv(*e);
        if (kv.rfind("AUTOTUNE_", 0) == 0) old.push_back(kv.substr(0, kv.find('=')));
      }
      for (const auto& k : old)
        if (k != "AUTOTUNE_WARM_DIR") ::unsetenv(k.c_str());
      for (const auto& [k, v] : message.at("env").items()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
      return true;
    }
    if (std::filesystem::exists(dir / kWarmStop, ec) || ::getppid() == 1) return false;
    ::usleep(5000);
  }
}

ExternalRun run_external(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                         const ChildOptions& opt) {
  const auto t0 = Clock::now();
  remove_stale_result(cmd);
  Fd out_r, err_r;
  ExternalRun run;
  const pid_t pid = spawn_external(cmd, extra_env, opt, out_r, err_r, run.spawn_error);
  if (pid < 0) return run;
  run = supervise(pid, out_r, err_r, nullptr, watched_options(cmd, opt), t0);
  take_result(cmd, run);
  return run;
}

ExternalRun WarmWorker::run(const ExternalCommand& cmd, const std::map<std::string, std::string>& extra_env,
                            const ChildOptions& opt) {
  const auto t0 = Clock::now();
  remove_stale_result(cmd);
  const std::string trial = cmd.env.count("AUTOTUNE_TRIAL") ? cmd.env.at("AUTOTUNE_TRIAL") : std::string();
  Fd out_r, err_r;
  if (m_pid > 0) {
    // A worker that ended while idle (its script returned, a crash between
    // trials) did not run this trial: a fresh one does.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == m_pid)
      stop();
  }
  if (m_pid > 0) {
    out_r.fd = m_out;
    err_r.fd = m_err;
    reset_group_peaks(m_pid);
    nlohmann::json env = nlohmann::json::object();
    for (const auto& [k, v] : cmd.env)
      if (k.rfind("AUTOTUNE_", 0) == 0) env[k] = v;
    write_atomically(m_dir / kWarmNext, nlohmann::json{{"env", env}}.dump());
  } else {
    std::error_code ec;
    const auto base = std::filesystem::temp_directory_path(ec);
    static std::atomic<unsigned> counter{0};
    m_dir = (ec ? std::filesystem::path("/tmp") : base) /
            fmt::format("autotune-warm-{}-{}", ::getpid(), counter++);
    std::filesystem::remove_all(m_dir, ec);
    std::filesystem::create_directories(m_dir, ec);
    ExternalCommand first = cmd;
    first.env["AUTOTUNE_WARM_DIR"] = m_dir.string();
    ExternalRun failed;
    // Forked from a thread of its own that lives as long as the worker: the
    // kernel kills a child whose parent *thread* ends (PR_SET_PDEATHSIG),
    // and the slot's thread that asks for this trial ends with it.
    std::promise<pid_t> started;
    auto pid = started.get_future();
    m_release = false;
    m_keeper = std::thread([&, this] {
      started.set_value(spawn_external(first, extra_env, opt, out_r, err_r, failed.spawn_error));
      std::unique_lock<std::mutex> lock(m_mu);
      m_cv.wait(lock, [this] { return m_release; });
    });
    m_pid = pid.get();
    if (m_pid < 0) {
      stop();
      return failed;
    }
  }
  ChildOptions watched = watched_options(cmd, opt);
  const std::filesystem::path ready = warm_ready_file(m_dir, trial);
  watched.trial_done = [&ready] {
    std::error_code ec;
    return std::filesystem::exists(ready, ec);
  };
  ExternalRun run = supervise(m_pid, out_r, err_r, nullptr, watched, t0);
  take_result(cmd, run);
  if (run.worker_kept) {
    std::error_code ec;
    std::filesystem::remove(ready, ec);
    m_out = std::exchange(out_r.fd, -1);
    m_err = std::exchange(err_r.fd, -1);
  } else {
    m_out = m_err = -1;  // closed with out_r and err_r
    m_pid = -1;          // reaped, its group killed
    stop();
  }
  return run;
}

void WarmWorker::stop() {
  if (m_pid > 0) {
    // Asked first (trials() returns and the script ends as it would),
    // then its group killed; reaped either way.
    write_atomically(m_dir / kWarmStop, "");
    const auto t0 = Clock::now();
    int status = 0;
    while (::waitpid(m_pid, &status, WNOHANG) == 0 && since(t0) < 2.0) ::usleep(10000);
    ::killpg(m_pid, SIGKILL);
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
  }
  if (m_keeper.joinable()) {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_release = true;
    }
    m_cv.notify_all();
    m_keeper.join();
  }
  for (int* fd : {&m_out, &m_err})
    if (*fd >= 0) ::close(std::exchange(*fd, -1));
  if (!m_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
    m_dir.clear();
  }
}

std::optional<Outcome> classify_termination(const ExternalRun& run) {
  if (!run.spawn_error.empty()) return Outcome::failure(Status::error, "could not start: " + run.spawn_error);
  if (run.cancelled) return Outcome::failure(Status::timeout, "stopped: the tuner was interrupted");
  if (run.stopped_after_result) return std::nullopt;  // its result decides, as if it had exited
  if (run.timed_out)
    return Outcome::failure(Status::timeout, run.signal == SIGKILL ? "timed out; killed after the grace period"
                                                                   : "timed out; stopped by SIGTERM");
  if (run.signal == 0) return std::nullopt;
  if (status_of_signal(run.signal) == Status::host_oom)
    return Outcome::failure(Status::host_oom,
                            run.oom_killed.empty()
                                ? std::string("killed by SIGKILL that the tuner did not send (the kernel's OOM killer?)")
                                : fmt::format("killed by SIGKILL: the kernel's OOM killer killed {}", run.oom_killed));
  return Outcome::failure(Status::crash, fmt::format("killed by signal {} ({}: {})", run.signal,
                                                     signal_name(run.signal), ::strsignal(run.signal)));
}

std::optional<Status> find_oom_message(std::string_view text, std::string* what) {
  // Device allocation failures, as the frameworks print them. Matched
  // case-sensitively and as whole phrases, so a log line that merely
  // mentions "memory" does not count.
  static constexpr std::string_view kDevice[] = {
      "CUDA out of memory",           // torch: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate"
      "OutOfMemoryError",             // torch.cuda.OutOfMemoryError / torch.OutOfMemoryError in a traceback
      "CUDA error: out of memory",    // torch/driver via cudaGetErrorString
      "HIP out of memory",            // ROCm builds of torch
      "CUBLAS_STATUS_ALLOC_FAILED",   // cuBLAS workspace / handle
      "CUDNN_STATUS_ALLOC_FAILED",
      "cudaErrorMemoryAllocation",    // runtime API (also thrust's bad_alloc text)
      "CUDA_ERROR_OUT_OF_MEMORY",     // driver API
      "RESOURCE_EXHAUSTED: Out of memory",  // JAX / XLA
      "OOM when allocating tensor",   // TensorFlow
  };
  // Host allocation failures: a configuration whose RAM does not fit.
  static constexpr std::string_view kHost[] = {
      "std::bad_alloc",  // C++ new
      "\nMemoryError",   // Python, at the start of the traceback's last line
  };
  for (auto p : kDevice)
    if (text.find(p) != std::string_view::npos) {
      if (what) *what = std::string(p);
      return Status::oom;
    }
  for (auto p : kHost)
    if (text.find(p) != std::string_view::npos || text.substr(0, p.size() - 1) == p.substr(1)) {
      if (what) *what = std::string(p[0] == '\n' ? p.substr(1) : p);
      return Status::host_oom;
    }
  return std::nullopt;
}

std::string tail_for_reason(std::string_view text, std::size_t max_bytes) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.size() <= max_bytes) return std::string(text);
  return "..." + std::string(text.substr(text.size() - max_bytes));
}

std::string stderr_said(const ExternalRun& run) {
  const std::string line = last_line(run.stderr_tail);
  return line.empty() ? std::string() : ": " + tail_for_reason(line, 300);
}

std::string output_tails(const ExternalRun& run, const std::filesystem::path& log_dir) {
  if (!log_dir.empty()) return {};
  std::string s;
  if (!run.stdout_tail.empty()) s += "\n--- stdout (tail) ---\n" + tail_for_reason(run.stdout_tail, 1500);
  if (!run.stderr_tail.empty()) s += "\n--- stderr (tail) ---\n" + tail_for_reason(run.stderr_tail, 1500);
  return s;
}

}  // namespace autotune
