#pragma once
// The result of one trial. Failure is a value: an out-of-memory, a timeout or a
// crash is an Outcome the search learns from, never an exception.
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace autotune {

enum class Status {
  ok,        // measured; throughput is valid
  oom,       // device memory exhausted (or over the spec's vram limit, enforced by the harness)
  host_oom,  // killed for host memory (SIGKILL without a timeout)
  timeout,   // ran past the trial timeout and was stopped
  crash,     // died by a signal
  error,     // exited non-zero, or produced no parseable result
  invalid,   // measured, but violates a constraint (e.g. RAM over the limit)
};

std::string_view to_string(Status s);
std::optional<Status> parse_status(std::string_view s);
inline constexpr Status kAllStatuses[] = {Status::ok,      Status::oom,   Status::host_oom,
                                          Status::timeout, Status::crash, Status::error,
                                          Status::invalid};

// Failures that say "this configuration does not fit", as opposed to a flaky
// or broken trial: the surrogate's feasibility model learns from these.
bool is_resource_failure(Status s);

// A trial's busy share: how much of its time the compute was busy rather
// than waiting for data, and whether that is a measured data wait
// (compute_busy or data_wait_fraction) rather than a card's utilisation
// (gpu_busy, which also falls where the step waits on its launches).
struct BusyReading {
  double share;
  bool data_wait;
};

struct Outcome {
  Status status = Status::error;
  double throughput = 0.0;                 // samples/s, larger is better; meaningful when ok
  std::map<std::string, double> metrics;   // vram_bytes, ram_bytes, gpu_busy, throughput_rsd, ...
  std::string reason;                      // human-readable why, for failures
  std::map<std::string, std::string> labels;  // non-numeric facts: node, gpus, cpus the trial had
  double seconds = 0.0;                    // wall time the trial took

  bool ok() const { return status == Status::ok; }
  std::optional<double> metric(const std::string& key) const;

  // The facts the tool itself reads, typed. They are kept in `metrics` under
  // the names of core/metric_names.hpp, so that the journal, the worker
  // wire and a script's result carry them unchanged; these are the one way
  // they are read.
  //
  // Stopped early, surely below the tuner's bar (tuner/record/racing.hpp): a real
  // but shorter, noisier measurement.
  bool raced() const;
  void mark_raced();
  // Peak host and device memory, bytes.
  std::optional<double> ram_bytes() const;
  std::optional<double> vram_bytes() const;
  // Seconds from the trial's start to its measurement (start-up, loading, warm-up).
  std::optional<double> startup_seconds() const;
  // The busy share: compute_busy, else 1 - data_wait_fraction, else
  // gpu_busy; none when the trial reported none (or NaN). bo's surrogate,
  // the time split of the summary and the report all read it here.
  std::optional<BusyReading> busy() const;
  std::optional<double> busy_share() const;

  static Outcome success(double throughput) {
    Outcome o;
    o.status = Status::ok;
    o.throughput = throughput;
    return o;
  }
  static Outcome failure(Status s, std::string why) {
    Outcome o;
    o.status = s;
    o.reason = std::move(why);
    return o;
  }
};

}  // namespace autotune
