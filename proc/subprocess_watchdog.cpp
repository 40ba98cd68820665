// The watchdog: one small process, forked from the tuner at its first trial,
// that kills every trial's process group once the tuner is gone, however it
// went (SIGKILL included). PR_SET_PDEATHSIG reaches only the direct child:
// with `cd data && python3 train.py` the shell dies with the tuner and
// python3 runs on under PID 1, holding the GPU.
//
// The tuner holds the only writing end of a socket whose other end the
// watchdog reads; it says "watch group G" as a trial starts and "forget G"
// just before it reaps the group; a trial's child waits to run until its
// group is told (StartGate, subprocess_spawn.cpp). The kernel closes the
// tuner's end when it dies: the watchdog reads end-of-file, SIGKILLs every
// group still watched and exits. It sits in a process group of its own, so that a signal to the
// tuner's group (a shell's `kill -9 %1`) does not take it too, and ignores
// the terminal's signals; the tuner's end is close-on-exec, and a forked
// child that does not exec lets go of it (forget_watchdog_in_child).
#include "proc/subprocess_detail.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <set>

namespace autotune::subproc {
namespace {

struct WatchMessage {
  std::int32_t op;    // kWatch or kForget
  std::int32_t pgid;
};
constexpr std::int32_t kWatch = 1, kForget = 2;

// The watchdog's table of groups (its own copy after fork; no allocation there).
constexpr int kMaxWatched = 4096;
pid_t g_watched[kMaxWatched];

// The tuner's side.
std::mutex g_watch_mutex;
int g_watch_fd = -1;        // the writing end
pid_t g_watch_owner = -1;   // the process that started the watchdog (a fork starts its own)
pid_t g_watchdog_pid = -1;
std::set<pid_t> g_watched_groups;

// After fork, in the watchdog: async-signal-safe calls only.
[[noreturn]] void watchdog_main(int fd) {
  ::setpgid(0, 0);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(s, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_NAME, "autotune-watch");
  // Nothing of the tuner's stays open here: not a trial's pipe (its reader
  // would wait for this process), not the terminal or a caller's pipe. The
  // socket is moved out of 0-2 first (a tuner started with stdin closed).
  const int kept = ::fcntl(fd, F_DUPFD, 10);
  if (kept < 0) ::_exit(1);
  const int null = ::open("/dev/null", O_RDWR);
  for (int std_fd = 0; std_fd < 3; ++std_fd)
    if (null >= 0) ::dup2(null, std_fd);
  ::dup2(kept, 3);
  ::syscall(SYS_close_range, 4U, ~0U, 0U);
  int count = 0;
  char buf[sizeof(WatchMessage) * 64];
  std::size_t have = 0;
  for (;;) {
    const ssize_t n = ::read(3, buf + have, sizeof buf - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the tuner is gone
    have += static_cast<std::size_t>(n);
    std::size_t at = 0;
    for (; at + sizeof(WatchMessage) <= have; at += sizeof(WatchMessage)) {
      WatchMessage m;
      __builtin_memcpy(&m, buf + at, sizeof m);
      if (m.op == kWatch && count < kMaxWatched) {
        g_watched[count++] = m.pgid;
      } else if (m.op == kForget) {
        for (int i = 0; i < count; ++i)
          if (g_watched[i] == m.pgid) {
            g_watched[i] = g_watched[--count];
            break;
          }
      }
    }
    for (std::size_t i = at; i < have; ++i) buf[i - at] = buf[i];
    have -= at;
  }
  for (int i = 0; i < count; ++i) ::kill(-g_watched[i], SIGKILL);
  ::_exit(0);
}

bool start_watchdog_locked() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(sv[0]);
    ::close(sv[1]);
    return false;
  }
  if (pid == 0) watchdog_main(sv[1]);
  ::close(sv[1]);
  ::shutdown(sv[0], SHUT_RD);
  g_watch_fd = sv[0];
  g_watch_owner = ::getpid();
  g_watchdog_pid = pid;
  return true;
}

bool send_locked(std::int32_t op, pid_t pgid) {
  const WatchMessage m{op, static_cast<std::int32_t>(pgid)};
  for (;;) {
    const ssize_t n = ::send(g_watch_fd, &m, sizeof m, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(sizeof m)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// A watchdog that died (someone killed it) is replaced, told every group
// watched so far.
void send_or_restart_locked(std::int32_t op, pid_t pgid) {
  if (send_locked(op, pgid)) return;
  ::close(g_watch_fd);
  g_watch_fd = -1;
  ::waitpid(g_watchdog_pid, nullptr, WNOHANG);
  if (!start_watchdog_locked()) return;
  for (pid_t g : g_watched_groups) send_locked(kWatch, g);
}

}  // namespace

void watch_group(pid_t pgid) {
  const std::lock_guard<std::mutex> lock(g_watch_mutex);
  if (g_watch_owner != ::getpid()) {  // a forked copy of a tuner: its own watchdog
    if (g_watch_fd >= 0) ::close(g_watch_fd);
    g_watch_fd = -1;
    g_watched_groups.clear();
  }
  // Without a watchdog (no fork possible) the trial still has PR_SET_PDEATHSIG.
  if (g_watch_fd < 0 && !start_watchdog_locked()) return;
  g_watched_groups.insert(pgid);
  send_or_restart_locked(kWatch, pgid);
}

void forget_group(pid_t pgid) {
  const std::lock_guard<std::mutex> lock(g_watch_mutex);
  if (g_watch_owner != ::getpid() || g_watch_fd < 0) return;
  g_watched_groups.erase(pgid);
  send_or_restart_locked(kForget, pgid);
}

void forget_watchdog_in_child() {
  if (g_watch_fd >= 0) ::close(g_watch_fd);
}

}  // namespace autotune::subproc
