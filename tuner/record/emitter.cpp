#include "tuner/record/emitter.hpp"

#include "tuner/record/drift.hpp"
#include "core/machine.hpp"
#include "tuner/record/time_split.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/record/tuning_time.hpp"
#include "tuner/record/export_format.hpp"
#include "tuner/record/yaml_emit.hpp"

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/atomic_file.hpp"
#include "core/metric_names.hpp"

namespace autotune {
namespace {

void emit_metrics(YAML::Emitter& e, const Outcome& o) {
  e << YAML::BeginMap;
  e << YAML::Key << "throughput" << YAML::Value << sig(o.throughput, 6);
  for (const auto& [k, v] : o.metrics) {
    if (!std::isfinite(v)) continue;
    e << YAML::Key << Str{k} << YAML::Value;  // a job's own metric names
    if (k.ends_with("_bytes")) emit_bytes(e, v);
    else if (k.starts_with("throughput_") && k != metric::throughput_rsd.name) e << sig(v, 6);  // samples/s, as throughput
    else e << sig(v, 4);
  }
  e << YAML::EndMap;
}

void emit_best(YAML::Emitter& e, const std::optional<Assignment>& best, const Study& r) {
  if (best) {
    e << YAML::Key << "best" << YAML::Value;
    emit_assignment(e, *best);
    e << YAML::Key << "metrics" << YAML::Value << YAML::Flow;
    emit_metrics(e, *r.best_outcome);
  } else {
    e << YAML::Key << "best" << YAML::Value << YAML::Null;
    e << YAML::Key << "metrics" << YAML::Value << YAML::Null;
  }
}

void emit_baseline(YAML::Emitter& e, const SearchSpace& space, const Assignment& config, const Study& r) {
  e << YAML::Key << "baseline" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "config" << YAML::Value;
  emit_assignment(e, config);
  e << YAML::Key << "status" << YAML::Value << std::string(to_string(r.baseline->outcome.status));
  if (r.baseline->outcome.ok()) {
    e << YAML::Key << "throughput" << YAML::Value << sig(r.baseline->outcome.throughput, 6);
    if (const auto x = r.speedup()) {
      e << YAML::Key << "speedup" << YAML::Value << sig(x->ratio, 4);
      // search.remeasure: the figures behind it, measured side by side.
      if (x->remeasured) {
        e << YAML::Key << "remeasured" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "answer"
          << YAML::Value << sig(x->answer, 6) << YAML::Key << "baseline" << YAML::Value
          << sig(x->baseline, 6) << YAML::Key << "runs" << YAML::Value << x->runs << YAML::EndMap;
        if (x->low && x->high)
          e << YAML::Key << "interval90" << YAML::Value << YAML::Flow << YAML::BeginSeq << sig(*x->low, 4)
            << sig(*x->high, 4) << YAML::EndSeq;
        // Other processes' cores while the pairs ran (their mean).
        if (x->others)
          e << YAML::Key << "others_cores" << YAML::Value << sig(*x->others, 3);
        // Every pair, in the order measured: [baseline, answer] samples/s.
        e << YAML::Key << "pairs" << YAML::Value << YAML::BeginSeq;
        for (std::size_t i = 0; i < std::min(r.baseline_again.size(), r.answer_again.size()); ++i)
          e << YAML::Flow << YAML::BeginSeq << sig(r.baseline_again[i].outcome.throughput, 6)
            << sig(r.answer_again[i].outcome.throughput, 6) << YAML::EndSeq;
        e << YAML::EndSeq;
        // The search's answer, when it was not shown to be faster and the baseline was kept.
        if (r.kept_baseline_over) {
          e << YAML::Key << "not_shown_faster" << YAML::Value;
          emit_assignment(e, space.to_assignment(*r.kept_baseline_over));
        }
      }
    }
  }
  e << YAML::EndMap;
}

// What each knob the answer moved is worth (tuner/record/explain.hpp).
void emit_knobs(YAML::Emitter& e, const SearchSpace& space, const std::vector<KnobRow>& knobs) {
  if (knobs.empty()) return;
  // A row's values are text: written with the knob's own type (a
  // categorical `yes` stays a string, an integer an integer).
  const auto value = [&](const std::string& knob, const std::string& text) {
    for (const auto& p : space.params())
      if (p.name == knob)
        for (const Value& v : p.values)
          if (to_string(v) == text) return emit_value(e, v);
    emit_string(e, text);
  };
  e << YAML::Key << "knobs" << YAML::Value << YAML::BeginSeq;
  for (const KnobRow& k : knobs) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "knob" << YAML::Value << Str{k.knob};
    e << YAML::Key << "baseline" << YAML::Value;
    value(k.knob, k.baseline);
    e << YAML::Key << "best" << YAML::Value;
    value(k.knob, k.best);
    if (k.worth) e << YAML::Key << "worth" << YAML::Value << sig(*k.worth, 4);
    e << YAML::Key << "kept_at_baseline" << YAML::Value << k.put_back;
    if (!k.note.empty()) e << YAML::Key << "note" << YAML::Value << Str{k.note};
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

// What the answer changes of the training itself (tuner/record/same_training.hpp).
void emit_same_training(YAML::Emitter& e, const Spec& spec, const Study& r) {
  const auto change = training_change(spec, r);
  if (!change) return;
  const TrainingChange& c = *change;
  if (!c.batch_after && !c.precision_after) return;
  e << YAML::Key << "same_training" << YAML::Value << YAML::BeginMap;
  if (c.batch_before && c.batch_after) {
    e << YAML::Key << "effective_batch" << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "baseline" << YAML::Value << *c.batch_before;
    e << YAML::Key << "best" << YAML::Value << *c.batch_after;
    e << YAML::Key << "pinned" << YAML::Value << c.pinned;
    if (c.ranks > 1) e << YAML::Key << "ranks" << YAML::Value << c.ranks;
    e << YAML::EndMap;
  }
  if (c.precision_before && c.precision_after) {
    e << YAML::Key << "precision" << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "baseline" << YAML::Value << Str{*c.precision_before};
    e << YAML::Key << "best" << YAML::Value << Str{*c.precision_after} << YAML::EndMap;
  }
  const auto lines = describe(c);
  if (!lines.empty()) {
    e << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
    for (const auto& l : lines) e << Str{l};
    e << YAML::EndSeq;
  }
  e << YAML::EndMap;
}

void emit_split(YAML::Emitter& e, const char* key, const TimeSplit& s) {
  e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "data_wait" << YAML::Value << sig(*s.data_wait, 3);
  e << YAML::Key << "compute" << YAML::Value << sig(*s.compute, 3);
  if (s.device_busy) e << YAML::Key << "device_busy" << YAML::Value << sig(*s.device_busy, 3);
  e << YAML::Key << "bound" << YAML::Value << Str{s.bound()};
  e << YAML::EndMap;
}

// Where the time went for the baseline and the answer, and what moved.
void emit_time_split(YAML::Emitter& e, const Study& r) {
  const std::optional<TimeSplit> after =
      r.best_outcome ? std::optional<TimeSplit>(time_split(*r.best_outcome)) : std::nullopt;
  const std::optional<TimeSplit> before = r.baseline && r.baseline->outcome.ok()
                                              ? std::optional<TimeSplit>(time_split(r.baseline->outcome))
                                              : std::nullopt;
  if (!(after && after->known()) && !(before && before->known())) return;
  e << YAML::Key << "time_split" << YAML::Value << YAML::BeginMap;
  if (before && before->known()) emit_split(e, "baseline", *before);
  if (after && after->known()) emit_split(e, "best", *after);
  if (before && after && before->known() && after->known())
    e << YAML::Key << "why" << YAML::Value << Str{explain_speedup(*before, *after)};
  e << YAML::EndMap;
}

// Each re-measured candidate: all its throughputs (the search trial's
// first), their mean, or the status that ruled it out.
void emit_confirm(YAML::Emitter& e, const Spec& spec, const std::vector<ConfirmRow>& confirmed) {
  if (confirmed.empty()) return;
  e << YAML::Key << "confirm" << YAML::Value << YAML::BeginSeq;
  for (const ConfirmRow& row : confirmed) {
    e << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "config" << YAML::Value;
    emit_assignment(e, spec.space.to_assignment(row.config));
    e << YAML::Key << "throughputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const Outcome& o : row.measurements) {
      if (o.ok()) e << sig(o.throughput, 6);
      else e << std::string(to_string(o.status));
    }
    e << YAML::EndSeq;
    if (row.all_ok) e << YAML::Key << "mean" << YAML::Value << sig(row.mean, 6);
    e << YAML::Key << "chosen" << YAML::Value << row.chosen;
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

// Where the minutes went (tuner/record/tuning_time.hpp).
void emit_tuning_time(YAML::Emitter& e, const Study& r) {
  const TuningTime time = tuning_time(r);
  e << YAML::Key << "time" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "startup_s" << YAML::Value << sig(time.startup_s, 4);
  e << YAML::Key << "warmup_s" << YAML::Value << sig(time.warmup_s, 4);
  e << YAML::Key << "timed_s" << YAML::Value << sig(time.timed_s, 4);
  e << YAML::Key << "other_s" << YAML::Value << sig(time.other_s, 4);
  e << YAML::Key << "failed_s" << YAML::Value << sig(time.failed_s, 4);
  if (time.workers_started > 0) e << YAML::Key << "workers_started" << YAML::Value << time.workers_started;
  e << YAML::Key << "raced_s" << YAML::Value << sig(time.raced_s, 4);
  e << YAML::Key << "raced" << YAML::Value << time.raced;
  e << YAML::EndMap;
}

void emit_search(YAML::Emitter& e, const Spec& spec, const Study& r) {
  std::map<Status, int> counts;
  for (const auto& t : r.trials) ++counts[t.outcome.status];
  e << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "strategy" << YAML::Value << Str{spec.search.strategy};
  e << YAML::Key << "workload" << YAML::Value << Str{spec.workload.kind};
  e << YAML::Key << "trials" << YAML::Value << static_cast<int>(r.trials.size());
  for (Status s : kAllStatuses)
    if (counts[s] > 0 || s == Status::ok) e << YAML::Key << std::string(to_string(s)) << YAML::Value << counts[s];
  if (!r.confirmations.empty())
    e << YAML::Key << "confirmations" << YAML::Value << static_cast<int>(r.confirmations.size());
  if (!r.controls.empty()) {
    e << YAML::Key << "controls" << YAML::Value << static_cast<int>(r.controls.size());
    e << YAML::Key << "largest_drift" << YAML::Value << sig(largest_drift(r), 3);
  }
  // What other processes used of the machine while the trials ran (tuner/run/machine_load.hpp).
  double foreign_sum = 0, foreign_max = 0;
  int foreign_n = 0;
  for (const auto& t : r.trials)
    if (const auto f = t.outcome.get(metric::foreign_cores)) {
      foreign_sum += *f;
      foreign_max = std::max(foreign_max, *f);
      ++foreign_n;
    }
  if (foreign_n > 0)
    e << YAML::Key << "foreign_cores" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "mean"
      << YAML::Value << sig(foreign_sum / foreign_n, 3) << YAML::Key << "max" << YAML::Value << sig(foreign_max, 3)
      << YAML::EndMap;
  e << YAML::Key << "elapsed_s" << YAML::Value << sig(r.elapsed_s, 4);
  e << YAML::Key << "stopped_by" << YAML::Value << std::string(run_end_name(r.stopped_by));
  if (!r.failure.empty()) e << YAML::Key << "failure" << YAML::Value << Str{r.failure};
  emit_tuning_time(e, r);
  e << YAML::Key << "seed" << YAML::Value << spec.search.seed;
  e << YAML::Key << "space_hash" << YAML::Value << Str{spec.space.hash()};
  e << YAML::Key << "journal" << YAML::Value << Str{spec.output.journal.string()};
  e << YAML::EndMap;
}

// The answer asks for more processes than the cores here (cores_warning).
void emit_cores(YAML::Emitter& e, const Spec& spec, const Config& best) {
  const std::string warning = cores_warning(spec, best);
  if (warning.empty()) return;
  const auto asked = cores_asked(spec, best);
  e << YAML::Key << "cores" << YAML::Value << YAML::BeginMap << YAML::Key << "asked" << YAML::Value
    << asked->total() << YAML::Key << "here" << YAML::Value << usable_cores() << YAML::Key << "note"
    << YAML::Value << warning << YAML::EndMap;
}

}  // namespace

std::string render_tuned_yaml(const Spec& spec, const Study& r) {
  YAML::Emitter e;
  e.SetDoublePrecision(7);
  e << YAML::Comment("autotune: the fastest feasible configuration measured");
  e << YAML::BeginMap;
  const std::optional<Assignment> baseline_config =
      r.baseline ? std::optional<Assignment>(spec.space.to_assignment(r.baseline->config)) : std::nullopt;
  const std::optional<Assignment> best =
      r.best && r.best_outcome ? std::optional<Assignment>(spec.space.to_assignment(*r.best)) : std::nullopt;
  emit_best(e, best, r);
  if (r.baseline) emit_baseline(e, spec.space, *baseline_config, r);
  emit_knobs(e, spec.space, r.knobs);
  emit_same_training(e, spec, r);
  emit_time_split(e, r);
  if (best) emit_cores(e, spec, *r.best);
  emit_confirm(e, spec, r.confirmed);
  emit_search(e, spec, r);
  if (best) emit_exports(e, *best, baseline_config ? &*baseline_config : nullptr);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  if (std::string why; !write_atomically(path, text, &why)) throw std::runtime_error(why);
}

void write_tuned_yaml(const Spec& spec, const Study& result, const std::filesystem::path& path) {
  write_file_atomically(path, render_tuned_yaml(spec, result));
}

}  // namespace autotune
