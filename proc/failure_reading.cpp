#include "proc/failure_reading.hpp"

#include <signal.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>
#include <vector>

#include <fmt/format.h>

namespace autotune {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Lines of `text`, last first, trimmed, blank ones skipped.
std::vector<std::string_view> lines_backwards(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = text.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    auto line = trim(text.substr(start, end - start));
    if (!line.empty()) out.push_back(line);
    if (start == 0) break;
    end = start - 1;
  }
  return out;
}

bool contains_nocase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return false;
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != hay.end();
}

std::string format_mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

constexpr std::string_view kShmBusError = "Unexpected bus error encountered in worker";

FailureReading shm_failure(std::string_view line) {
  return {Status::host_oom, fmt::format("{} ({}: shared memory for DataLoader batches ran out; fewer workers, "
                                        "a smaller prefetch or batch, or a larger --shm-size)",
                                        line, shm_summary())};
}

// PyTorch's DataLoader, from the main process (torch/csrc/DataLoader.cpp and
// torch/utils/data/dataloader.py), and the worker's own shm message.
std::optional<FailureReading> read_dataloader(const std::vector<std::string_view>& lines) {
  static const std::regex killed(R"(DataLoader worker \(pid \d+\) is killed by signal: ([^.]+)\.?)");
  // A worker's own report and the main process's "killed by signal" name the
  // signal; "exited unexpectedly" follows both, so it is read only when
  // neither is there.
  for (auto line : lines) {
    if (line.find(kShmBusError) != std::string_view::npos) return shm_failure(line);
    if (line.find("Unexpected segmentation fault encountered in worker") != std::string_view::npos)
      return FailureReading{Status::crash, std::string(line)};
  }
  for (auto line : lines) {
    std::match_results<std::string_view::const_iterator> m;
    if (std::regex_search(line.begin(), line.end(), m, killed)) {
      const std::string what = m[1].str();
      const std::string said = m[0].str();
      if (what == ::strsignal(SIGBUS)) return shm_failure(said);
      if (what == ::strsignal(SIGKILL))
        return FailureReading{Status::host_oom, said + " (SIGKILL: the kernel's OOM killer, most likely)"};
      return FailureReading{Status::crash, said};
    }
  }
  for (auto line : lines)
    // A worker that vanished without its signal being caught: the OOM
    // killer, nearly always (torch/utils/data/dataloader.py).
    if (line.find("DataLoader worker (pid(s)") != std::string_view::npos &&
        line.find("exited unexpectedly") != std::string_view::npos && line.find("raise ") == std::string_view::npos)
      return FailureReading{Status::host_oom,
                            std::string(line) + " (a worker vanished: the kernel's OOM killer, most likely)"};
  // A worker killed while the main process takes a batch's shared memory
  // from it (torch/multiprocessing/reductions.py's rebuild_storage_fd, over
  // multiprocessing's resource_sharer connection to that worker): when the
  // kill beats PyTorch's own look at its workers, the traceback ends in the
  // connection's error, with neither message above (seen in about a third of
  // runs of a worker SIGKILLed a few milliseconds after sending a batch).
  if (!lines.empty()) {
    bool handover = false, in_loader = false;
    for (auto line : lines) {
      handover = handover || line.find("rebuild_storage_fd") != std::string_view::npos;
      in_loader = in_loader || line.find("torch/utils/data/dataloader.py") != std::string_view::npos;
    }
    const std::string_view last = lines.front();
    static constexpr std::string_view kLostConnection[] = {"EOFError", "ConnectionRefusedError",
                                                           "ConnectionResetError", "FileNotFoundError"};
    const bool lost = std::any_of(std::begin(kLostConnection), std::end(kLostConnection),
                                  [&](std::string_view e) { return last.rfind(e, 0) == 0; });
    if (handover && in_loader && lost)
      return FailureReading{Status::host_oom,
                            std::string(last) + " while taking a batch from a DataLoader worker (the worker "
                                                "vanished: the kernel's OOM killer, most likely)"};
  }
  return std::nullopt;
}

