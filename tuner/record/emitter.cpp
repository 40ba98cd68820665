#include "tuner/record/emitter.hpp"

#include "tuner/record/drift.hpp"
#include "tuner/record/time_split.hpp"
#include "tuner/record/same_training.hpp"
#include "tuner/record/tuning_time.hpp"

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/knobs.hpp"
#include "core/metric_names.hpp"
#include "workloads/atomic_file.hpp"

namespace autotune {
namespace {

// Whether every YAML reader takes `s`, written plain, for this same string.
// YAML 1.1 (PyYAML) reads yes/no/on/off/y/n as booleans, 0x10, 0o7, 0b1, 1_000
// and 1:20 as integers, 1e3 and .inf as floats, 2024-01-01 as a date, ~ and
// null as null; YAML 1.2 fewer of them. Rather than mirror each resolver,
// plain is kept for the shape none of them types: a letter, _ or / first,
// then letters, digits and _ . - / +, and none of the special words.
bool plain_is_string(std::string_view s) {
  if (s.empty()) return false;
  const auto first = static_cast<unsigned char>(s[0]);
  if (!std::isalpha(first) && first != '_' && first != '/') return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '.' && c != '-' && c != '/' && c != '+') return false;
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string, std::less<>> kWords = {"y",   "n",     "yes",  "no",  "on",  "off",
                                                            "true", "false", "null", "nan", "inf", "infinity"};
  return !kWords.contains(lower);
}

// A string, quoted when written plain it would read as another type.
void emit_string(YAML::Emitter& e, std::string_view s) {
  if (plain_is_string(s)) e << std::string(s);
  else e << YAML::DoubleQuoted << std::string(s);
}

// A number every reader takes for a float: a decimal point or an exponent
// with its sign (PyYAML reads 1e+20 without a point as a string), .inf, .nan.
void emit_double(YAML::Emitter& e, double x) {
  if (std::isnan(x)) {
    e << ".nan";
    return;
  }
  if (std::isinf(x)) {
    e << (x > 0 ? ".inf" : "-.inf");
    return;
  }
  std::string t = fmt::format("{}", x);
  if (t.find('.') == std::string::npos) {
    const auto exp = t.find_first_of("eE");
    t.insert(exp == std::string::npos ? t.size() : exp, ".0");
  }
  e << t;
}

// A count of bytes as an integer; a figure past int64's range (a job's
// garbage) as a float rather than wrapped to a negative integer.
void emit_bytes(YAML::Emitter& e, double v) {
  const double r = std::round(v);
  if (r >= -9.223372036854775808e18 && r < 9.223372036854775808e18) e << static_cast<std::int64_t>(r);
  else emit_double(e, v);
}

void emit_value(YAML::Emitter& e, const Value& v) {
  if (is_int(v)) e << std::get<std::int64_t>(v);
  else if (is_bool(v)) e << std::get<bool>(v);
  else emit_string(e, std::get<std::string>(v));
}

void emit_assignment(YAML::Emitter& e, const Assignment& a) {
  e << YAML::Flow << YAML::BeginMap;
  for (const auto& [name, v] : a.items()) {
    e << YAML::Key;
    emit_string(e, name);
    e << YAML::Value;
    emit_value(e, v);
  }
  e << YAML::EndMap;
}

double round_sig(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

// A figure rounded to `digits` significant digits, written as a float.
struct Float {
  double x;
};
Float sig(double x, int digits) { return {round_sig(x, digits)}; }
YAML::Emitter& operator<<(YAML::Emitter& e, Float f) {
  emit_double(e, f.x);
  return e;
}
// A string through emit_string.
struct Str {
  std::string_view s;
};
YAML::Emitter& operator<<(YAML::Emitter& e, Str s) {
  emit_string(e, s.s);
  return e;
}

void emit_metrics(YAML::Emitter& e, const Outcome& o) {
  e << YAML::BeginMap;
  e << YAML::Key << "throughput" << YAML::Value << sig(o.throughput, 6);
  for (const auto& [k, v] : o.metrics) {
    if (!std::isfinite(v)) continue;
    e << YAML::Key << Str{k} << YAML::Value;  // a job's own metric names
    if (k.ends_with("_bytes")) emit_bytes(e, v);
    else if (k.starts_with("throughput_") && k != "throughput_rsd") e << sig(v, 6);  // samples/s, as throughput
    else e << sig(v, 4);
  }
  e << YAML::EndMap;
}

// The same configuration in other tools' own keys: every declared knob that
// shapes the step (grad_accum included) in each tool's own key, and nothing
// the trials did not run. The precision keys only when the answer changes
// the baseline's precision (the user's own setting stands otherwise:
// precision is theirs to give, and a tie never moves it). Where a tool needs
// a setting that autotune_trial gave it during the trials, the export carries
// it (python/autotune_trial/_knobs.py, training_arguments), or a note says it
// when no keyword can.
struct ExportKnobs {
  const Value* bs = nullptr;
  const Value* workers = nullptr;
  const Value* prefetch = nullptr;  // null where it means nothing (0 workers)
  const Value* pin = nullptr;
  const Value* accum = nullptr;
  const Value* threads = nullptr;  // intra-op threads of each rank
  std::string prec;  // empty: the answer keeps the baseline's precision (or there is none)
};

ExportKnobs export_knobs(const Assignment& best, const Assignment* baseline) {
  ExportKnobs k;
  k.bs = best.find("batch_size");
  k.workers = best.find("num_workers");
  k.prefetch = best.find("prefetch_factor");
  k.pin = best.find("pin_memory");
  k.accum = best.find("grad_accum");
  k.threads = best.find("threads");
  // PyTorch refuses prefetch_factor when num_workers is 0: the knob table
  // says when a knob means nothing.
  if (k.prefetch && !knob_is_active(best, "prefetch_factor")) k.prefetch = nullptr;
  const Value* precision = best.find("precision");
  if (precision && baseline)
    if (const Value* before = baseline->find("precision"); before && *before == *precision) precision = nullptr;
  if (precision) k.prec = to_string(*precision);
  return k;
}

// key: value, only for declared knobs.
void put_knob(YAML::Emitter& e, const char* key, const Value* v) {
  if (!v) return;
  e << YAML::Key << key << YAML::Value;
  emit_value(e, *v);
}

// DataLoader(dataset, **torch_dataloader): the loader's keywords, as
// autotune_trial.loader_arguments passes them.
void emit_torch_dataloader(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "torch_dataloader" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "batch_size", k.bs);
  put_knob(e, "num_workers", k.workers);
  put_knob(e, "prefetch_factor", k.prefetch);
  put_knob(e, "pin_memory", k.pin);
  e << YAML::EndMap;
}

// What a plain PyTorch loop does with the rest: step the optimizer every
// grad_accum micro-batches; autocast's dtype (null: none) and TF32 matmuls.
void emit_torch_loop(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "torch_loop" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "optimizer_step_every", k.accum);
  if (!k.prec.empty()) {
    e << YAML::Key << "autocast_dtype" << YAML::Value;
    if (k.prec == "bf16") e << "bfloat16";
    else if (k.prec == "fp16") e << "float16";
    else e << YAML::Null;
    e << YAML::Key << "allow_tf32" << YAML::Value << (k.prec == "tf32");
  }
  e << YAML::EndMap;
}

