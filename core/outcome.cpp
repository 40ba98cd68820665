#include "core/outcome.hpp"

#include <cmath>

#include "core/metric_names.hpp"

namespace autotune {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::oom: return "oom";
    case Status::host_oom: return "host_oom";
    case Status::timeout: return "timeout";
    case Status::crash: return "crash";
    case Status::error: return "error";
    case Status::invalid: return "invalid";
  }
  return "error";
}

std::optional<Status> parse_status(std::string_view s) {
  for (Status st : kAllStatuses)
    if (to_string(st) == s) return st;
  return std::nullopt;
}

bool is_resource_failure(Status s) {
  return s == Status::oom || s == Status::host_oom || s == Status::invalid || s == Status::timeout;
}

std::optional<double> Outcome::metric(const std::string& key) const {
  auto it = metrics.find(key);
  if (it == metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<double> Outcome::get(metric::Real m) const { return metric(m.name); }

std::optional<long long> Outcome::get(metric::Count m) const {
  const auto v = metric(m.name);
  if (!v || !(std::fabs(*v) < 9e18)) return std::nullopt;  // NaN, infinite or beyond a long long
  return std::llround(*v);
}

// Above 0, as every reader of a flag has read it: a NaN or a negative
// number a script reports says no.
std::optional<bool> Outcome::get(metric::Flag m) const {
  const auto v = metric(m.name);
  if (!v) return std::nullopt;
  return *v > 0;
}

bool Outcome::raced() const { return has(metric::raced); }
void Outcome::mark_raced() { set(metric::raced, true); }
std::optional<double> Outcome::ram_bytes() const { return get(metric::ram_bytes); }
std::optional<double> Outcome::vram_bytes() const { return get(metric::vram_bytes); }
std::optional<double> Outcome::startup_seconds() const { return get(metric::startup_seconds); }

// compute_busy first: the harness's timed windows (the cpu workload's
// data_wait_fraction spans its warm-up too). bo splits T into the compute
// rate and this share (search/surrogate.cpp); evidence, seed by seed:
// bench/results/search_constants.md (busy split).
std::optional<BusyReading> Outcome::busy() const {
  std::optional<double> b = get(metric::compute_busy);
  if (!b)
    if (auto w = get(metric::data_wait_fraction)) b = 1.0 - *w;
  const bool data_wait = b.has_value();
  if (!b) b = get(metric::gpu_busy);
  if (!b || !std::isfinite(*b)) return std::nullopt;  // a job's NaN is no share
  return BusyReading{*b, data_wait};
}

std::optional<double> Outcome::busy_share() const {
  if (auto r = busy()) return r->share;
  return std::nullopt;
}

}  // namespace autotune
