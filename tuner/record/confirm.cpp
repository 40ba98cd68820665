#include "tuner/record/confirm.hpp"

#include <algorithm>

#include "core/metric_names.hpp"
#include "tuner/record/racing.hpp"


namespace autotune {

std::vector<Config> confirm_candidates(const std::vector<TrialRecord>& trials, const std::optional<Config>& recommended,
                                       int n) {
  std::vector<const TrialRecord*> ok;
  for (const auto& t : trials)
    if (t.outcome.ok() && !t.outcome.raced()) ok.push_back(&t);  // raced: below the bar, not a candidate
  // Stable: equal throughputs keep the order they were measured in.
  std::stable_sort(ok.begin(), ok.end(),
                   [](const TrialRecord* a, const TrialRecord* b) { return a->outcome.throughput > b->outcome.throughput; });
  std::vector<Config> out;
  auto add = [&](const Config& c) {
    if (static_cast<int>(out.size()) < n && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  if (recommended && std::any_of(ok.begin(), ok.end(), [&](const TrialRecord* t) { return t->config == *recommended; }))
    add(*recommended);
  for (const TrialRecord* t : ok) add(t->config);
  return out;
}

std::vector<ConfirmRow> confirm_rows(const std::vector<Config>& candidates, const std::vector<TrialRecord>& trials,
                                     const std::vector<TrialRecord>& confirmations) {
  std::vector<ConfirmRow> rows;
  for (const Config& c : candidates) {
    ConfirmRow row;
    row.config = c;
    for (const auto& t : trials)
      if (t.config == c) row.measurements.push_back(t.outcome);
    for (const auto& t : confirmations)
      if (t.config == c) row.measurements.push_back(t.outcome);
    row.all_ok = row.measurements.size() > 1 &&
                 std::all_of(row.measurements.begin(), row.measurements.end(), [](const Outcome& o) { return o.ok(); });
    if (row.all_ok) {
      double sum = 0;
      for (const auto& o : row.measurements) sum += o.throughput;
      row.mean = sum / static_cast<double>(row.measurements.size());
    }
    rows.push_back(std::move(row));
  }
  ConfirmRow* best = nullptr;
  for (auto& r : rows)
    if (r.all_ok && (!best || r.mean > best->mean)) best = &r;
  if (best) best->chosen = true;
  return rows;
}

void choose_confirmed(const std::vector<Config>& candidates, Study& r) {
  r.confirmed = confirm_rows(candidates, r.trials, r.confirmations);
  // Chosen on the mean of its runs; reported as its re-measurement, which no
  // selection inflated (the best single run of a search overstates its
  // configuration: bench/results/confirm_value.txt).
  for (const ConfirmRow& row : r.confirmed) {
    if (!row.chosen) continue;
    r.best = row.config;
    r.best_outcome = row.measurements.back();
    r.best_outcome->set(metric::throughput_search, row.measurements.front().throughput);
    r.best_outcome->set(metric::throughput_mean, row.mean);
    return;
  }
  // None chosen (every candidate failed when measured again, or Ctrl-C came
  // first): keep the search's answer unless it was seen to fail, then the
  // fastest search trial that was not.
  auto failed_again = [&](const Config& c) {
    return std::any_of(r.confirmations.begin(), r.confirmations.end(),
                       [&](const TrialRecord& t) { return t.config == c && !t.outcome.ok(); });
  };
  if (!r.best || !failed_again(*r.best)) return;
  r.best.reset();
  r.best_outcome.reset();
  for (const auto& t : r.trials)
    if (t.outcome.ok() && !failed_again(t.config) &&
        (!r.best_outcome || t.outcome.throughput > r.best_outcome->throughput)) {
      r.best = t.config;
      r.best_outcome = t.outcome;
    }
}

}  // namespace autotune
