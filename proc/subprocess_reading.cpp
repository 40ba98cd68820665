// What a finished trial's run says: how it ended, as a status and a
// reason, and what of its output a reason quotes.
#include "proc/subprocess.hpp"

#include "proc/failure_reading.hpp"

#include <signal.h>

#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace autotune {

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
