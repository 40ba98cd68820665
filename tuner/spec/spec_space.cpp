// The space section: each parameter's domain (a list, a range, a log ladder,
// powers of two), the well-known knobs' own domains, `memory:`, and the
// constraints (limits and rules) that make it a SearchSpace.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "core/knobs.hpp"
#include "core/machine.hpp"
#include "tuner/spec/spec_sections.hpp"

namespace autotune {

namespace {

constexpr std::size_t kMaxDomainSize = 100'000;  // a range larger than this is surely a typo
constexpr int kDefaultLogPoints = 8;

const std::vector<std::string> kParamKeys = {"values", "range", "step", "log", "points", "pow2", "memory", "custom"};
// A knob of one's own whose name is at most this many edits from a built-in
// knob's (num_wokers, batch_szie, Pin_Memory) is refused without `custom: true`.
constexpr std::size_t kNearKnobEdits = 2;
// `memory:` on a parameter: which memory its value grows (core/knobs.hpp).
const std::vector<std::string> kMemoryUses = {"device", "host", "both", "none"};
const std::vector<std::string> kDomainForms = {"values", "range", "log", "pow2"};
const std::vector<std::string> kConstraintKeys = {"vram", "ram", "rules", "effective_batch", "ranks"};

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// One item of a `values:` list, where it was written and as what.
enum class ValueKind { integer, boolean, string };
struct ListedValue {
  Value value;
  ValueKind kind;
  Loc loc;
  std::string text;
};

const char* value_kind_name(ValueKind k) {
  return k == ValueKind::integer ? "an integer" : k == ValueKind::boolean ? "a boolean" : "a string";
}

class SpaceReader {
 public:
  SpaceReader(YamlReader& r, SearchSpace& space, Limits& limits) : m_r(r), m_space(space), m_limits(limits) {}

  SpaceRead read(const Entry* space, const Entry* constraints) {
    if (space) read_space(*space);
    if (constraints) read_constraints(*constraints);
    build_space();
    return std::move(m_out);
  }

 private:
  void read_space(const Entry& e);
  std::optional<Parameter> read_parameter(const Entry& e, const std::string& path);
  // The integer domain forms, each filling `param` (false: an error was
  // reported, here or before: `ok` false).
  bool read_range(const Entry& form, const Entry* step, const std::string& path, bool ok, Parameter& param);
  bool read_log(const Entry& form, const Entry* points, const std::string& path, bool ok, Parameter& param);
  bool read_pow2(const Entry& form, const std::string& path, bool ok, Parameter& param);
  bool check_known_knob(const Parameter& param, const Entry& e, const std::string& path);
  bool check_env_name(const Entry& p, const std::string& path,
                      std::unordered_map<std::string, const Entry*>& by_env);
  bool check_custom_name(const Entry& p, const std::string& path);
  bool read_memory_use(const Entry& e, const std::string& path, Parameter& param);
  std::optional<std::vector<Value>> read_values(const YAML::Node& list, Loc at, const std::string& path,
                                                Scale& scale);
  // nullopt: an error was reported.
  std::optional<ListedValue> read_listed_value(const YAML::Node& n, Loc l, const std::string& p);
  // One kind, distinct values (false: errors reported).
  bool check_listed_values(const std::vector<ListedValue>& xs, const std::string& path);
  std::optional<std::pair<std::int64_t, std::int64_t>> read_bounds(const Entry& e, const std::string& path,
                                                                    std::int64_t min_lo);
  void read_constraints(const Entry& e);
  void build_space();
  void check_satisfiable();
  // What the rules may name besides the knobs: the job's data-parallel ranks
  // on this node and the cores autotune may use here.
  std::map<std::string, double> rule_facts() const {
    return {{"ranks", static_cast<double>(m_out.ranks)}, {"cores", static_cast<double>(usable_cores())}};
  }
  Loc m_effective_batch_loc;

