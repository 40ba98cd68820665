#include "tuner/report/report_facts.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/metric_names.hpp"
#include "core/text.hpp"
#include "tuner/record/emitter.hpp"

namespace autotune {
namespace {

constexpr std::size_t kReasonLength = 160;
constexpr std::size_t kReasonsShown = 4;

// "256–512" for an ordered domain, "fp32, tf32" for a categorical one.
std::string describe_values(const Parameter& p, const std::set<int>& ks) {
  if (p.scale != Scale::categorical && ks.size() > 1)
    return to_string(p.values[static_cast<std::size_t>(*ks.begin())]) + "\u2013" +
           to_string(p.values[static_cast<std::size_t>(*ks.rbegin())]);
  std::string out;
  for (int k : ks) out += (out.empty() ? "" : ", ") + to_string(p.values[static_cast<std::size_t>(k)]);
  return out;
}

// Whether failures keep to a part of what was tried: at most half its span
// (ordered) or half its values (categorical). Wider sets say nothing of where.
bool narrower(const Parameter& p, const std::set<int>& failed, const std::set<int>& tried) {
  if (failed.size() == tried.size()) return false;
  if (p.scale == Scale::categorical || tried.size() < 3) return 2 * failed.size() <= tried.size();
  return 2 * (*failed.rbegin() - *failed.begin()) <= *tried.rbegin() - *tried.begin();
}

}  // namespace

std::string tuned_yaml_of(const JournalStudy& s) { return render_tuned_yaml(s.spec, s.result); }

std::string exports_of(const JournalStudy& s) {
  if (!s.result.best_outcome) return {};
  const std::string yaml = tuned_yaml_of(s);
  const auto at = yaml.find("\nexports:");
  return at == std::string::npos ? std::string() : yaml.substr(at + 1);
}

std::map<Status, int> status_counts(const Study& r) {
  std::map<Status, int> counts;
  for (const auto& t : r.trials) ++counts[t.outcome.status];
  return counts;
}

std::string describe_counts(const Study& r) {
  const auto counts = status_counts(r);
  std::string out;
  for (Status s : kAllStatuses)
    if (auto it = counts.find(s); it != counts.end())
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", it->second, to_string(s));
  return out.empty() ? "none" : out;
}

std::vector<FailureGroup> failure_groups(const JournalStudy& s) {
  const SearchSpace& space = s.spec.space;
  std::vector<std::set<int>> tried(space.dims());
  for (const auto& t : s.result.trials)
    for (std::size_t d = 0; d < space.dims(); ++d) tried[d].insert(t.config[d]);
  std::vector<FailureGroup> groups;
  for (Status st : kAllStatuses) {
    if (st == Status::ok) continue;
    FailureGroup g;
    g.status = st;
    std::vector<std::set<int>> failed(space.dims());
    std::map<std::string, int> reasons;
    for (const auto& t : s.result.trials) {
      if (t.outcome.status != st) continue;
      ++g.count;
      for (std::size_t d = 0; d < space.dims(); ++d) failed[d].insert(t.config[d]);
      std::string why(first_line(t.outcome.reason));
      if (why.size() > kReasonLength) why = why.substr(0, kReasonLength - 3) + "...";
      ++reasons[why.empty() ? "(no reason given)" : why];
    }
    if (g.count == 0) continue;
    for (std::size_t d = 0; d < space.dims(); ++d)
      if (narrower(space.param(d), failed[d], tried[d]))
        g.region.push_back(space.param(d).name + " " + describe_values(space.param(d), failed[d]));
    g.reasons.assign(reasons.begin(), reasons.end());
    std::stable_sort(g.reasons.begin(), g.reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (g.reasons.size() > kReasonsShown) g.reasons.resize(kReasonsShown);
    groups.push_back(std::move(g));
  }
  return groups;
}

std::string knob_effect(const JournalStudy& s, std::size_t dim) {
  const Parameter& p = s.spec.space.param(dim);
  std::vector<double> best(p.values.size(), NAN);
  std::vector<std::map<Status, int>> fails(p.values.size());
  for (const auto& t : s.result.trials) {
    const auto k = static_cast<std::size_t>(t.config[dim]);
    if (t.outcome.ok()) best[k] = std::isnan(best[k]) ? t.outcome.throughput : std::max(best[k], t.outcome.throughput);
    else ++fails[k][t.outcome.status];
  }
  std::string out;
  for (std::size_t k = 0; k < p.values.size(); ++k) {
    if (std::isnan(best[k]) && fails[k].empty()) continue;
    std::string what = std::isnan(best[k]) ? "" : format_rate(best[k]) + "/s";
    for (const auto& [st, n] : fails[k])
      what += fmt::format("{}{}\u00d7{}", what.empty() ? "" : " ", to_string(st), n);
    out += fmt::format("{}{}: {}", out.empty() ? "" : "  ", to_string(p.values[k]), what);
  }
  return out;
}

std::string format_rate(double v) { return std::fabs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v); }

std::string memory_of(const Outcome& o, metric::Real bytes) {
  const auto v = o.get(bytes);
  return v && *v > 0 ? format_bytes(*v) : std::string();
}

namespace {
// Below 1% the share rounds to "0%", which says nothing.
std::optional<double> shown_gpu_busy(const Outcome& o) {
  const auto b = o.get(metric::foreign_gpu_busy);
  return b && *b >= 0.01 ? b : std::nullopt;
}
}  // namespace

std::string foreign_gpu_busy_words(const std::vector<TrialRecord>& trials) {
  int shared = 0, busiest = 0;
  double most = 0;
  for (const TrialRecord& t : trials)
    if (const auto b = shown_gpu_busy(t.outcome)) {
      ++shared;
      if (*b > most) {
        most = *b;
        busiest = t.trial;
      }
    }
  if (shared == 0) return {};
  if (shared == 1)
    return fmt::format("other processes used {:.0f}% of the GPU's SM time during trial {}", most * 100, busiest);
  return fmt::format("other processes used the GPU's SM time during {} trials, up to {:.0f}% during trial {}", shared,
                     most * 100, busiest);
}

std::string foreign_gpu_busy_note(const Outcome& o) {
  const auto b = shown_gpu_busy(o);
  return b ? fmt::format("other processes used {:.0f}% of the GPU's SM time meanwhile", *b * 100) : std::string();
}

}  // namespace autotune
