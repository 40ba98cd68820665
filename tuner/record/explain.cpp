#include "tuner/record/explain.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tuner/record/racing.hpp"
#include "tuner/record/time_split.hpp"

namespace autotune {

std::optional<Outcome> earlier_measurement(const Study& study, const Config& config) {
  for (const auto& t : study.explanations)
    if (t.config == config) return t.outcome;
  for (const auto& t : study.trials)
    if (t.config == config && !t.outcome.raced()) return t.outcome;
  return std::nullopt;
}

namespace {
// Whether the outcome says the workload ignored `knob` (label "ignored":
// "pin_memory, precision").
bool ignores(const Outcome& o, const std::string& knob) {
  const auto it = o.labels.find("ignored");
  if (it == o.labels.end()) return false;
  std::string_view rest = it->second;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    std::string_view name = rest.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name == knob) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}
}  // namespace

void explain_answer(Study& s, const SearchSpace& space, const ExplainMeasure& measure) {
  s.knobs.clear();
  if (!s.best || !s.best_outcome || !s.baseline || !s.baseline->outcome.ok()) return;
  const Config answer = *s.best;
  const Config& base = s.baseline->config;
  if (answer == base) return;
  const Outcome measured = *s.best_outcome;
  Config simpler = answer;  // the answer with every knob put back that goes back
  std::vector<std::pair<Config, Outcome>> seen;  // this call's measurements, each asked for once
  for (std::size_t d = 0; d < space.dims(); ++d) {
    if (answer[d] == base[d]) continue;
    const Parameter& p = space.param(d);
    KnobRow row{p.name, to_string(p.values[static_cast<std::size_t>(base[d])]),
                to_string(p.values[static_cast<std::size_t>(answer[d])]), std::nullopt, "", false};
    Config back = answer;
    back[d] = base[d];
    const auto put_back = [&](const std::string& why) {
      row.put_back = true;
      row.note = fmt::format("{}; kept at {}", why, row.baseline);
      simpler[d] = base[d];
    };
    if (!space.is_valid(back)) {
      row.note = "cannot be put back alone: a rule ties it to another knob";
    } else if (ignores(measured, p.name)) {
      put_back("no effect here: the workload ignores it");
    } else if (const std::optional<Outcome> o = measure(back); !o) {
      row.note = "not measured";
    } else {
      seen.emplace_back(back, *o);
      if (!o->ok()) {
        row.note = fmt::format("with the baseline's value the answer is {}", to_string(o->status));
      } else {
        // Only a gain beyond the noise keeps a change; one within it, or a
        // loss, goes back to the baseline's value.
        row.worth = measured.throughput / o->throughput - 1.0;
        const bool noise = within_noise(measured, *o);
        if (noise || *row.worth < 0) put_back(noise ? "within noise" : "slower with it");
      }
    }
    s.knobs.push_back(std::move(row));
  }
  if (simpler == answer) return;  // nothing goes back
  // The answer as emitted is a configuration that was measured.
  std::optional<Outcome> o;
  for (const auto& [c, m] : seen)
    if (c == simpler) o = m;
  if (!o && space.is_valid(simpler)) o = measure(simpler);
  // Each put back alone cost nothing measurable; together they must not
  // either (knobs that interact, or a machine whose speed drifted between
  // the measurements): an emitted configuration clearly slower than the
  // answer keeps the answer.
  const bool only_ignored = std::all_of(s.knobs.begin(), s.knobs.end(), [&](const KnobRow& k) {
    return !k.put_back || ignores(measured, k.knob);
  });
  const bool slower =
      o && o->ok() && !only_ignored && o->throughput < measured.throughput && !within_noise(measured, *o);
  if (o && o->ok() && !slower) {
    s.best = simpler;
    s.best_outcome = *o;
    return;
  }
  // The answer stays as measured: every knob it moved is kept.
  const std::string kept =
      slower ? fmt::format("each alone within noise, but with all of them put back the answer measured {:.1f} "
                           "against {:.1f}; kept",
                           o->throughput, measured.throughput)
      : o    ? fmt::format("within noise, but with all of them put back the answer is {}; kept", to_string(o->status))
             : std::string("within noise, but the answer with them put back was not measured; kept");
  for (KnobRow& row : s.knobs)
    if (row.put_back) {
      row.put_back = false;
      row.note = kept;
    }
}

std::string describe(const KnobRow& row) {
  std::string out = fmt::format("{} {} -> {}", row.knob, row.baseline, row.best);
  if (row.worth) out += fmt::format(": {:+.1f}%", *row.worth * 100.0);
  if (!row.note.empty()) out += row.worth ? fmt::format(" ({})", row.note) : ": " + row.note;
  return out;
}

std::string biggest_gain(const std::vector<KnobRow>& knobs) {
  const KnobRow* top = nullptr;
  for (const KnobRow& k : knobs)
    if (!k.put_back && k.worth && *k.worth > 0 && (!top || *k.worth > *top->worth)) top = &k;
  if (!top) return {};
  return fmt::format("most of it: {} {} -> {}, {:+.1f}% on its own (the other knobs at the answer's values)",
                     top->knob, top->baseline, top->best, *top->worth * 100.0);
}

std::vector<std::string> what_moved(const Study& r) {
  if (!r.best || !r.best_outcome || !r.baseline) return {};
  if (*r.best == r.baseline->config)
    return {"the answer is the baseline: no configuration measured was faster by more than the noise"};
  std::vector<std::string> out;
  if (r.baseline->outcome.ok())
    if (const TimeSplit before = time_split(r.baseline->outcome), after = time_split(*r.best_outcome);
        before.known() && after.known())
      out.push_back(explain_speedup(before, after));
  if (std::string top = biggest_gain(r.knobs); !top.empty()) out.push_back(std::move(top));
  return out;
}

}  // namespace autotune