  YamlReader& m_r;
  SearchSpace& m_space;
  Limits& m_limits;
  SpaceRead m_out;
  std::vector<std::string> m_rules;
  std::vector<Loc> m_rule_locs;
  bool m_rules_ok = true;
  Loc m_rules_loc;
  const std::string m_rules_path = "constraints.rules";
};

void SpaceReader::read_space(const Entry& e) {
  if (!e.value.IsMap()) {
    m_r.fail(e.loc, "space", "a map of parameters (name: {values: [...]})", describe(e.value));
    return;
  }
  Entries params = m_r.read_map(e.value, "space", nullptr);
  if (params.empty()) {
    m_r.fail(e.loc, "space", "at least one parameter", "an empty map");
    return;
  }
  bool ok = true;
  std::unordered_map<std::string, const Entry*> by_env;  // a trial's environment name -> the knob that has it
  for (const auto& p : params) {
    const std::string path = child("space", p.key);
    if (!is_identifier(p.key)) {
      m_r.fail(p.key_loc, path, "a parameter name made of letters, digits and _ (usable in rules)",
               quote(p.key));
      ok = false;
      continue;
    }
    if (!check_env_name(p, path, by_env) || !check_custom_name(p, path)) {
      ok = false;
      continue;
    }
    auto param = read_parameter(p, path);
    if (param && !check_known_knob(*param, p, path)) param.reset();
    if (param && !read_memory_use(p, path, *param)) param.reset();
    if (param) m_out.params.push_back(std::move(*param));
    else ok = false;
  }
  m_out.parsed = ok && m_out.params.size() == params.size();
}

// A knob reaches a command trial as AUTOTUNE_<NAME>: that name must be
// neither one the tool sets itself (AUTOTUNE_TRIAL, AUTOTUNE_STOP_BELOW, ...:
// one would silently overwrite the other) nor another knob's (names that
// differ only in case). False after a located error.
bool SpaceReader::check_env_name(const Entry& p, const std::string& path,
                                 std::unordered_map<std::string, const Entry*>& by_env) {
  const std::string env = knob_env_name(p.key);
  const auto& tool = tool_env_names();
  if (std::find(tool.begin(), tool.end(), env) != tool.end()) {
    m_r.fail(p.key_loc, path, "a parameter name whose environment variable is not one autotune sets or reads",
             fmt::format("{} (a trial's {} is autotune's own)", quote(p.key), env), "rename the parameter");
    return false;
  }
  auto [it, fresh] = by_env.emplace(env, &p);
  if (!fresh) {
    m_r.fail(p.key_loc, path, "parameter names that differ in more than case (each is a trial's AUTOTUNE_<NAME>)",
             fmt::format("{} and {} (line {}) are both {}", quote(p.key), quote(it->second->key),
                         it->second->key_loc.line, env));
    return false;
  }
  return true;
}

// A knob of one's own named a letter or two from a built-in knob is almost
// always a typo (num_wokers): it would be tuned and recommended while the
// script reads the built-in knob's variable, or none. `custom: true` on the
// knob says the name is meant; on a built-in knob it is refused (it would
// not make the knob one's own). False after a located error.
bool SpaceReader::check_custom_name(const Entry& p, const std::string& path) {
  bool custom = false;
  Loc custom_loc = p.key_loc;
  if (p.value.IsMap())
    for (auto it = p.value.begin(); it != p.value.end(); ++it) {
      if (!it->first.IsScalar() || it->first.Scalar() != "custom") continue;
      custom_loc = loc_of(it->second, loc_of(it->first, p.key_loc));
      const auto v = m_r.get_bool(it->second, custom_loc, child(path, "custom"));
      if (!v) return false;
      custom = *v;
      break;  // a duplicate key is read_map's error
    }
  if (find_knob(p.key)) {
    if (!custom) return true;
    m_r.fail(custom_loc, child(path, "custom"), "custom: true only on a knob of your own",
             fmt::format("{}, a built-in knob", quote(p.key)), "remove custom: true");
    return false;
  }
  if (custom) return true;
  std::string lower = p.key;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const KnobInfo* nearest = nullptr;
  std::size_t edits = kNearKnobEdits + 1;
  for (const KnobInfo& k : knob_table())
    if (const std::size_t d = edit_distance(lower, k.name); d < edits) {
      edits = d;
      nearest = &k;
    }
  if (!nearest) return true;
  const std::string how =
      edits == 0 ? "differs only in case from" : fmt::format("is {} edit{} from", edits, edits == 1 ? "" : "s");
  m_r.fail(p.key_loc, path, "a built-in knob's name, or custom: true on a knob of your own",
           fmt::format("{}, which {} the built-in knob '{}'", quote(p.key), how, nearest->name),
           fmt::format("did you mean '{}'? A knob of your own by this name: {}: {{values: [...], custom: true}}",
                       nearest->name, p.key));
  return false;
}

// `memory: device | host | both | none` beside a parameter's domain: what the
// feasibility model and the heuristic take its value to grow. False after a
// located error.
bool SpaceReader::read_memory_use(const Entry& e, const std::string& path, Parameter& param) {
  if (!e.value.IsMap()) return true;
  for (auto it = e.value.begin(); it != e.value.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar() != "memory") continue;
    auto v = m_r.get_choice(it->second, loc_of(it->second, loc_of(it->first)), child(path, "memory"), kMemoryUses);
    if (!v) return false;
    param.memory = *parse_memory_use(*v);
    return true;  // a duplicate key is read_map's error
  }
  return true;
}

std::optional<std::pair<std::int64_t, std::int64_t>> SpaceReader::read_bounds(const Entry& e,
                                                                               const std::string& path,
                                                                               std::int64_t min_lo) {
  if (!e.value.IsSequence() || e.value.size() != 2) {
    m_r.fail(e.loc, path, "a list [lo, hi]",
             e.value.IsSequence() ? fmt::format("a list of {} items", e.value.size()) : describe(e.value));
    return std::nullopt;
  }
  auto lo = m_r.get_int(e.value[0], loc_of(e.value[0], e.loc), item(path, 0));
  auto hi = m_r.get_int(e.value[1], loc_of(e.value[1], e.loc), item(path, 1));
  if (!lo || !hi) return std::nullopt;
  if (*lo < min_lo) {
    m_r.fail(loc_of(e.value[0], e.loc), item(path, 0), fmt::format("a lower bound >= {}", min_lo),
             quote(e.value[0].Scalar()), e.key == "log" ? "a log range needs positive values" : "");
    return std::nullopt;
  }
  if (*lo > *hi) {
    m_r.fail(e.loc, path, "lo <= hi", fmt::format("[{}, {}], an empty domain", *lo, *hi));
    return std::nullopt;
  }
  return std::make_pair(*lo, *hi);
}

std::optional<Parameter> SpaceReader::read_parameter(const Entry& e, const std::string& path) {
  Parameter param;
  param.name = e.key;
  // Short form: `batch_size: [16, 32, 64]` means `{values: [16, 32, 64]}`.
  if (e.value.IsSequence()) {
    auto values = read_values(e.value, e.loc, path, param.scale);
    if (!values) return std::nullopt;
    param.values = std::move(*values);
    return param;
  }
  if (!e.value.IsMap()) {
    m_r.fail(e.loc, path, "a domain: {values: [...]}, {range: [lo, hi]}, {log: [lo, hi]}, {pow2: [lo, hi]} or a list",
             describe(e.value));
    return std::nullopt;
  }
  Entries keys = m_r.read_map(e.value, path, &kParamKeys);
  std::vector<const Entry*> forms;
  for (const auto& k : keys)
    if (std::find(kDomainForms.begin(), kDomainForms.end(), k.key) != kDomainForms.end()) forms.push_back(&k);
  if (forms.empty()) {
    m_r.fail(e.loc, path, "one of values, range, log, pow2", keys.empty() ? "an empty map" : "none of them");
    return std::nullopt;
  }
  bool ok = true;
  if (forms.size() > 1) {
    for (std::size_t i = 1; i < forms.size(); ++i)
      m_r.fail(forms[i]->key_loc, child(path, forms[i]->key), "exactly one of values, range, log, pow2",
               fmt::format("both '{}' and '{}'", forms[0]->key, forms[i]->key));
    return std::nullopt;
  }
  const Entry& form = *forms[0];
  const std::string fpath = child(path, form.key);
  const Entry* step = find(keys, "step");
  const Entry* points = find(keys, "points");
  if (step && form.key != "range") {
    m_r.fail(step->key_loc, child(path, "step"), "'step' only with 'range'", "'step' with '" + form.key + "'");
    ok = false;
  }
  if (points && form.key != "log") {
    m_r.fail(points->key_loc, child(path, "points"), "'points' only with 'log'", "'points' with '" + form.key + "'");
    ok = false;
  }

  if (form.key == "values") {
    if (!form.value.IsSequence()) {
      m_r.fail(form.loc, fpath, "a list of values", describe(form.value));
      return std::nullopt;
    }
    auto values = read_values(form.value, form.loc, fpath, param.scale);
    if (!values || !ok) return std::nullopt;
    param.values = std::move(*values);
    return param;
  }

  bool read = false;
  if (form.key == "range") read = read_range(form, step, path, ok, param);
  else if (form.key == "log") read = read_log(form, points, path, ok, param);
  else read = read_pow2(form, path, ok, param);
  return read ? std::optional<Parameter>(std::move(param)) : std::nullopt;
}

// {range: [lo, hi], step: s}: every s-th integer from lo to hi.
bool SpaceReader::read_range(const Entry& form, const Entry* step, const std::string& parent, bool ok,
                             Parameter& param) {
  const std::string fpath = child(parent, form.key);
  std::int64_t st = 1;
  if (step) {
    auto s = m_r.get_int(step->value, step->loc, child(parent, "step"));
    if (s && *s <= 0) {
      m_r.fail(step->loc, child(parent, "step"), "a step > 0", quote(step->value.Scalar()));
      s.reset();
    }
    if (!s) ok = false;
    else st = *s;
  }
  auto b = read_bounds(form, fpath, std::numeric_limits<std::int64_t>::min());
  if (!b || !ok) return false;
  // Unsigned arithmetic: hi - lo may not fit in int64.
  const auto span = static_cast<std::uint64_t>(b->second) - static_cast<std::uint64_t>(b->first);
  if (span / static_cast<std::uint64_t>(st) >= kMaxDomainSize) {
    m_r.fail(form.loc, fpath, fmt::format("a range of at most {} values", kMaxDomainSize),
             fmt::format("[{}, {}] with step {}", b->first, b->second, st));
    return false;
  }
  for (std::uint64_t off = 0; off <= span; off += static_cast<std::uint64_t>(st))
    param.values.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(b->first) + off));
  param.scale = Scale::linear;
  return true;
}