void emit_hf_training_arguments(YAML::Emitter& e, const ExportKnobs& k) {
  const bool has_workers = k.workers && to_number(*k.workers) > 0;
  e << YAML::Key << "hf_training_arguments" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "per_device_train_batch_size", k.bs);
  put_knob(e, "gradient_accumulation_steps", k.accum);
  put_knob(e, "dataloader_num_workers", k.workers);
  if (k.prefetch) put_knob(e, "dataloader_prefetch_factor", k.prefetch);
  // The Trainer passes its prefetch_factor (None by default) to the
  // DataLoader, which torch before 2.0 refuses: the helper wrote torch's
  // default there, which torch 2 uses for None.
  else if (has_workers) e << YAML::Key << "dataloader_prefetch_factor" << YAML::Value << 2;
  put_knob(e, "dataloader_pin_memory", k.pin);
  if (!k.prec.empty()) {  // stated for fp32 too: `bf16: false` overrides a script's own default
    e << YAML::Key << "bf16" << YAML::Value << (k.prec == "bf16");
    e << YAML::Key << "fp16" << YAML::Value << (k.prec == "fp16");
    e << YAML::Key << "tf32" << YAML::Value << (k.prec == "tf32");
  }
  e << YAML::EndMap;
}

void emit_lightning_trainer(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "lightning_trainer" << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (!k.prec.empty()) {
    const char* lp = k.prec == "bf16" ? "bf16-mixed" : k.prec == "fp16" ? "16-mixed" : "32-true";
    e << YAML::Key << "precision" << YAML::Value << lp;
  }
  put_knob(e, "accumulate_grad_batches", k.accum);
  e << YAML::EndMap;
}

