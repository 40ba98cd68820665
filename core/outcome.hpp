#pragma once
// The result of one trial. Failure is a value: an out-of-memory, a timeout or a
// crash is an Outcome the search learns from, never an exception.
#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/metric_names.hpp"

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
  std::map<std::string, double> metrics;   // by name: the tool's own (set, get) and any a script reports
  std::string reason;                      // human-readable why, for failures
  std::map<std::string, std::string> labels;  // non-numeric facts: node, gpus, cpus the trial had
  double seconds = 0.0;                    // wall time the trial took

  bool ok() const { return status == Status::ok; }
  // A metric by the name a script reported it under; the tool's own names
  // are read with get and has.
  std::optional<double> metric(const std::string& key) const;

  // The metrics the tool itself writes and reads, by their typed names
  // (core/metric_names.hpp). They are kept in `metrics`, so that the
  // journal, the worker wire and a script's result carry them unchanged; a
  // Flag is written as 1 or 0, a Count as a whole number. A value of the
  // wrong kind does not compile (a Flag takes a bool, a Count an integer).
  void set(metric::Real m, double v) { metrics[m.name] = v; }
  template <class T>
    requires std::same_as<T, bool>
  void set(metric::Real, T) = delete;
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  void set(metric::Count m, T n) {
    metrics[m.name] = static_cast<double>(n);
  }
  void set(metric::Flag m, bool on) { metrics[m.name] = on ? 1.0 : 0.0; }
  template <class T>
  void set(metric::Flag, T) = delete;
  // None when absent; a Count also when not finite or beyond a long long
  // (it reads to the nearest whole number).
  std::optional<double> get(metric::Real m) const;
  std::optional<long long> get(metric::Count m) const;
  // A Flag as written (true above 0), or none when absent: for a reader to
  // whom "not said" differs from "said no".
  std::optional<bool> get(metric::Flag m) const;
  // Whether it happened: present and above 0.
  bool has(metric::Flag m) const { return get(m).value_or(false); }

  // The facts the tool itself reads most, by name.
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