// {log: [lo, hi], points: n}: a geometric ladder of n integers from lo to hi.
bool SpaceReader::read_log(const Entry& form, const Entry* points, const std::string& parent, bool ok,
                           Parameter& param) {
  const std::string fpath = child(parent, form.key);
  int n = kDefaultLogPoints;
  if (points) {
    auto p = m_r.get_int(points->value, points->loc, child(parent, "points"), 2, 1000);
    if (!p) ok = false;
    else n = static_cast<int>(*p);
  }
  auto b = read_bounds(form, fpath, 1);
  if (!b || !ok) return false;
  // A geometric ladder: round(lo * r^k), k = 0..n-1, r = (hi/lo)^(1/(n-1)),
  // deduplicated (small ranges give fewer than n distinct integers), so
  // lo and hi are always the ends.
  const double lo = static_cast<double>(b->first), hi = static_cast<double>(b->second);
  const double r = std::pow(hi / lo, 1.0 / (n - 1));
  std::vector<std::int64_t> ladder;
  for (int k = 0; k < n; ++k) {
    auto v = k == n - 1 ? b->second : static_cast<std::int64_t>(std::llround(lo * std::pow(r, k)));
    v = std::clamp(v, b->first, b->second);
    if (ladder.empty() || v > ladder.back()) ladder.push_back(v);
  }
  for (auto v : ladder) param.values.emplace_back(v);
  param.scale = Scale::log;
  return true;
}

