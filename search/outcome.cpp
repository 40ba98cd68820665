#include "search/outcome.hpp"

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

bool Outcome::raced() const { return metric("raced").value_or(0) > 0; }

}  // namespace autotune
