// The sections other than the space: workload (its kind and the kind's own
// options), objective, search (strategy, budget, seed, initial
// configurations, confirm, parallel), executor (its kind, gpus and the kind's
// own options) and output.
#include <algorithm>
#include <iterator>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "core/knobs.hpp"
#include "search/strategy.hpp"
#include "tuner/spec/devices.hpp"
#include "tuner/spec/spec_sections.hpp"

namespace autotune {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kWorkloadGenericKeys = {"kind", "timeout", "repeats", "isolation"};
const std::vector<std::string> kSearchKeys = {"strategy", "budget",  "seed",      "initial", "confirm",
                                             "parallel", "race",    "explain",   "remeasure", "busy",
                                             "options"};
const std::vector<std::string> kBudgetKeys = {"trials", "time", "until_converged"};
const std::vector<std::string> kOutputKeys = {"tuned", "journal"};
const std::vector<std::string> kExecutorGenericKeys = {"kind", "gpus"};  // every kind
const std::vector<std::string> kObjectives = {"throughput"};
constexpr std::size_t kMaxListedValues = 16;  // values shown in an error message

std::string list_values(const std::vector<Value>& values) {
  std::vector<std::string> s;
  for (std::size_t i = 0; i < values.size() && i < kMaxListedValues; ++i) s.push_back(to_string(values[i]));
  if (values.size() > kMaxListedValues) s.push_back(fmt::format("... ({} values)", values.size()));
  return join(s);
}

std::vector<std::string> texts_of(const std::vector<Value>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(to_string(v));
  return out;
}

void read_budget(YamlReader& r, const Entry& e, const std::string& path, SearchSpec& s) {
  s.budget_trials = 0;
  if (e.value.IsScalar()) {  // `budget: 40` is a number of trials
    if (auto v = r.get_checked<int>(e.value, e.loc, path, "an integer", check_budget_trials)) s.budget_trials = *v;
    return;
  }
  if (!r.expect_map(e.value, e.loc, path, "a number of trials or a map {trials: N, time: 30m}")) return;
  Entries keys = r.read_map(e.value, path, &kBudgetKeys);
  bool ok = true;
  if (const Entry* k = find(keys, "trials")) {
    // 0: no cap on trials, when `time` is the budget.
    if (auto v = r.get_int(k->value, k->loc, child(path, "trials"), 0, kBudgetTrialsRange.max))
      s.budget_trials = static_cast<int>(*v);
    else ok = false;
  }
  if (const Entry* k = find(keys, "time")) {
    if (auto v = r.get_duration(k->value, k->loc, child(path, "time"), 0.0)) s.budget_seconds = *v;
    else ok = false;
  }
  if (const Entry* k = find(keys, "until_converged")) {
    if (auto v = r.get_bool(k->value, k->loc, child(path, "until_converged"))) s.until_converged = *v;
    else ok = false;
  }
  if (ok && s.budget_trials <= 0 && s.budget_seconds <= 0)
    r.fail(e.loc, path, "trials > 0 or time > 0", keys.empty() ? "an empty map" : "neither");
}

// A key of an initial configuration that is no parameter: a built-in knob
// the space leaves out is said to be one (never "did you mean" a knob of
// one's own a letter away from it: that would be the typo); else the
// nearest parameter's name.
std::string unknown_initial_key_hint(const std::string& key, const std::vector<std::string>& names) {
  if (find_knob(key))
    return fmt::format("'{}' is a built-in knob that space does not tune: add it to space, or leave it out here", key);
  return did_you_mean(key, names);
}

void read_initial(YamlReader& r, const Entry& e, const std::string& path, const SpaceRead& space,
                  const SearchSpace& built, std::vector<Config>& out) {
  if (!e.value.IsSequence()) {
    r.fail(e.loc, path, "a list of configurations ({name: value, ...})", describe(e.value));
    return;
  }
  const std::vector<std::string> names = names_of(space.params);
  for (std::size_t i = 0; i < e.value.size(); ++i) {
    const YAML::Node n = e.value[i];
    const Loc at = loc_of(n, e.loc);
    const std::string ipath = item(path, i);
    if (!r.expect_map(n, at, ipath, "a configuration {name: value, ...}")) continue;
    // Parameter names are known only when the space parsed; otherwise check
    // the map's shape and leave the rest to the space's own errors.
    Entries keys = r.read_map(n, ipath, nullptr);
    if (!space.parsed) continue;
    Assignment a;
    bool ok = true;
    for (const auto& k : keys)
      if (std::find(names.begin(), names.end(), k.key) == names.end()) {
        r.fail(k.key_loc, child(ipath, k.key), "one of the keys " + join(names), "unknown key " + quote(k.key),
               unknown_initial_key_hint(k.key, names));
        ok = false;
      }
    std::vector<std::string> missing;
    for (const auto& p : space.params) {
      const Entry* k = find(keys, p.name);
      if (!k) {
        missing.push_back(p.name);
        continue;
      }
      const std::string kpath = child(ipath, p.name);
      const std::string allowed = "one of " + list_values(p.values);
      std::optional<Value> v;
      if (is_int(p.values[0])) {
        if (auto x = r.get_int(k->value, k->loc, kpath)) v = Value{*x};
      } else if (is_bool(p.values[0])) {
        if (auto x = r.get_bool(k->value, k->loc, kpath)) v = Value{*x};
      } else if (auto x = r.get_scalar(k->value, k->loc, kpath, allowed)) {
        v = Value{*x};
      }
      if (!v) {
        ok = false;
        continue;
      }
      if (std::find(p.values.begin(), p.values.end(), *v) == p.values.end()) {
        r.fail(k->loc, kpath, allowed, quote(to_string(*v)) + ", not in the domain of " + p.name,
               is_string(*v) ? did_you_mean(std::get<std::string>(*v), texts_of(p.values)) : "");
        ok = false;
        continue;
      }
      a.set(p.name, *v);
    }
    if (!missing.empty()) {
      r.fail(at, ipath, "a value for every parameter", "no value for " + join(missing));
      ok = false;
    }
    if (!ok || !space.built) continue;
    auto c = built.from_assignment(a);
    if (!c) {
      r.fail(at, ipath, "a configuration in the space", a.describe());
      continue;
    }
    if (auto rule = built.violated_rule(*c)) {
      r.fail(at, ipath, "a configuration satisfying every rule", "it violates " + quote(*rule));
      continue;
    }
    out.push_back(*c);
  }
}

std::optional<OptionValue> read_option(YamlReader& r, const OptionSpec& s, const Entry& e, const std::string& path,
                                       const fs::path& base_dir) {
  const auto& n = e.value;
  switch (s.type) {
    case OptionType::boolean:
      if (auto v = r.get_bool(n, e.loc, path)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::integer:
      if (auto v = r.get_int(n, e.loc, path)) {
        if (auto bad = check_bounds(static_cast<double>(*v), n.Scalar(), s.min, s.max)) {
          r.fail(e.loc, path, *bad);
          return std::nullopt;
        }
        return OptionValue{*v};
      }
      return std::nullopt;
    case OptionType::number:
      if (auto v = r.get_number(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::duration:
      if (auto v = r.get_duration(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::bytes:
      if (auto v = r.get_bytes(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::bytes_text:
      if (r.get_bytes(n, e.loc, path, s.min, s.max)) return OptionValue{n.Scalar()};
      return std::nullopt;
    case OptionType::string:
      if (!s.choices.empty()) {
        if (auto v = r.get_choice(n, e.loc, path, s.choices)) return OptionValue{*v};
        return std::nullopt;
      }
      if (auto v = r.get_scalar(n, e.loc, path, "a string")) return OptionValue{*v};
      return std::nullopt;
    case OptionType::path:
      if (auto v = r.get_scalar(n, e.loc, path, "a path")) {
        if (v->empty()) {
          r.fail(e.loc, path, "a path", "an empty string");
          return std::nullopt;
        }
        fs::path p(*v);
        // Input paths resolve against the spec file's folder, so a config and
        // its data can move together.
        if (p.is_relative()) p = base_dir / p;
        return OptionValue{p.lexically_normal().string()};
      }
      return std::nullopt;
    case OptionType::string_list:
      if (auto v = r.get_string_list(n, e.loc, path)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::string_map: {
      if (!r.expect_map(n, e.loc, path, "a map of strings")) return std::nullopt;
      std::map<std::string, std::string> out;
      bool ok = true;
      for (const auto& k : r.read_map(n, path, nullptr)) {
        if (auto v = r.get_scalar(k.value, k.loc, child(path, k.key), "a string")) out[k.key] = *v;
        else ok = false;
      }
      if (!ok) return std::nullopt;
      return OptionValue{out};
    }
  }
  return std::nullopt;
}

// workload.kind: the kind's entry in the catalogue, or nullptr once the
// error is reported.
const WorkloadInfo* read_workload_kind(YamlReader& r, const Entry& e, const Entries& keys, WorkloadSpec& w) {
  const Entry* kind_entry = find(keys, "kind");
  std::vector<std::string> kinds = workload_kinds();
  if (std::find(kinds.begin(), kinds.end(), "auto") == kinds.end()) kinds.insert(kinds.begin(), "auto");
  if (!kind_entry) {
    r.fail(e.loc, "workload.kind", "a workload kind (one of " + join(kinds) + ")", "no 'kind' key");
    return nullptr;
  }
  auto k = r.get_scalar(kind_entry->value, kind_entry->loc, "workload.kind", "one of " + join(kinds));
  if (!k) return nullptr;
  w.requested_kind = *k;
  w.kind = *k;
  if (*k == "auto") {
    // A CUDA device is present when the driver's control node exists.
    w.kind = cuda_device_present() ? "cuda" : "cpu";
  }
  const WorkloadInfo* info = find_workload(w.kind);
  if (!info) {
    if (*k == "auto")
      r.fail(kind_entry->loc, "workload.kind", "one of " + join(kinds),
             fmt::format("'auto', which picked '{}', not built into this binary", w.kind));
    else
      r.fail(kind_entry->loc, "workload.kind", "one of " + join(kinds), "unknown kind " + quote(*k),
             did_you_mean(*k, kinds));
  }
  return info;
}

bool is_generic_workload_key(const std::string& key) {
  return key == "timeout" || key == "repeats" || key == "isolation";
}

// timeout, repeats or isolation, the keys of every kind; false once an error
// is reported.
bool read_generic_workload_key(YamlReader& r, const Entry& k, const std::string& path, WorkloadSpec& w) {
  if (k.key == "timeout") {
    const auto v = r.get_duration(k.value, k.loc, path);
    if (!v) return false;
    if (*v <= 0) {
      r.fail(k.loc, path, "a duration > 0", quote(k.value.Scalar()));
      return false;
    }
    w.timeout_s = *v;
    return true;
  }
  if (k.key == "repeats") {
    const auto v = r.get_int(k.value, k.loc, path, 1, 1000);
    if (!v) return false;
    w.repeats = static_cast<int>(*v);
    return true;
  }
  const auto v = r.get_choice(k.value, k.loc, path, {"process", "inline"});
  if (!v) return false;
  w.isolation = *v == "inline" ? Isolation::inline_ : Isolation::process;
  return true;
}

// One of the options a kind declares (`owner`: "the synthetic workload");
// an unknown key gets `elsewhere` as its hint when set (the key is another
// kind's), else the nearest allowed key. False once an error is reported.
bool read_declared_option(YamlReader& r, const std::vector<OptionSpec>& declared, const std::string& owner,
                          const Entry& k, const std::string& path, const std::vector<std::string>& allowed,
                          const std::string& elsewhere, const fs::path& base_dir, Options& out) {
  const OptionSpec* spec = find_option(declared, k.key);
  if (!spec) {
    r.fail(k.key_loc, path, fmt::format("an option of {} ({})", owner, join(allowed)), "unknown key " + quote(k.key),
           elsewhere.empty() ? did_you_mean(k.key, allowed) : elsewhere);
    return false;
  }
  auto v = read_option(r, *spec, k, path, base_dir);
  if (!v) return false;
  out.set(k.key, std::move(*v));
  return true;
}

// The declared options left out of `section`: their defaults, or an error
// for each required one; false once an error is reported.
bool fill_declared_defaults(YamlReader& r, const Entry& e, const std::string& section,
                            const std::vector<OptionSpec>& declared, const std::string& owner, const Entries& keys,
                            Options& out) {
  bool ok = true;
  for (const auto& s : declared) {
    if (out.has(s.key) || find(keys, s.key)) continue;
    if (s.default_value) {
      out.set(s.key, *s.default_value);
    } else {
      r.fail(e.loc, child(section, s.key),
             fmt::format("a '{}' key ({}; required by {})", s.key, to_string(s.type), owner), "none");
      ok = false;
    }
  }
  return ok;
}

// Let the workload look at its options now (a replay table that does not
// parse, a profile it does not know) so that the error comes with the rest.
void try_making_workload(YamlReader& r, const Entry& e, const WorkloadInfo& info, const SpaceRead& space,
                         const fs::path& base_dir, const WorkloadSpec& w) {
  WorkloadEnv env;
  env.parameter_names = names_of(space.params);
  env.spec_dir = base_dir;
  try {
    (void)info.make(w.options, env);
  } catch (const WorkloadConfigError& ex) {
    r.fail(loc_of(e.value, e.key_loc), "workload", fmt::format("a usable {} workload", w.kind), ex.what());
  } catch (const std::exception& ex) {
    r.fail(loc_of(e.value, e.key_loc), "workload", fmt::format("a usable {} workload", w.kind), ex.what());
  }
}

}  // namespace

void read_workload(YamlReader& r, const Entry& e, const SpaceRead& space, const fs::path& base_dir,
                   WorkloadSpec& w) {
  if (!r.expect_map(e.value, e.loc, "workload", "a map with kind and its options")) return;
  // Keys depend on the kind: read them all, check after.
  Entries keys = r.read_map(e.value, "workload", nullptr);
  const WorkloadInfo* info = read_workload_kind(r, e, keys, w);
  bool ok = true;
  std::vector<std::string> allowed = kWorkloadGenericKeys;
  if (info) std::ranges::copy(option_keys(info->options), std::back_inserter(allowed));
  for (const auto& k : keys) {
    const std::string path = child("workload", k.key);
    if (k.key == "kind") continue;
    if (is_generic_workload_key(k.key)) {
      if (!read_generic_workload_key(r, k, path, w)) ok = false;
      continue;
    }
    if (!info) continue;  // options of an unknown kind cannot be checked
    if (!read_declared_option(r, info->options, "the " + w.kind + " workload", k, path, allowed, "", base_dir,
                              w.options))
      ok = false;
  }
  if (!info) return;
  if (!fill_declared_defaults(r, e, "workload", info->options, "the " + w.kind + " workload", keys, w.options))
    ok = false;
  if (!ok || !space.parsed) return;
  try_making_workload(r, e, *info, space, base_dir, w);
}

void read_objective(YamlReader& r, const Entry& e, std::string& out) {
  if (auto s = r.get_choice(e.value, e.loc, "objective", kObjectives)) out = *s;
}

namespace {

// `search.options`: a map from a strategy's name to the options it declares
// (`options: {bo: {polish_after: 30}}`), so that compare can give each of
// several strategies its own.
void read_strategy_options(YamlReader& r, const Entry& e, SearchSpec& s) {
  if (!r.expect_map(e.value, e.loc, "search.options", "a map from a strategy's name to its options")) return;
  const std::vector<std::string> names = strategy_names();
  std::vector<std::string> with_options;
  for (const auto& st : strategy_catalog())
    if (!st.options.empty()) with_options.push_back(st.name);
  for (const auto& k : r.read_map(e.value, "search.options", nullptr)) {
    const std::string path = child("search.options", k.key);
    const StrategyInfo* info = find_strategy(k.key);
    if (!info) {
      // An option written without its strategy's name above it.
      std::string hint;
      for (const auto& st : strategy_catalog())
        if (find_option(st.options, k.key))
          hint = fmt::format("'{}' is an option of the {} strategy: write options: {{{}: {{{}: ...}}}}", k.key,
                             st.name, st.name, k.key);
      r.fail(k.key_loc, path, "a strategy's name (" + join(names) + ")", "unknown key " + quote(k.key),
             hint.empty() ? did_you_mean(k.key, names) : hint);
      continue;
    }
    const std::vector<std::string> allowed = option_keys(info->options);
    if (allowed.empty()) {
      r.fail(k.key_loc, path, "a strategy that takes options (" + join(with_options) + ")",
             "the " + k.key + " strategy, which takes none");
      continue;
    }
    if (!r.expect_map(k.value, k.loc, path, "a map of the " + k.key + " strategy's options")) continue;
    Options given;
    for (const auto& o : r.read_map(k.value, path, nullptr))
      read_declared_option(r, info->options, "the " + k.key + " strategy", o, child(path, o.key), allowed, "",
                           fs::path{}, given);
    s.strategy_options[k.key] = std::move(given);
  }
}

}  // namespace

void read_search(YamlReader& r, const Entry& e, const SpaceRead& space, const SearchSpace& built, SearchSpec& s) {
  if (!r.expect_map(e.value, e.loc, "search", "a map with strategy, budget, seed, initial, confirm, parallel, race"))
    return;
  Entries keys = r.read_map(e.value, "search", &kSearchKeys);
  if (const Entry* k = find(keys, "strategy"))
    if (auto v = r.get_checked<std::string>(k->value, k->loc, "search.strategy", "one of " + join(strategy_names()),
                                            check_strategy))
      s.strategy = *v;
  if (const Entry* k = find(keys, "budget")) read_budget(r, *k, "search.budget", s);
  if (const Entry* k = find(keys, "seed"))
    if (auto v = r.get_checked<std::uint64_t>(k->value, k->loc, "search.seed", "a non-negative integer", check_seed))
      s.seed = *v;
  if (const Entry* k = find(keys, "confirm"))
    if (auto v = r.get_int(k->value, k->loc, "search.confirm", kConfirmRange)) s.confirm = static_cast<int>(*v);
  if (const Entry* k = find(keys, "explain"))
    if (auto v = r.get_bool(k->value, k->loc, "search.explain")) s.explain = *v;
  if (const Entry* k = find(keys, "remeasure")) {
    if (k->value.IsScalar() && k->value.Scalar() == "false") s.remeasure = 0;
    else if (auto v = r.get_int(k->value, k->loc, "search.remeasure", kConfirmRange)) s.remeasure = static_cast<int>(*v);
  }
  if (const Entry* k = find(keys, "parallel"))
    if (auto v = r.get_int(k->value, k->loc, "search.parallel", kParallelRange)) s.parallel = static_cast<int>(*v);
  if (const Entry* k = find(keys, "initial")) read_initial(r, *k, "search.initial", space, built, s.initial);
  if (const Entry* k = find(keys, "busy"))
    if (auto v = r.get_choice(k->value, k->loc, "search.busy", {"warn", "wait", "ignore"})) s.busy = *v;
  if (const Entry* k = find(keys, "options")) read_strategy_options(r, *k, s);
  // `race: false` turns racing off; a number is the margin under the
  // incumbent below which a trial is stopped early (tuner/record/racing.hpp).
  if (const Entry* k = find(keys, "race")) {
    if (k->value.IsScalar() && (k->value.Scalar() == "false" || k->value.Scalar() == "true")) {
      if (auto v = r.get_bool(k->value, k->loc, "search.race")) s.race_margin = *v ? SearchSpec::kDefaultRaceMargin : -1;
    } else if (auto v = r.get_number(k->value, k->loc, "search.race", 0.0, 0.9)) {
      s.race_margin = *v;
    }
  }
}

void read_executor(YamlReader& r, const Entry* e, const ExecutorKinds& kinds, const fs::path& base_dir,
                   ExecutorSpec& x) {
  const std::vector<std::string> names = executor_kind_names(kinds);
  if (!e) {
    // No section: the local kind with its defaults.
    if (const ExecutorKind* local = find_executor_kind(kinds, x.kind))
      x.options = Options::with_defaults(local->options);
    return;
  }
  if (!r.expect_map(e->value, e->loc, "executor", "a map with kind (" + join(names, " or ") + ") and its options"))
    return;
  // Keys depend on the kind: read them all, check after.
  Entries keys = r.read_map(e->value, "executor", nullptr);
  const ExecutorKind* info = find_executor_kind(kinds, x.kind);
  if (const Entry* k = find(keys, "kind")) {
    info = nullptr;
    if (auto v = r.get_scalar(k->value, k->loc, "executor.kind", "one of " + join(names))) {
      info = find_executor_kind(kinds, *v);
      if (info)
        x.kind = *v;
      else
        r.fail(k->loc, "executor.kind", "one of " + join(names), "unknown kind " + quote(*v),
               did_you_mean(*v, names));
    }
  }
  std::vector<std::string> allowed = kExecutorGenericKeys;
  if (info) std::ranges::copy(option_keys(info->options), std::back_inserter(allowed));
  for (const auto& k : keys) {
    const std::string path = child("executor", k.key);
    if (k.key == "kind") continue;
    if (k.key == "gpus") {
      // `gpus: auto` lists every visible GPU; else a list with one entry per
      // slot (`[0, 1]`, or `["0,1", "2,3"]` for two per slot).
      if (k.value.IsScalar() && k.value.Scalar() == "auto") {
        x.gpus = probe_gpus().ids;
      } else if (k.value.IsSequence()) {
        if (auto v = r.get_string_list(k.value, k.loc, path)) x.gpus = *v;
      } else {
        r.fail(k.loc, path, "auto or a list of GPU ids, one entry per slot", describe(k.value));
      }
      continue;
    }
    if (!info) continue;  // options of an unknown kind cannot be checked
    // A key of another kind is said to be one (`pin_cpus` under slurm), not
    // "did you mean" a key of this kind that happens to be near it.
    std::string other;
    for (const auto& o : kinds)
      if (o.kind != info->kind && find_option(o.options, k.key))
        other = fmt::format("'{}' is an option of the {} executor", k.key, o.kind);
    read_declared_option(r, info->options, "the " + info->kind + " executor", k, path, allowed, other, base_dir,
                         x.options);
  }
  if (info)
    fill_declared_defaults(r, *e, "executor", info->options, "the " + info->kind + " executor", keys, x.options);
}

void read_output(YamlReader& r, const Entry* e, OutputSpec& o) {
  // Output paths are deliberately NOT resolved against the spec file's folder:
  // a relative `tuned:` lands in the current directory, like any command's
  // output file (the spec may live in a read-only shared folder).
  o.tuned = "tuned.yaml";
  std::optional<std::string> journal;
  if (e && r.expect_map(e->value, e->loc, "output", "a map with tuned, journal")) {
    Entries keys = r.read_map(e->value, "output", &kOutputKeys);
    if (const Entry* k = find(keys, "tuned"))
      if (auto v = r.get_scalar(k->value, k->loc, "output.tuned", "a path")) o.tuned = *v;
    if (const Entry* k = find(keys, "journal"))
      if (auto v = r.get_scalar(k->value, k->loc, "output.journal", "a path")) journal = *v;
  }
  if (journal) {
    o.journal = *journal;
  } else {
    std::string t = o.tuned.string();
    if (t.size() >= 5 && t.compare(t.size() - 5, 5, ".yaml") == 0) t.resize(t.size() - 5);
    o.journal = t + ".journal.jsonl";
  }
}

}  // namespace autotune