// {pow2: [lo, hi]}: the powers of two from lo to hi.
bool SpaceReader::read_pow2(const Entry& form, const std::string& parent, bool ok, Parameter& param) {
  const std::string fpath = child(parent, form.key);
  auto b = read_bounds(form, fpath, 1);
  if (!b || !ok) return false;
  for (std::int64_t p = 1; p > 0 && p <= b->second; p = p <= (INT64_MAX / 2) ? p * 2 : -1)
    if (p >= b->first) param.values.emplace_back(p);
  if (param.values.empty()) {
    m_r.fail(form.loc, fpath, "bounds that contain a power of two",
             fmt::format("[{}, {}], an empty domain", b->first, b->second));
    return false;
  }
  param.scale = Scale::log;
  return true;
}

// The well-known knobs' own domains (core/knobs.hpp): a batch of -8
// samples or a precision the tool cannot name is bad input, not a trial to
// spend.
bool SpaceReader::check_known_knob(const Parameter& param, const Entry& e, const std::string& path) {
  const KnobInfo* knob = find_knob(param.name);
  if (!knob) return true;
  // Where value i was written: an item of the list, or the range's bounds.
  YAML::Node list = e.value;
  std::string lpath = path;
  if (e.value.IsMap()) {
    for (const char* form : {"values", "range", "log", "pow2"})
      if (e.value[form]) {
        list = e.value[form];
        lpath = child(path, form);
        break;
      }
  }
  const bool is_list = lpath == path || lpath == child(path, "values");
  std::vector<std::string> precisions;
  for (auto p : known_precisions()) precisions.emplace_back(p);
  bool ok = true;
  for (std::size_t i = 0; i < param.values.size(); ++i) {
    const std::string expected = knob_domain_violation(*knob, param.values[i]);
    if (expected.empty()) continue;
    const std::size_t at = is_list ? i : 0;
    const YAML::Node n = list.IsSequence() && at < list.size() ? list[at] : list;
    const std::string found = to_string(param.values[i]);
    m_r.fail(loc_of(n, e.loc), list.IsSequence() ? item(lpath, at) : lpath, expected, quote(found),
             knob->domain == KnobDomain::precision ? did_you_mean(found, precisions) : "");
    ok = false;
    if (!is_list) break;  // a range reports its bound once
  }
  return ok;
}

