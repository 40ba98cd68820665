#include "tuner/run/wire.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "proc/subprocess.hpp"
#include "tuner/record/journal.hpp"

namespace autotune {
namespace {

std::string last_nonempty_line(const std::string& text) {
  std::size_t end = text.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

std::string outcome_wire_line(const Outcome& o) {
  return to_json(o).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Outcome outcome_from_wire(const ExternalRun& run, const std::string& payload, const TrialContext& ctx) {
  // The reason's first line is what a progress line shows; the tails are in
  // the trial's log folder, or after that line when there is none.
  auto with_tails = [&](const std::string& why) { return why + stderr_said(run) + output_tails(run, ctx.log_dir); };
  if (auto o = classify_termination(run)) {
    if (o->status != Status::timeout) o->reason = with_tails(o->reason);
    return *o;
  }
  const std::string line = last_nonempty_line(payload);
  if (run.exit_code != 0 || line.empty())
    return Outcome::failure(Status::error, with_tails(fmt::format(
                                               "the trial process exited with status {} without an outcome",
                                               run.exit_code)));
  try {
    return outcome_from_json(nlohmann::json::parse(line));
  } catch (const std::exception& e) {
    return Outcome::failure(Status::error,
                            with_tails(std::string("unreadable outcome from the trial process: ") + e.what()));
  }
}

}  // namespace autotune