void emit_deepspeed(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "deepspeed" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "train_micro_batch_size_per_gpu", k.bs);
  put_knob(e, "gradient_accumulation_steps", k.accum);
  if (!k.prec.empty()) {  // stated for fp32 too, as above
    e << YAML::Key << "bf16" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value
      << (k.prec == "bf16") << YAML::EndMap;
    e << YAML::Key << "fp16" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value
      << (k.prec == "fp16");
    if (k.prec == "fp16") e << YAML::Key << "loss_scale" << YAML::Value << 0;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

// Intra-op threads are each process's own: every rank of the job gets them,
// from its environment as it starts or from torch.set_num_threads.
void emit_threads(YAML::Emitter& e, const ExportKnobs& k) {
  if (!k.threads) return;
  e << YAML::Key << "environment" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "OMP_NUM_THREADS", k.threads);
  e << YAML::EndMap;
  e << YAML::Key << "torch" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "set_num_threads", k.threads);
  e << YAML::EndMap;
}

// What no keyword can carry.
void emit_export_notes(YAML::Emitter& e, const ExportKnobs& k) {
  std::vector<std::string> notes;
  if (k.threads) {
    const std::string n = to_string(*k.threads);
    notes.push_back(fmt::format("threads: {} intra-op threads per rank (each process of the job, every rank of "
                                "torchrun): OMP_NUM_THREADS={} in the job's environment, or "
                                "torch.set_num_threads({}) in each rank",
                                n, n, n));
  }
  if (k.prec == "tf32")
    notes.emplace_back("tf32: call torch.backends.cuda.matmul.allow_tf32 = True (Lightning: "
                       "torch.set_float32_matmul_precision('high'))");
  // transformers 4.36-4.38 pass prefetch_factor=None to a DataLoader of 0
  // workers, which torch before 2.0 refuses, and TrainingArguments refuses
  // any other value there (autotune_trial's HFCallback sets it as the Trainer is made).
  if (k.workers && to_number(*k.workers) == 0)
    notes.emplace_back("hf_training_arguments, with torch before 2.0: after args = TrainingArguments(...), set "
                       "args.dataloader_prefetch_factor = 2 (at 0 workers TrainingArguments refuses it as a "
                       "keyword, and the Trainer's DataLoader refuses the None it passes otherwise)");
  if (notes.empty()) return;
  e << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : notes) e << Str{n};
  e << YAML::EndSeq;
}

void emit_exports(YAML::Emitter& e, const Assignment& best, const Assignment* baseline) {
  const ExportKnobs k = export_knobs(best, baseline);
  e << YAML::Key << "exports" << YAML::Value << YAML::BeginMap;
  emit_torch_dataloader(e, k);
  emit_torch_loop(e, k);
  emit_hf_training_arguments(e, k);
  emit_lightning_trainer(e, k);
  emit_deepspeed(e, k);
  emit_threads(e, k);
  emit_export_notes(e, k);
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
    if (const auto f = t.outcome.metric(metric::foreign_cores)) {
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