std::optional<ListedValue> SpaceReader::read_listed_value(const YAML::Node& n, Loc l, const std::string& p) {
  if (!n.IsScalar()) {
    m_r.fail(l, p, "an integer, true/false or a name", describe(n));
    return std::nullopt;
  }
  const std::string& s = n.Scalar();
  ListedValue x{Value{s}, ValueKind::string, l, s};
  if (is_quoted(n)) return x;
  std::int64_t v = 0;
  const IntParse ip = parse_int(s, v);
  if (ip == IntParse::overflow) {
    m_r.fail(l, p, "an integer that fits in 64 bits", quote(s));
    return std::nullopt;
  }
  if (ip == IntParse::ok) {
    x.kind = ValueKind::integer;
    x.value = Value{v};
  } else if (auto b = parse_bool(s)) {
    x.kind = ValueKind::boolean;
    x.value = Value{*b};
  } else if (is_yaml11_bool(s)) {
    m_r.fail(l, p, "an integer, true/false or a name", quote(s),
             "only true and false are booleans; quote it to use it as a name");
    return std::nullopt;
  } else if (parse_double(s)) {
    m_r.fail(l, p, "an integer, true/false or a name", quote(s),
             "fractional numbers are not parameter values; quote it to use it as a name");
    return std::nullopt;
  }
  return x;
}

