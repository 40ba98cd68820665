// Starting a trial's child: forked to run a body in this program
// (run_forked) or exec'ing a command (spawn_external), in its own process
// group, with the tuner's signal handling and descriptors left behind.
#include "proc/subprocess_detail.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace autotune::subproc {
namespace {

bool make_pipe(Fd& r, Fd& w) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  r.fd = p[0];
  w.fd = p[1];
  return true;
}

// The child waits at the gate until the tuner has told the watchdog of its
// group: a tuner killed in between (SIGKILL just after fork) must not leave
// what the trial starts unwatched. The child's own copy of the writing end
// is closed first, so that the tuner's death reads as end-of-file.
struct StartGate {
  Fd r, w;
  bool open() { return make_pipe(r, w); }
  void child_waits() {  // async-signal-safe
    ::close(w.fd);
    char c = 0;
    ssize_t n;
    while ((n = ::read(r.fd, &c, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) ::_exit(126);
    ::close(r.fd);
  }
  void parent_opens(pid_t pid) {
    r.reset();
    watch_group(pid);
    const char c = 1;
    while (::write(w.fd, &c, 1) < 0 && errno == EINTR) {
    }
    w.reset();
  }
};

// In the child, before exec or body: async-signal-safe calls only.
void child_setup(int out_fd, int err_fd, const std::vector<int>& cpus, pid_t parent) {
  ::setpgid(0, 0);
  // If the tuner dies (SIGKILL, a crash), the trial must not run on holding a
  // GPU: the kernel kills it with its parent thread. Survives exec, so with a
  // shell that execs its last command (dash, bash -c) the script gets it too.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the tuner died before prctl
  // What the shell or launcher starts escapes that; the watchdog covers it.
  forget_watchdog_in_child();
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

}  // namespace

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
    // A trial's AUTOTUNE_* are its own: one exported in the user's shell
    // (AUTOTUNE_NUM_WORKERS=8 from an earlier experiment) would reach every
    // trial as a knob value that is not in the space.
    if (kv.rfind("AUTOTUNE_", 0) == 0 && !cmd.pass_autotune_env) continue;
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
  StartGate gate;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) || !gate.open()) {
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
    gate.child_waits();
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) child_fail("chdir", cwd.c_str());
    // Descriptors the tuner (or another slot's thread) opened without
    // O_CLOEXEC must not reach the trial: a leaked pipe end would keep
    // another trial's output open.
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    ::execve(program.c_str(), argv.data(), envp.data());
    child_fail("exec", program.c_str());
  }
  gate.parent_opens(pid);
  return pid;
}

}  // namespace autotune::subproc

namespace autotune {

ExternalRun run_forked(const std::function<int(int result_fd)>& body, const ChildOptions& opt) {
  const auto t0 = subproc::Clock::now();
  subproc::Fd out_r, out_w, err_r, err_w, res_r, res_w;
  ExternalRun failed;
  subproc::StartGate gate;
  if (!subproc::make_pipe(out_r, out_w) || !subproc::make_pipe(err_r, err_w) || !subproc::make_pipe(res_r, res_w) ||
      !gate.open()) {
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
    subproc::child_setup(out_w.fd, err_w.fd, opt.cpus, parent);
    gate.child_waits();
    int code = 127;
    try {
      code = body(res_w.fd);
    } catch (...) {
      code = 127;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  gate.parent_opens(pid);
  out_w.reset();
  err_w.reset();
  res_w.reset();
  return subproc::supervise(pid, out_r, err_r, &res_r, opt, t0);
}

}  // namespace autotune
