// The trial's process group as /proc and the kernel log see it: its
// members' peak memory and the OOM killer's victims among them.
#include "proc/subprocess_detail.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <fmt/format.h>

namespace autotune::subproc {
namespace {

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

// VmRSS of one process in bytes; 0 when gone or a kernel thread.
double proc_rss_bytes(const char* pid) {
  char path[300];
  std::snprintf(path, sizeof path, "/proc/%s/status", pid);
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) * 1024.0;
  return 0;
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

}  // namespace

double group_ram_bytes(pid_t pgid, std::set<long>* members) {
  double sum = 0;
  for_each_in_group(pgid, [&](const char* pid) {
    sum += proc_peak_bytes(pid);
    if (members) members->insert(std::strtol(pid, nullptr, 10));
  });
  return sum;
}

double group_rss_bytes(pid_t pgid) {
  double sum = 0;
  for_each_in_group(pgid, [&](const char* pid) { sum += proc_rss_bytes(pid); });
  return sum;
}

long long oom_kill_count() {
  std::ifstream in("/proc/vmstat");
  std::string key;
  long long value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return -1;
}

long long kernel_clock_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

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

void reset_group_peaks(pid_t pgid) {
  for_each_in_group(pgid, [](const char* pid) { std::ofstream(std::string("/proc/") + pid + "/clear_refs") << "5"; });
}

}  // namespace autotune::subproc