bool SpaceReader::check_listed_values(const std::vector<ListedValue>& xs, const std::string& path) {
  // One type per parameter: a mix is almost always a typo ([16, 3x2]).
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (xs[i].kind != xs[0].kind) {
      m_r.fail(xs[i].loc, item(path, i), fmt::format("{} like the first value", value_kind_name(xs[0].kind)),
               fmt::format("{} ({})", quote(xs[i].text), value_kind_name(xs[i].kind)),
               "quote every value to make them all names");
      return false;
    }
  // Each value's first place, in one pass: a list may hold a million values.
  bool ok = true;
  std::map<Value, std::size_t> first;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto [at, fresh] = first.emplace(xs[i].value, i);
    if (fresh) continue;
    m_r.fail(xs[i].loc, item(path, i), "distinct values",
             fmt::format("{} again (also {})", quote(xs[i].text), item(path, at->second)));
    ok = false;
  }
  return ok;
}

std::optional<std::vector<Value>> SpaceReader::read_values(const YAML::Node& list, Loc at,
                                                           const std::string& path, Scale& scale) {
  if (list.size() == 0) {
    m_r.fail(at, path, "at least one value", "an empty list");
    return std::nullopt;
  }
  std::vector<ListedValue> xs;
  bool ok = true;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node n = list[i];
    if (auto x = read_listed_value(n, loc_of(n, at), item(path, i))) xs.push_back(std::move(*x));
    else ok = false;
  }
  if (!ok || !check_listed_values(xs, path)) return std::nullopt;
  std::vector<Value> values;
  for (auto& x : xs) values.push_back(std::move(x.value));
  if (xs[0].kind == ValueKind::string) {
    scale = Scale::categorical;
  } else if (xs[0].kind == ValueKind::boolean) {
    scale = Scale::linear;
  } else {
    // Integer lists spanning a factor of 8 or more (16..512) are read on a
    // log scale by the surrogate; narrow ones (1..4, 0..16) linearly.
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& v : values) {
      lo = std::min(lo, std::get<std::int64_t>(v));
      hi = std::max(hi, std::get<std::int64_t>(v));
    }
    scale = lo > 0 && static_cast<double>(hi) / static_cast<double>(lo) >= 8.0 ? Scale::log : Scale::linear;
  }
  return values;
}

// ---------------------------------------------------------------- constraints

