#include "tuner/run/machine_load.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace autotune {
namespace {

double ticks_per_second() {
  static const double hz = [] {
    const long t = ::sysconf(_SC_CLK_TCK);
    return t > 0 ? static_cast<double>(t) : 100.0;
  }();
  return hz;
}

// Busy CPU ticks of the whole machine, from /proc/stat's first line.
std::optional<double> machine_busy_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  if (!(in >> cpu) || cpu != "cpu") return std::nullopt;
  // user nice system idle iowait irq softirq steal (guest is inside user)
  double v[8] = {};
  for (double& x : v)
    if (!(in >> x)) return std::nullopt;
  return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

struct ProcTimes {
  long ppid = 0;
  double ticks = 0;  // utime + stime + cutime + cstime
};

// One /proc/PID/stat: the parent and the CPU ticks, or nullopt (gone, unreadable).
std::optional<ProcTimes> read_proc(const char* pid) {
  std::ifstream in(std::string("/proc/") + pid + "/stat");
  if (!in) return std::nullopt;
  std::string text;
  std::getline(in, text);
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  ProcTimes t;
  // fields from 3 (state): ppid is 4, utime 14, stime 15, cutime 16, cstime 17
  for (int i = 3; i <= 17 && rest >> field; ++i) {
    if (i == 4) t.ppid = std::strtol(field.c_str(), nullptr, 10);
    if (i >= 14) t.ticks += std::strtod(field.c_str(), nullptr);
  }
  return t;
}

// CPU ticks of this process and all its live descendants; their pids in `pids`.
double tree_ticks(std::vector<long>* pids = nullptr) {
  std::unordered_map<long, ProcTimes> procs;
  if (DIR* d = ::opendir("/proc")) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      if (auto t = read_proc(e->d_name)) procs.emplace(std::strtol(e->d_name, nullptr, 10), *t);
    }
    ::closedir(d);
  }
  const long self = ::getpid();
  std::unordered_map<long, std::vector<long>> children;
  for (const auto& [pid, t] : procs) children[t.ppid].push_back(pid);
  double sum = 0;
  std::vector<long> todo = {self};
  while (!todo.empty()) {
    const long pid = todo.back();
    todo.pop_back();
    if (auto it = procs.find(pid); it != procs.end()) sum += it->second.ticks;
    if (pids) pids->push_back(pid);
    if (auto it = children.find(pid); it != children.end())
      todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  return sum;
}

}  // namespace

LoadSnapshot take_load_snapshot() {
  LoadSnapshot s;
  s.at = std::chrono::steady_clock::now();
  const auto busy = machine_busy_ticks();
  if (!busy) return s;
  s.ours_s = tree_ticks() / ticks_per_second();
  s.machine_busy_s = *busy / ticks_per_second();
  s.valid = true;
  return s;
}

std::optional<double> foreign_cores(const LoadSnapshot& from, const LoadSnapshot& to) {
  if (!from.valid || !to.valid) return std::nullopt;
  const double wall = std::chrono::duration<double>(to.at - from.at).count();
  if (wall < 0.05) return std::nullopt;
  const double foreign = (to.machine_busy_s - from.machine_busy_s) - (to.ours_s - from.ours_s);
  return std::max(0.0, foreign / wall);
}

namespace {
// `nvidia_smi args`' standard output; nullopt when it cannot run or fails.
std::optional<std::string> smi_output(const std::string& nvidia_smi, const std::string& args) {
  const std::string cmd = nvidia_smi + " " + args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0 && text.size() < (1u << 20);) text.append(buf, n);
  if (::pclose(p) != 0) return std::nullopt;
  return text;
}

// The comma-separated fields of a CSV line, trimmed.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) {
    const auto a = f.find_first_not_of(" \t\r"), b = f.find_last_not_of(" \t\r");
    out.push_back(a == std::string::npos ? std::string() : f.substr(a, b - a + 1));
  }
  return out;
}
}  // namespace

std::optional<GpuSnapshot> take_gpu_snapshot(const std::string& nvidia_smi) {
  const auto devices = smi_output(nvidia_smi, "--query-gpu=index,uuid --format=csv,noheader");
  const auto apps = smi_output(nvidia_smi, "--query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits");
  if (!devices || !apps) return std::nullopt;
  GpuSnapshot s;
  std::istringstream dl(*devices);
  for (std::string line; std::getline(dl, line);)
    if (const auto f = fields(line); f.size() >= 2 && !f[0].empty()) s.devices.emplace_back(f[0], f[1]);
  const std::vector<long> ours = autotune_pids();
  std::istringstream al(*apps);
  for (std::string line; std::getline(al, line);) {
    const auto f = fields(line);
    if (f.empty()) continue;
    char* end = nullptr;
    const long pid = std::strtol(f[0].c_str(), &end, 10);
    if (end == f[0].c_str() || pid <= 0) continue;  // "[Not Supported]" and the like
    if (std::find(ours.begin(), ours.end(), pid) != ours.end()) continue;
    s.others.push_back({pid, f.size() > 1 ? std::strtod(f[1].c_str(), nullptr) * 1024 * 1024 : 0.0,
                        f.size() > 2 ? f[2] : std::string()});
  }
  return s;
}

std::vector<std::string> named_gpus(const std::vector<std::pair<std::string, std::string>>& devices,
                                    std::string_view names) {
  // CUDA_VISIBLE_DEVICES style: indices or UUIDs, or their prefixes.
  std::vector<std::string> uuids;
  std::istringstream in{std::string(names)};
  for (std::string d; std::getline(in, d, ',');) {
    if (d.empty()) continue;
    for (const auto& [index, uuid] : devices)
      if (d == index || (d.size() >= 5 && uuid.rfind(d, 0) == 0)) uuids.push_back(uuid);
  }
  return uuids;
}

std::vector<long> autotune_pids() {
  std::vector<long> ours;
  tree_ticks(&ours);
  return ours;
}

GpuOthers foreign_gpu_use(const GpuSnapshot& s, std::string_view devices) {
  // None named: every one.
  const std::vector<std::string> uuids = named_gpus(s.devices, devices);
  GpuOthers out;
  for (const GpuSnapshot::App& a : s.others)
    if (uuids.empty() || a.gpu.empty() || std::find(uuids.begin(), uuids.end(), a.gpu) != uuids.end()) {
      ++out.processes;
      out.bytes += a.bytes;
    }
  return out;
}

std::optional<double> sample_foreign_cores(double seconds) {
  const LoadSnapshot a = take_load_snapshot();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return foreign_cores(a, take_load_snapshot());
}

}  // namespace autotune