// torch.distributed.elastic's ChildFailedError summary of a failed rank.
std::optional<FailureReading> read_elastic(const std::vector<std::string_view>& lines) {
  static const std::regex exitcode(R"(exitcode\s*:\s*-(\d+))");
  static const std::regex received(R"(Signal (\d+) \((SIG\w+)\) received by PID \d+)");
  std::optional<int> sig;
  std::string reason;
  for (auto line : lines) {  // last first: the root cause is listed last
    std::match_results<std::string_view::const_iterator> m;
    if (reason.empty() && std::regex_search(line.begin(), line.end(), m, received)) {
      sig = std::stoi(m[1].str());
      reason = m[0].str();
    } else if (!sig && std::regex_search(line.begin(), line.end(), m, exitcode)) {
      sig = std::stoi(m[1].str());
      reason = std::string(line);
    }
    if (sig && !reason.empty() && reason.rfind("Signal", 0) == 0) break;
  }
  if (!sig || *sig <= 0 || *sig >= 65) return std::nullopt;
  const Status s = status_of_signal(*sig);
  return FailureReading{s, fmt::format("torchrun: {}{}", reason,
                                       s == Status::host_oom ? " (not sent by the tuner: the kernel's OOM killer?)"
                                                             : "")};
}

// torch.multiprocessing.spawn's report of a rank that died by a signal, from
// the parent (which stops the other ranks and exits 1): "ProcessExitedException:
// process 1 terminated with signal SIGSEGV" (the signal's Python name).
std::optional<FailureReading> read_spawn(const std::vector<std::string_view>& lines) {
  static const std::regex exited(R"(ProcessExitedException: process (\d+) terminated with signal (SIG[A-Z0-9]+))");
  for (auto line : lines) {  // last first: the exception ends the traceback
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(line.begin(), line.end(), m, exited)) continue;
    const std::string name = m[2].str();
    for (int sig = 1; sig < 65; ++sig) {
      if (signal_name(sig) != name) continue;
      const Status s = status_of_signal(sig);
      return FailureReading{s, fmt::format("torch.multiprocessing.spawn: rank {} terminated with signal {}{}",
                                           m[1].str(), name,
                                           s == Status::host_oom ? " (not sent by the tuner: the kernel's OOM killer?)"
                                                                 : "")};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// A shell reports a job that died by signal N as exit status 128+N and a
// line with the signal's description (dash: "Killed"; bash: "bash: line 1:
// 4667 Killed  python3 train.py"). Both must be there: a script that merely
// calls exit(137) is an error, not a kill.
std::optional<FailureReading> read_shell(const std::vector<std::string_view>& lines, int exit_code) {
  if (exit_code <= 128 || exit_code >= 128 + 65) return std::nullopt;
  const int sig = exit_code - 128;
  const char* desc = ::strsignal(sig);
  if (!desc) return std::nullopt;
  for (auto line : lines) {
    if (!contains_nocase(line, desc)) continue;
    const Status s = status_of_signal(sig);
    return FailureReading{s, fmt::format("the shell reported '{}' (exit status {}: {}{})", line, exit_code,
                                         signal_name(sig),
                                         s == Status::host_oom ? ", not sent by the tuner: the kernel's OOM killer?"
                                                               : "")};
  }
  return std::nullopt;
}

}  // namespace

Status status_of_signal(int signal) { return signal == SIGKILL ? Status::host_oom : Status::crash; }

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", signal);
}

std::string shm_summary(const char* path) {
  struct statvfs st {};
  if (::statvfs(path, &st) != 0) return fmt::format("{} could not be read: {}", path, std::strerror(errno));
  const double size = static_cast<double>(st.f_blocks) * static_cast<double>(st.f_frsize);
  const double avail = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
  return fmt::format("{} is {}, {} free now", path, format_mib(size), format_mib(avail));
}

std::string last_line(std::string_view text) {
  auto lines = lines_backwards(text);
  return lines.empty() ? std::string() : std::string(lines.front());
}

std::optional<FailureReading> read_reported_failure(std::string_view stderr_tail, int exit_code, bool via_shell) {
  const auto lines = lines_backwards(stderr_tail);
  if (auto r = read_dataloader(lines)) return r;
  if (auto r = read_elastic(lines)) return r;
  if (auto r = read_spawn(lines)) return r;
  if (via_shell)
    if (auto r = read_shell(lines, exit_code)) return r;
  return std::nullopt;
}

}  // namespace autotune