void SpaceReader::read_constraints(const Entry& e) {
  if (!m_r.expect_map(e.value, e.loc, "constraints", "a map with vram, ram, rules")) return;
  Entries keys = m_r.read_map(e.value, "constraints", &kConstraintKeys);
  if (const Entry* v = find(keys, "vram"))
    if (auto b = m_r.get_bytes(v->value, v->loc, "constraints.vram", 0.0))
      m_limits.vram_bytes = static_cast<double>(*b);
  if (const Entry* r = find(keys, "ram"))
    if (auto b = m_r.get_bytes(r->value, r->loc, "constraints.ram", 0.0))
      m_limits.ram_bytes = static_cast<double>(*b);
  if (const Entry* b = find(keys, "effective_batch")) {
    if (auto n = m_r.get_int(b->value, b->loc, "constraints.effective_batch", 1, 1'000'000'000)) {
      m_out.effective_batch = *n;
      m_effective_batch_loc = b->loc;
    } else {
      m_rules_ok = false;
    }
  }
  if (const Entry* n = find(keys, "ranks"))
    if (auto v = m_r.get_int(n->value, n->loc, "constraints.ranks", 1, 1'000'000)) m_out.ranks = *v;
  if (const Entry* r = find(keys, "rules")) {
    m_rules_loc = r->loc;
    if (!r->value.IsSequence()) {
      m_r.fail(r->loc, m_rules_path, "a list of rules, e.g. [\"batch_size * grad_accum <= 1024\"]",
               describe(r->value));
      m_rules_ok = false;
      return;
    }
    for (std::size_t i = 0; i < r->value.size(); ++i) {
      const YAML::Node n = r->value[i];
      auto s = m_r.get_scalar(n, loc_of(n, r->loc), item(m_rules_path, i), "a rule (an expression as a string)");
      if (!s) {
        m_rules_ok = false;
        continue;
      }
      m_rules.push_back(*s);
      m_rule_locs.push_back(loc_of(n, r->loc));
    }
  }
}

// Checks the rules against the parameters and builds the space.
void SpaceReader::build_space() {
  if (!m_out.parsed) return;
  bool ok = m_rules_ok;
  // effective_batch: a rule like any other, so every strategy keeps it; the
  // search splits it between batch_size and grad_accum.
  if (m_out.effective_batch) {
    const auto names = names_of(m_out.params);
    const bool batch = std::find(names.begin(), names.end(), "batch_size") != names.end();
    const bool accum = std::find(names.begin(), names.end(), "grad_accum") != names.end();
    if (!batch) {
      m_r.fail(m_effective_batch_loc, "constraints.effective_batch",
               "a batch_size parameter in space (effective_batch pins batch_size x grad_accum)",
               "no batch_size among " + join(names));
      ok = false;
    } else {
      const std::string ranks = m_out.ranks > 1 ? fmt::format(" * {}", m_out.ranks) : std::string();
      const std::string rule = accum ? fmt::format("batch_size * grad_accum{} == {}", ranks, *m_out.effective_batch)
                                     : fmt::format("batch_size{} == {}", ranks, *m_out.effective_batch);
      if (m_rules.empty()) m_rules_loc = m_effective_batch_loc;
      m_rules.push_back(rule);
      m_rule_locs.push_back(m_effective_batch_loc);
    }
  }
  for (std::size_t i = 0; i < m_rules.size(); ++i)
    if (auto msg = RuleSet::check(m_rules[i], m_out.params, rule_facts())) {
      m_r.fail(m_rule_locs[i], item(m_rules_path, i),
               "a rule over the parameters (" + join(names_of(m_out.params)) + ") and `ranks`, `cores`",
               quote(m_rules[i]) + ": " + *msg);
      ok = false;
    }
  if (!ok) return;
  try {
    m_space = SearchSpace(m_out.params, m_rules, rule_facts());
  } catch (const std::exception& ex) {
    m_r.fail({}, "space", "a valid search space", ex.what());
    return;
  }
  m_out.built = true;
  if (!m_rules.empty()) check_satisfiable();
}

// Is any configuration valid? Random draws settle it at once unless the rules
// leave very few; then the space's own enumeration decides (it keeps only the
// valid configurations, so it stays small here). Past the enumeration's cap
// the spec is accepted unchecked.
void SpaceReader::check_satisfiable() {
  Rng rng(0);  // any seed: a draw is only ever a valid configuration
  if (m_space.sample(rng)) return;
  const auto valid = m_space.enumerate();
  if (!valid || !valid->empty()) return;
  m_r.fail(m_rules_loc, m_rules_path, "rules that at least one configuration satisfies",
           fmt::format("no configuration satisfies the rules ({} checked)",
                       static_cast<std::size_t>(m_space.cardinality())));
}

}  // namespace

std::vector<std::string> names_of(const std::vector<Parameter>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.name);
  return out;
}

SpaceRead read_space(YamlReader& r, const Entry* space, const Entry* constraints, SearchSpace& out_space,
                     Limits& out_limits) {
  return SpaceReader(r, out_space, out_limits).read(space, constraints);
}

}  // namespace autotune
