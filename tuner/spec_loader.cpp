// Loads and validates a space.yaml into a Spec. The only file that includes
// yaml-cpp. Every problem is collected (never thrown, never stopping at the
// first), located by file, line and column, and says what was expected and
// what was found; the caller prints them all.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

#include <fmt/format.h>

#include "search/knobs.hpp"
#include "search/strategy.hpp"
#include "tuner/devices.hpp"
#include "tuner/spec.hpp"

#include "tuner/devices.hpp"

namespace autotune {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxDomainSize = 100'000;  // a range larger than this is surely a typo
constexpr int kDefaultLogPoints = 8;
constexpr int kDefaultBudgetTrials = 30;
constexpr std::size_t kMaxListedValues = 16;      // values shown in an error message

const std::vector<std::string> kTopKeys = {"workload", "space",    "constraints", "objective",
                                           "search",   "executor", "output"};
const std::vector<std::string> kWorkloadGenericKeys = {"kind", "timeout", "repeats", "isolation"};
const std::vector<std::string> kParamKeys = {"values", "range", "step", "log", "points", "pow2", "memory"};
// `memory:` on a parameter: which memory its value grows (search/knobs.hpp).
const std::vector<std::string> kMemoryUses = {"device", "host", "both", "none"};
const std::vector<std::string> kDomainForms = {"values", "range", "log", "pow2"};
const std::vector<std::string> kConstraintKeys = {"vram", "ram", "rules"};
const std::vector<std::string> kSearchKeys = {"strategy", "budget", "seed", "initial", "confirm", "parallel"};
const std::vector<std::string> kBudgetKeys = {"trials", "time"};
const std::vector<std::string> kOutputKeys = {"tuned", "journal"};
const std::vector<std::string> kExecutorKeys = {"kind",           "gpus",          "pin_cpus",
                                                "gpus_per_trial", "cpus_per_trial", "mem_per_trial",
                                                "srun_args"};
const std::vector<std::string> kObjectives = {"throughput"};

// ---------------------------------------------------------------- text helpers

// Optimal string alignment distance (Damerau-Levenshtein with adjacent
// transpositions, each substring edited once).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// The closest candidate within edit distance 2 (less than the word's length),
// else one that the word is a prefix of (or the reverse); empty when none.
std::string near_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d && d < word.size()) {
      best_d = d;
      best = c;
    }
  }
  if (!best.empty()) return best;
  if (word.size() >= 3)
    for (const auto& c : candidates)
      if (c.rfind(word, 0) == 0 || word.rfind(c, 0) == 0) return c;
  return {};
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string m = near_match(word, candidates);
  return m.empty() ? std::string() : "did you mean '" + m + "'?";
}

std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 60;
  if (s.size() > kMax) return "'" + std::string(s.substr(0, kMax)) + "...'";
  return "'" + std::string(s) + "'";
}

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? std::string(sep) : "") + items[i];
  return out;
}

std::string list_values(const std::vector<Value>& values) {
  std::vector<std::string> s;
  for (std::size_t i = 0; i < values.size() && i < kMaxListedValues; ++i) s.push_back(to_string(values[i]));
  if (values.size() > kMaxListedValues) s.push_back(fmt::format("... ({} values)", values.size()));
  return join(s);
}

std::vector<std::string> names_of(const std::vector<Parameter>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.name);
  return out;
}

std::vector<std::string> texts_of(const std::vector<Value>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(to_string(v));
  return out;
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string item(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

enum class IntParse { ok, not_integer, overflow };

IntParse parse_int(std::string_view s, std::int64_t& out) {
  std::size_t i = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) i = 1;
  if (i == s.size()) return IntParse::not_integer;
  for (std::size_t j = i; j < s.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(s[j]))) return IntParse::not_integer;
  const char* first = s.data() + (s[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return IntParse::overflow;
  if (ec != std::errc() || ptr != s.data() + s.size()) return IntParse::not_integer;
  return IntParse::ok;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

// YAML 1.2 core schema booleans; yes/no/on/off (YAML 1.1) are deliberately not.
std::optional<bool> parse_bool(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}
bool is_yaml11_bool(std::string_view s) {
  static const std::set<std::string, std::less<>> kWords = {"yes", "no", "on", "off", "y", "n",
                                                            "Yes", "No", "On", "Off", "YES", "NO",
                                                            "ON", "OFF"};
  return kWords.count(s) > 0;
}

// A scalar written with quotes ("16", 'x') is a string even when it reads as a
// number: yaml-cpp tags quoted scalars "!" and plain ones "?".
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return quote(n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

// ---------------------------------------------------------------- the loader

struct Loc {
  int line = 0;
  int column = 0;
};

Loc loc_of(const YAML::Node& n, Loc fallback = {}) {
  if (!n.IsDefined()) return fallback;
  const YAML::Mark m = n.Mark();
  if (m.line < 0 || m.column < 0) return fallback;  // Mark::null_mark()
  return {m.line + 1, m.column + 1};
}

// One key of a map, first occurrence.
struct Entry {
  std::string key;
  Loc key_loc;
  YAML::Node value;
  Loc loc;  // the value's position, or the key's when the value has none (empty value)
};
using Entries = std::vector<Entry>;

const Entry* find(const Entries& es, std::string_view key) {
  for (const auto& e : es)
    if (e.key == key) return &e;
  return nullptr;
}

class Loader {
 public:
  Loader(std::string file, fs::path base_dir) : m_file(std::move(file)), m_base(std::move(base_dir)) {}

  SpecLoadResult load(const std::string& text);

  void fail(Loc at, std::string path, std::string expected, std::string found, std::string hint = {}) {
    SpecError e;
    e.file = m_file;
    e.line = at.line;
    e.column = at.column;
    e.key_path = std::move(path);
    e.expected = std::move(expected);
    e.found = std::move(found);
    e.hint = std::move(hint);
    m_errors.push_back(std::move(e));
  }

 private:
  // Iterates a map: reports duplicate keys (yaml-cpp keeps both pairs) and,
  // when `allowed` is given, unknown ones. Returns the first occurrences.
  Entries read_map(const YAML::Node& map, const std::string& path, const std::vector<std::string>* allowed);
  // A map node or an error; `what` describes the expected map.
  bool expect_map(const YAML::Node& n, Loc at, const std::string& path, const std::string& what) {
    if (n.IsMap()) return true;
    fail(at, path, what, describe(n));
    return false;
  }

  // Scalars.
  std::optional<std::string> get_scalar(const YAML::Node& n, Loc at, const std::string& path,
                                        const std::string& what);
  std::optional<std::int64_t> get_int(const YAML::Node& n, Loc at, const std::string& path,
                                      std::optional<std::int64_t> min = std::nullopt,
                                      std::optional<std::int64_t> max = std::nullopt);
  std::optional<double> get_number(const YAML::Node& n, Loc at, const std::string& path,
                                   std::optional<double> min = std::nullopt,
                                   std::optional<double> max = std::nullopt);
  std::optional<bool> get_bool(const YAML::Node& n, Loc at, const std::string& path);
  std::optional<double> get_duration(const YAML::Node& n, Loc at, const std::string& path,
                                     std::optional<double> min = std::nullopt,
                                     std::optional<double> max = std::nullopt);
  std::optional<std::int64_t> get_bytes(const YAML::Node& n, Loc at, const std::string& path,
                                        std::optional<double> min = std::nullopt,
                                        std::optional<double> max = std::nullopt);
  std::optional<std::string> get_choice(const YAML::Node& n, Loc at, const std::string& path,
                                        const std::vector<std::string>& choices);
  std::optional<std::vector<std::string>> get_string_list(const YAML::Node& n, Loc at, const std::string& path);
  bool check_bounds(double x, Loc at, const std::string& path, const std::string& text,
                    std::optional<double> min, std::optional<double> max);

  // Sections.
  void read_space(const Entry& e);
  std::optional<Parameter> read_parameter(const Entry& e, const std::string& path);
  bool check_known_knob(const Parameter& param, const Entry& e, const std::string& path);
  bool read_memory_use(const Entry& e, const std::string& path, Parameter& param);
  std::optional<std::vector<Value>> read_values(const YAML::Node& list, Loc at, const std::string& path,
                                                Scale& scale);
  std::optional<std::pair<std::int64_t, std::int64_t>> read_bounds(const Entry& e, const std::string& path,
                                                                    std::int64_t min_lo);
  void read_constraints(const Entry& e);
  void build_space();
  void read_objective(const Entry& e);
  void read_search(const Entry& e);
  void read_budget(const Entry& e, const std::string& path);
  void read_initial(const Entry& e, const std::string& path);
  void read_executor(const Entry& e);
  void read_output(const Entry* e);
  void read_workload(const Entry& e);
  std::optional<OptionValue> read_option(const OptionSpec& s, const Entry& e, const std::string& path);

  std::string m_file;
  fs::path m_base;
  std::vector<SpecError> m_errors;
  Spec m_spec;

  // Space state shared between sections.
  std::vector<Parameter> m_params;
  bool m_space_ok = false;  // every parameter parsed and `space` present, non-empty
  std::vector<std::string> m_rules;
  std::vector<Loc> m_rule_locs;
  bool m_rules_ok = true;
  Loc m_rules_loc;
  std::string m_rules_path = "constraints.rules";
  bool m_built = false;  // m_spec.space holds the parameters and rules
};

Entries Loader::read_map(const YAML::Node& map, const std::string& path, const std::vector<std::string>* allowed) {
  Entries out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    const Loc key_loc = loc_of(key, loc_of(map));
    if (!key.IsScalar()) {
      fail(key_loc, path, "a key name", describe(key));
      continue;
    }
    const std::string name = key.Scalar();
    if (const Entry* first = find(out, name)) {
      fail(key_loc, child(path, name), "each key once",
           fmt::format("a duplicate key {} (first at line {})", quote(name), first->key_loc.line));
      continue;
    }
    if (allowed && std::find(allowed->begin(), allowed->end(), name) == allowed->end()) {
      fail(key_loc, child(path, name), "one of the keys " + join(*allowed), "unknown key " + quote(name),
           did_you_mean(name, *allowed));
      continue;
    }
    // An empty value's mark points past it (often at the next line): use the key's.
    out.push_back({name, key_loc, value, value.IsNull() ? key_loc : loc_of(value, key_loc)});
  }
  return out;
}

std::optional<std::string> Loader::get_scalar(const YAML::Node& n, Loc at, const std::string& path,
                                              const std::string& what) {
  if (n.IsScalar()) return n.Scalar();
  fail(at, path, what, describe(n));
  return std::nullopt;
}

bool Loader::check_bounds(double x, Loc at, const std::string& path, const std::string& text,
                          std::optional<double> min, std::optional<double> max) {
  if ((min && x < *min) || (max && x > *max)) {
    std::string expected;
    if (min && max) expected = fmt::format("a value from {} to {}", *min, *max);
    else if (min) expected = fmt::format("a value >= {}", *min);
    else expected = fmt::format("a value <= {}", *max);
    fail(at, path, expected, quote(text));
    return false;
  }
  return true;
}

std::optional<std::int64_t> Loader::get_int(const YAML::Node& n, Loc at, const std::string& path,
                                            std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  auto text = get_scalar(n, at, path, "an integer");
  if (!text) return std::nullopt;
  std::int64_t v = 0;
  switch (parse_int(*text, v)) {
    case IntParse::not_integer: fail(at, path, "an integer", quote(*text)); return std::nullopt;
    case IntParse::overflow:
      fail(at, path, "an integer that fits in 64 bits", quote(*text));
      return std::nullopt;
    case IntParse::ok: break;
  }
  std::optional<double> lo, hi;
  if (min) lo = static_cast<double>(*min);
  if (max) hi = static_cast<double>(*max);
  if (!check_bounds(static_cast<double>(v), at, path, *text, lo, hi)) return std::nullopt;
  return v;
}

std::optional<double> Loader::get_number(const YAML::Node& n, Loc at, const std::string& path,
                                         std::optional<double> min, std::optional<double> max) {
  auto text = get_scalar(n, at, path, "a number");
  if (!text) return std::nullopt;
  auto x = parse_double(*text);
  if (!x) {
    fail(at, path, "a number", quote(*text));
    return std::nullopt;
  }
  if (!check_bounds(*x, at, path, *text, min, max)) return std::nullopt;
  return x;
}

std::optional<bool> Loader::get_bool(const YAML::Node& n, Loc at, const std::string& path) {
  auto text = get_scalar(n, at, path, "true or false");
  if (!text) return std::nullopt;
  if (auto b = parse_bool(*text)) return b;
  fail(at, path, "true or false", quote(*text),
       is_yaml11_bool(*text) ? "only true and false are booleans here" : "");
  return std::nullopt;
}

std::optional<double> Loader::get_duration(const YAML::Node& n, Loc at, const std::string& path,
                                           std::optional<double> min, std::optional<double> max) {
  const std::string what(to_string(OptionType::duration));
  auto text = get_scalar(n, at, path, what);
  if (!text) return std::nullopt;
  auto x = parse_duration(*text);
  if (!x) {
    fail(at, path, what + " with unit ms, s, m, min or h", quote(*text));
    return std::nullopt;
  }
  if (!check_bounds(*x, at, path, *text, min, max)) return std::nullopt;
  return x;
}

std::optional<std::int64_t> Loader::get_bytes(const YAML::Node& n, Loc at, const std::string& path,
                                              std::optional<double> min, std::optional<double> max) {
  const std::string what(to_string(OptionType::bytes));
  auto text = get_scalar(n, at, path, what);
  if (!text) return std::nullopt;
  auto x = parse_bytes(*text);
  if (!x) {
    fail(at, path, what + "; units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB", quote(*text));
    return std::nullopt;
  }
  if (!check_bounds(static_cast<double>(*x), at, path, *text, min, max)) return std::nullopt;
  return x;
}

std::optional<std::string> Loader::get_choice(const YAML::Node& n, Loc at, const std::string& path,
                                              const std::vector<std::string>& choices) {
  const std::string what = "one of " + join(choices);
  auto text = get_scalar(n, at, path, what);
  if (!text) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *text) != choices.end()) return text;
  fail(at, path, what, quote(*text), did_you_mean(*text, choices));
  return std::nullopt;
}

std::optional<std::vector<std::string>> Loader::get_string_list(const YAML::Node& n, Loc at,
                                                                const std::string& path) {
  if (!n.IsSequence()) {
    fail(at, path, "a list of strings", describe(n));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (std::size_t i = 0; i < n.size(); ++i) {
    auto s = get_scalar(n[i], loc_of(n[i], at), item(path, i), "a string");
    if (s) out.push_back(*s);
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

// ---------------------------------------------------------------- space

void Loader::read_space(const Entry& e) {
  if (!e.value.IsMap()) {
    fail(e.loc, "space", "a map of parameters (name: {values: [...]})", describe(e.value));
    return;
  }
  Entries params = read_map(e.value, "space", nullptr);
  if (params.empty()) {
    fail(e.loc, "space", "at least one parameter", "an empty map");
    return;
  }
  bool ok = true;
  for (const auto& p : params) {
    const std::string path = child("space", p.key);
    if (!is_identifier(p.key)) {
      fail(p.key_loc, path, "a parameter name made of letters, digits and _ (usable in rules)",
           quote(p.key));
      ok = false;
      continue;
    }
    auto param = read_parameter(p, path);
    if (param && !check_known_knob(*param, p, path)) param.reset();
    if (param && !read_memory_use(p, path, *param)) param.reset();
    if (param) m_params.push_back(std::move(*param));
    else ok = false;
  }
  m_space_ok = ok && m_params.size() == params.size();
}

// `memory: device | host | both | none` beside a parameter's domain: what the
// feasibility model and the heuristic take its value to grow. False after a
// located error.
bool Loader::read_memory_use(const Entry& e, const std::string& path, Parameter& param) {
  if (!e.value.IsMap()) return true;
  for (auto it = e.value.begin(); it != e.value.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar() != "memory") continue;
    auto v = get_choice(it->second, loc_of(it->second, loc_of(it->first)), child(path, "memory"), kMemoryUses);
    if (!v) return false;
    param.memory = *parse_memory_use(*v);
    return true;  // a duplicate key is read_map's error
  }
  return true;
}

std::optional<std::pair<std::int64_t, std::int64_t>> Loader::read_bounds(const Entry& e, const std::string& path,
                                                                          std::int64_t min_lo) {
  if (!e.value.IsSequence() || e.value.size() != 2) {
    fail(e.loc, path, "a list [lo, hi]",
         e.value.IsSequence() ? fmt::format("a list of {} items", e.value.size()) : describe(e.value));
    return std::nullopt;
  }
  auto lo = get_int(e.value[0], loc_of(e.value[0], e.loc), item(path, 0));
  auto hi = get_int(e.value[1], loc_of(e.value[1], e.loc), item(path, 1));
  if (!lo || !hi) return std::nullopt;
  if (*lo < min_lo) {
    fail(loc_of(e.value[0], e.loc), item(path, 0), fmt::format("a lower bound >= {}", min_lo),
         quote(e.value[0].Scalar()), e.key == "log" ? "a log range needs positive values" : "");
    return std::nullopt;
  }
  if (*lo > *hi) {
    fail(e.loc, path, "lo <= hi", fmt::format("[{}, {}], an empty domain", *lo, *hi));
    return std::nullopt;
  }
  return std::make_pair(*lo, *hi);
}

std::optional<Parameter> Loader::read_parameter(const Entry& e, const std::string& path) {
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
    fail(e.loc, path, "a domain: {values: [...]}, {range: [lo, hi]}, {log: [lo, hi]}, {pow2: [lo, hi]} or a list",
         describe(e.value));
    return std::nullopt;
  }
  Entries keys = read_map(e.value, path, &kParamKeys);
  std::vector<const Entry*> forms;
  for (const auto& k : keys)
    if (std::find(kDomainForms.begin(), kDomainForms.end(), k.key) != kDomainForms.end()) forms.push_back(&k);
  if (forms.empty()) {
    fail(e.loc, path, "one of values, range, log, pow2", keys.empty() ? "an empty map" : "none of them");
    return std::nullopt;
  }
  bool ok = true;
  if (forms.size() > 1) {
    for (std::size_t i = 1; i < forms.size(); ++i)
      fail(forms[i]->key_loc, child(path, forms[i]->key), "exactly one of values, range, log, pow2",
           fmt::format("both '{}' and '{}'", forms[0]->key, forms[i]->key));
    return std::nullopt;
  }
  const Entry& form = *forms[0];
  const std::string fpath = child(path, form.key);
  const Entry* step = find(keys, "step");
  const Entry* points = find(keys, "points");
  if (step && form.key != "range") {
    fail(step->key_loc, child(path, "step"), "'step' only with 'range'", "'step' with '" + form.key + "'");
    ok = false;
  }
  if (points && form.key != "log") {
    fail(points->key_loc, child(path, "points"), "'points' only with 'log'", "'points' with '" + form.key + "'");
    ok = false;
  }

  if (form.key == "values") {
    if (!form.value.IsSequence()) {
      fail(form.loc, fpath, "a list of values", describe(form.value));
      return std::nullopt;
    }
    auto values = read_values(form.value, form.loc, fpath, param.scale);
    if (!values || !ok) return std::nullopt;
    param.values = std::move(*values);
    return param;
  }

  if (form.key == "range") {
    std::int64_t st = 1;
    if (step && form.key == "range") {
      auto s = get_int(step->value, step->loc, child(path, "step"));
      if (s && *s <= 0) {
        fail(step->loc, child(path, "step"), "a step > 0", quote(step->value.Scalar()));
        s.reset();
      }
      if (!s) ok = false;
      else st = *s;
    }
    auto b = read_bounds(form, fpath, std::numeric_limits<std::int64_t>::min());
    if (!b || !ok) return std::nullopt;
    // Unsigned arithmetic: hi - lo may not fit in int64.
    const auto span = static_cast<std::uint64_t>(b->second) - static_cast<std::uint64_t>(b->first);
    if (span / static_cast<std::uint64_t>(st) >= kMaxDomainSize) {
      fail(form.loc, fpath, fmt::format("a range of at most {} values", kMaxDomainSize),
           fmt::format("[{}, {}] with step {}", b->first, b->second, st));
      return std::nullopt;
    }
    for (std::uint64_t off = 0; off <= span; off += static_cast<std::uint64_t>(st))
      param.values.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(b->first) + off));
    param.scale = Scale::linear;
    return param;
  }

  if (form.key == "log") {
    int n = kDefaultLogPoints;
    if (points) {
      auto p = get_int(points->value, points->loc, child(path, "points"), 2, 1000);
      if (!p) ok = false;
      else n = static_cast<int>(*p);
    }
    auto b = read_bounds(form, fpath, 1);
    if (!b || !ok) return std::nullopt;
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
    return param;
  }

  // pow2
  auto b = read_bounds(form, fpath, 1);
  if (!b || !ok) return std::nullopt;
  for (std::int64_t p = 1; p > 0 && p <= b->second; p = p <= (INT64_MAX / 2) ? p * 2 : -1)
    if (p >= b->first) param.values.emplace_back(p);
  if (param.values.empty()) {
    fail(form.loc, fpath, "bounds that contain a power of two",
         fmt::format("[{}, {}], an empty domain", b->first, b->second));
    return std::nullopt;
  }
  param.scale = Scale::log;
  return param;
}

// The well-known knobs' own domains (search/knobs.hpp): a batch of -8
// samples or a precision the tool cannot name is bad input, not a trial to
// spend.
bool Loader::check_known_knob(const Parameter& param, const Entry& e, const std::string& path) {
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
    fail(loc_of(n, e.loc), list.IsSequence() ? item(lpath, at) : lpath, expected, quote(found),
         knob->domain == KnobDomain::precision ? did_you_mean(found, precisions) : "");
    ok = false;
    if (!is_list) break;  // a range reports its bound once
  }
  return ok;
}

std::optional<std::vector<Value>> Loader::read_values(const YAML::Node& list, Loc at, const std::string& path,
                                                      Scale& scale) {
  if (list.size() == 0) {
    fail(at, path, "at least one value", "an empty list");
    return std::nullopt;
  }
  enum class Kind { integer, boolean, string };
  auto kind_name = [](Kind k) {
    return k == Kind::integer ? "an integer" : k == Kind::boolean ? "a boolean" : "a string";
  };
  std::vector<Value> values;
  std::vector<Kind> kinds;
  std::vector<Loc> locs;
  std::vector<std::string> texts;
  bool ok = true;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node n = list[i];
    const Loc l = loc_of(n, at);
    const std::string p = item(path, i);
    if (!n.IsScalar()) {
      fail(l, p, "an integer, true/false or a name", describe(n));
      ok = false;
      continue;
    }
    const std::string& s = n.Scalar();
    std::int64_t v = 0;
    Kind k = Kind::string;
    Value val{s};
    if (!is_quoted(n)) {
      const IntParse ip = parse_int(s, v);
      if (ip == IntParse::overflow) {
        fail(l, p, "an integer that fits in 64 bits", quote(s));
        ok = false;
        continue;
      }
      if (ip == IntParse::ok) {
        k = Kind::integer;
        val = Value{v};
      } else if (auto b = parse_bool(s)) {
        k = Kind::boolean;
        val = Value{*b};
      } else if (is_yaml11_bool(s)) {
        fail(l, p, "an integer, true/false or a name", quote(s),
             "only true and false are booleans; quote it to use it as a name");
        ok = false;
        continue;
      } else if (parse_double(s)) {
        fail(l, p, "an integer, true/false or a name", quote(s),
             "fractional numbers are not parameter values; quote it to use it as a name");
        ok = false;
        continue;
      }
    }
    values.push_back(std::move(val));
    kinds.push_back(k);
    locs.push_back(l);
    texts.push_back(s);
  }
  if (!ok) return std::nullopt;
  // One type per parameter: a mix is almost always a typo ([16, 3x2]).
  for (std::size_t i = 1; i < kinds.size(); ++i)
    if (kinds[i] != kinds[0]) {
      fail(locs[i], item(path, i), fmt::format("{} like the first value", kind_name(kinds[0])),
           fmt::format("{} ({})", quote(texts[i]), kind_name(kinds[i])),
           "quote every value to make them all names");
      return std::nullopt;
    }
  for (std::size_t i = 1; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i] == values[j]) {
        fail(locs[i], item(path, i), "distinct values",
             fmt::format("{} again (also {})", quote(texts[i]), item(path, j)));
        ok = false;
        break;
      }
  if (!ok) return std::nullopt;
  if (kinds[0] == Kind::string) {
    scale = Scale::categorical;
  } else if (kinds[0] == Kind::boolean) {
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

void Loader::read_constraints(const Entry& e) {
  if (!expect_map(e.value, e.loc, "constraints", "a map with vram, ram, rules")) return;
  Entries keys = read_map(e.value, "constraints", &kConstraintKeys);
  if (const Entry* v = find(keys, "vram"))
    if (auto b = get_bytes(v->value, v->loc, "constraints.vram", 0.0))
      m_spec.limits.vram_bytes = static_cast<double>(*b);
  if (const Entry* r = find(keys, "ram"))
    if (auto b = get_bytes(r->value, r->loc, "constraints.ram", 0.0))
      m_spec.limits.ram_bytes = static_cast<double>(*b);
  if (const Entry* r = find(keys, "rules")) {
    m_rules_loc = r->loc;
    if (!r->value.IsSequence()) {
      fail(r->loc, m_rules_path, "a list of rules, e.g. [\"batch_size * grad_accum <= 1024\"]",
           describe(r->value));
      m_rules_ok = false;
      return;
    }
    for (std::size_t i = 0; i < r->value.size(); ++i) {
      const YAML::Node n = r->value[i];
      auto s = get_scalar(n, loc_of(n, r->loc), item(m_rules_path, i), "a rule (an expression as a string)");
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
void Loader::build_space() {
  if (!m_space_ok) return;
  bool ok = m_rules_ok;
  for (std::size_t i = 0; i < m_rules.size(); ++i)
    if (auto msg = RuleSet::check(m_rules[i], m_params)) {
      fail(m_rule_locs[i], item(m_rules_path, i), "a rule over the parameters (" + join(names_of(m_params)) + ")",
           quote(m_rules[i]) + ": " + *msg);
      ok = false;
    }
  if (!ok) return;
  try {
    m_spec.space = SearchSpace(m_params, m_rules);
  } catch (const std::exception& ex) {
    fail({}, "space", "a valid search space", ex.what());
    return;
  }
  m_built = true;
  if (m_rules.empty()) return;
  // Is any configuration valid? Walk the product (last parameter fastest) and
  // stop at the first that passes; give up (accept) past the enumeration cap.
  constexpr double kMaxWalk = 2'000'000;
  const SearchSpace& space = m_spec.space;
  if (space.cardinality() > kMaxWalk) return;
  Config c(space.dims(), 0);
  std::size_t checked = 0;
  for (bool done = false; !done;) {
    ++checked;
    if (space.is_valid(c)) return;
    done = true;
    for (std::size_t d = space.dims(); d-- > 0;) {
      if (++c[d] < static_cast<int>(space.param(d).values.size())) {
        done = false;
        break;
      }
      c[d] = 0;
    }
  }
  fail(m_rules_loc, m_rules_path, "rules that at least one configuration satisfies",
       fmt::format("no configuration satisfies the rules ({} checked)", checked));
}

// ---------------------------------------------------------------- objective, search, executor, output

void Loader::read_objective(const Entry& e) {
  if (auto s = get_choice(e.value, e.loc, "objective", kObjectives)) m_spec.objective = *s;
}

void Loader::read_search(const Entry& e) {
  if (!expect_map(e.value, e.loc, "search", "a map with strategy, budget, seed, initial, confirm, parallel"))
    return;
  Entries keys = read_map(e.value, "search", &kSearchKeys);
  SearchSpec& s = m_spec.search;
  if (const Entry* k = find(keys, "strategy"))
    if (auto v = get_choice(k->value, k->loc, "search.strategy", strategy_names())) s.strategy = *v;
  if (const Entry* k = find(keys, "budget")) read_budget(*k, "search.budget");
  if (const Entry* k = find(keys, "seed")) {
    auto text = get_scalar(k->value, k->loc, "search.seed", "a non-negative integer");
    if (text) {
      std::uint64_t v = 0;
      auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
      if (ec != std::errc() || ptr != text->data() + text->size())
        fail(k->loc, "search.seed", "a non-negative integer", quote(*text));
      else
        s.seed = v;
    }
  }
  if (const Entry* k = find(keys, "confirm"))
    if (auto v = get_int(k->value, k->loc, "search.confirm", 0, 1000)) s.confirm = static_cast<int>(*v);
  if (const Entry* k = find(keys, "parallel"))
    if (auto v = get_int(k->value, k->loc, "search.parallel", 1, 4096)) s.parallel = static_cast<int>(*v);
  if (const Entry* k = find(keys, "initial")) read_initial(*k, "search.initial");
}

void Loader::read_budget(const Entry& e, const std::string& path) {
  SearchSpec& s = m_spec.search;
  s.budget_trials = 0;
  if (e.value.IsScalar()) {  // `budget: 40` is a number of trials
    if (auto v = get_int(e.value, e.loc, path, 1, INT32_MAX)) s.budget_trials = static_cast<int>(*v);
    return;
  }
  if (!expect_map(e.value, e.loc, path, "a number of trials or a map {trials: N, time: 30m}")) return;
  Entries keys = read_map(e.value, path, &kBudgetKeys);
  bool ok = true;
  if (const Entry* k = find(keys, "trials")) {
    if (auto v = get_int(k->value, k->loc, child(path, "trials"), 0, INT32_MAX)) s.budget_trials = static_cast<int>(*v);
    else ok = false;
  }
  if (const Entry* k = find(keys, "time")) {
    if (auto v = get_duration(k->value, k->loc, child(path, "time"), 0.0)) s.budget_seconds = *v;
    else ok = false;
  }
  if (ok && s.budget_trials <= 0 && s.budget_seconds <= 0)
    fail(e.loc, path, "trials > 0 or time > 0", keys.empty() ? "an empty map" : "neither");
}

void Loader::read_initial(const Entry& e, const std::string& path) {
  if (!e.value.IsSequence()) {
    fail(e.loc, path, "a list of configurations ({name: value, ...})", describe(e.value));
    return;
  }
  const std::vector<std::string> names = names_of(m_params);
  for (std::size_t i = 0; i < e.value.size(); ++i) {
    const YAML::Node n = e.value[i];
    const Loc at = loc_of(n, e.loc);
    const std::string ipath = item(path, i);
    if (!expect_map(n, at, ipath, "a configuration {name: value, ...}")) continue;
    // Parameter names are known only when the space parsed; otherwise check
    // the map's shape and leave the rest to the space's own errors.
    Entries keys = read_map(n, ipath, m_space_ok ? &names : nullptr);
    if (!m_space_ok) continue;
    Assignment a;
    bool ok = true;
    std::vector<std::string> missing;
    for (const auto& p : m_params) {
      const Entry* k = find(keys, p.name);
      if (!k) {
        missing.push_back(p.name);
        continue;
      }
      const std::string kpath = child(ipath, p.name);
      const std::string allowed = "one of " + list_values(p.values);
      std::optional<Value> v;
      if (is_int(p.values[0])) {
        if (auto x = get_int(k->value, k->loc, kpath)) v = Value{*x};
      } else if (is_bool(p.values[0])) {
        if (auto x = get_bool(k->value, k->loc, kpath)) v = Value{*x};
      } else if (auto x = get_scalar(k->value, k->loc, kpath, allowed)) {
        v = Value{*x};
      }
      if (!v) {
        ok = false;
        continue;
      }
      if (std::find(p.values.begin(), p.values.end(), *v) == p.values.end()) {
        fail(k->loc, kpath, allowed, quote(to_string(*v)) + ", not in the domain of " + p.name,
             is_string(*v) ? did_you_mean(std::get<std::string>(*v), texts_of(p.values)) : "");
        ok = false;
        continue;
      }
      a.set(p.name, *v);
    }
    if (!missing.empty()) {
      fail(at, ipath, "a value for every parameter", "no value for " + join(missing));
      ok = false;
    }
    if (!ok || !m_built) continue;
    auto c = m_spec.space.from_assignment(a);
    if (!c) {
      fail(at, ipath, "a configuration in the space", a.describe());
      continue;
    }
    if (auto rule = m_spec.space.violated_rule(*c)) {
      fail(at, ipath, "a configuration satisfying every rule", "it violates " + quote(*rule));
      continue;
    }
    m_spec.search.initial.push_back(*c);
  }
}

void Loader::read_executor(const Entry& e) {
  if (!expect_map(e.value, e.loc, "executor", "a map with kind (local or slurm) and its options")) return;
  Entries keys = read_map(e.value, "executor", &kExecutorKeys);
  ExecutorSpec& x = m_spec.executor;
  if (const Entry* k = find(keys, "kind"))
    if (auto v = get_choice(k->value, k->loc, "executor.kind", {"local", "slurm"})) x.kind = *v;
  if (const Entry* k = find(keys, "gpus")) {
    // `gpus: auto` lists every visible GPU; else a list with one entry per
    // slot (`[0, 1]`, or `["0,1", "2,3"]` for two per slot).
    if (k->value.IsScalar() && k->value.Scalar() == "auto") {
      x.gpus = probe_gpus().ids;
    } else if (k->value.IsSequence()) {
      if (auto v = get_string_list(k->value, k->loc, "executor.gpus")) x.gpus = *v;
    } else {
      fail(k->loc, "executor.gpus", "auto or a list of GPU ids, one entry per slot", describe(k->value));
    }
  }
  if (const Entry* k = find(keys, "pin_cpus"))
    if (auto v = get_bool(k->value, k->loc, "executor.pin_cpus")) x.pin_cpus = *v;
  if (const Entry* k = find(keys, "gpus_per_trial"))
    if (auto v = get_int(k->value, k->loc, "executor.gpus_per_trial", 0, 1024)) x.gpus_per_trial = static_cast<int>(*v);
  if (const Entry* k = find(keys, "cpus_per_trial"))
    if (auto v = get_int(k->value, k->loc, "executor.cpus_per_trial", 0, 65536)) x.cpus_per_trial = static_cast<int>(*v);
  if (const Entry* k = find(keys, "mem_per_trial"))
    if (get_bytes(k->value, k->loc, "executor.mem_per_trial")) x.mem_per_trial = k->value.Scalar();
  if (const Entry* k = find(keys, "srun_args"))
    if (auto v = get_string_list(k->value, k->loc, "executor.srun_args")) x.srun_args = *v;
}

void Loader::read_output(const Entry* e) {
  // Output paths are deliberately NOT resolved against the spec file's folder:
  // a relative `tuned:` lands in the current directory, like any command's
  // output file (the spec may live in a read-only shared folder).
  OutputSpec& o = m_spec.output;
  o.tuned = "tuned.yaml";
  std::optional<std::string> journal;
  if (e && expect_map(e->value, e->loc, "output", "a map with tuned, journal")) {
    Entries keys = read_map(e->value, "output", &kOutputKeys);
    if (const Entry* k = find(keys, "tuned"))
      if (auto v = get_scalar(k->value, k->loc, "output.tuned", "a path")) o.tuned = *v;
    if (const Entry* k = find(keys, "journal"))
      if (auto v = get_scalar(k->value, k->loc, "output.journal", "a path")) journal = *v;
  }
  if (journal) {
    o.journal = *journal;
  } else {
    std::string t = o.tuned.string();
    if (t.size() >= 5 && t.compare(t.size() - 5, 5, ".yaml") == 0) t.resize(t.size() - 5);
    o.journal = t + ".journal.jsonl";
  }
}

// ---------------------------------------------------------------- workload

std::optional<OptionValue> Loader::read_option(const OptionSpec& s, const Entry& e, const std::string& path) {
  const auto& n = e.value;
  switch (s.type) {
    case OptionType::boolean:
      if (auto v = get_bool(n, e.loc, path)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::integer:
      if (auto v = get_int(n, e.loc, path)) {
        if (!check_bounds(static_cast<double>(*v), e.loc, path, n.Scalar(), s.min, s.max)) return std::nullopt;
        return OptionValue{*v};
      }
      return std::nullopt;
    case OptionType::number:
      if (auto v = get_number(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::duration:
      if (auto v = get_duration(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::bytes:
      if (auto v = get_bytes(n, e.loc, path, s.min, s.max)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::string:
      if (!s.choices.empty()) {
        if (auto v = get_choice(n, e.loc, path, s.choices)) return OptionValue{*v};
        return std::nullopt;
      }
      if (auto v = get_scalar(n, e.loc, path, "a string")) return OptionValue{*v};
      return std::nullopt;
    case OptionType::path:
      if (auto v = get_scalar(n, e.loc, path, "a path")) {
        if (v->empty()) {
          fail(e.loc, path, "a path", "an empty string");
          return std::nullopt;
        }
        fs::path p(*v);
        // Input paths resolve against the spec file's folder, so a config and
        // its data can move together.
        if (p.is_relative()) p = m_base / p;
        return OptionValue{p.lexically_normal().string()};
      }
      return std::nullopt;
    case OptionType::string_list:
      if (auto v = get_string_list(n, e.loc, path)) return OptionValue{*v};
      return std::nullopt;
    case OptionType::string_map: {
      if (!expect_map(n, e.loc, path, "a map of strings")) return std::nullopt;
      std::map<std::string, std::string> out;
      bool ok = true;
      for (const auto& k : read_map(n, path, nullptr)) {
        if (auto v = get_scalar(k.value, k.loc, child(path, k.key), "a string")) out[k.key] = *v;
        else ok = false;
      }
      if (!ok) return std::nullopt;
      return OptionValue{out};
    }
  }
  return std::nullopt;
}

void Loader::read_workload(const Entry& e) {
  if (!expect_map(e.value, e.loc, "workload", "a map with kind and its options")) return;
  WorkloadSpec& w = m_spec.workload;
  // Keys depend on the kind: read them all, check after.
  Entries keys = read_map(e.value, "workload", nullptr);
  const Entry* kind_entry = find(keys, "kind");
  std::vector<std::string> kinds = workload_kinds();
  if (std::find(kinds.begin(), kinds.end(), "auto") == kinds.end()) kinds.insert(kinds.begin(), "auto");
  const WorkloadInfo* info = nullptr;
  bool ok = true;
  if (!kind_entry) {
    fail(e.loc, "workload.kind", "a workload kind (one of " + join(kinds) + ")", "no 'kind' key");
    ok = false;
  } else if (auto k = get_scalar(kind_entry->value, kind_entry->loc, "workload.kind", "one of " + join(kinds))) {
    w.requested_kind = *k;
    w.kind = *k;
    if (*k == "auto") {
      // A CUDA device is present when the driver's control node exists.
      w.kind = cuda_device_present() ? "cuda" : "cpu";
    }
    info = find_workload(w.kind);
    if (!info) {
      if (*k == "auto")
        fail(kind_entry->loc, "workload.kind", "one of " + join(kinds),
             fmt::format("'auto', which picked '{}', not built into this binary", w.kind));
      else
        fail(kind_entry->loc, "workload.kind", "one of " + join(kinds), "unknown kind " + quote(*k),
             did_you_mean(*k, kinds));
      ok = false;
    }
  } else {
    ok = false;
  }

  std::vector<std::string> allowed = kWorkloadGenericKeys;
  if (info)
    for (const auto& o : info->options) allowed.push_back(o.key);
  for (const auto& k : keys) {
    const std::string path = child("workload", k.key);
    if (k.key == "kind") continue;
    if (k.key == "timeout") {
      if (auto v = get_duration(k.value, k.loc, path)) {
        if (*v <= 0) {
          fail(k.loc, path, "a duration > 0", quote(k.value.Scalar()));
          ok = false;
        } else {
          w.timeout_s = *v;
        }
      } else {
        ok = false;
      }
      continue;
    }
    if (k.key == "repeats") {
      if (auto v = get_int(k.value, k.loc, path, 1, 1000)) w.repeats = static_cast<int>(*v);
      else ok = false;
      continue;
    }
    if (k.key == "isolation") {
      if (auto v = get_choice(k.value, k.loc, path, {"process", "inline"}))
        w.isolation = *v == "inline" ? Isolation::inline_ : Isolation::process;
      else
        ok = false;
      continue;
    }
    if (!info) continue;  // options of an unknown kind cannot be checked
    auto spec = std::find_if(info->options.begin(), info->options.end(),
                             [&](const OptionSpec& s) { return s.key == k.key; });
    if (spec == info->options.end()) {
      fail(k.key_loc, path, fmt::format("an option of the {} workload ({})", w.kind, join(allowed)),
           "unknown key " + quote(k.key), did_you_mean(k.key, allowed));
      ok = false;
      continue;
    }
    if (auto v = read_option(*spec, k, path)) w.options.set(k.key, std::move(*v));
    else ok = false;
  }
  if (!info) return;
  for (const auto& s : info->options) {
    if (w.options.has(s.key) || find(keys, s.key)) continue;
    if (s.default_value) {
      w.options.set(s.key, *s.default_value);
    } else {
      fail(e.loc, child("workload", s.key), fmt::format("a '{}' key ({}; required by the {} workload)", s.key,
                                                        to_string(s.type), w.kind),
           "none");
      ok = false;
    }
  }
  if (!ok || !m_space_ok) return;
  // Let the workload look at its options now (a replay table that does not
  // parse, a profile it does not know) so that the error comes with the rest.
  WorkloadEnv env;
  env.parameter_names = names_of(m_params);
  env.spec_dir = m_base;
  try {
    (void)info->make(w.options, env);
  } catch (const WorkloadConfigError& ex) {
    fail(loc_of(e.value, e.key_loc), "workload", fmt::format("a usable {} workload", w.kind), ex.what());
  } catch (const std::exception& ex) {
    fail(loc_of(e.value, e.key_loc), "workload", fmt::format("a usable {} workload", w.kind), ex.what());
  }
}

// ---------------------------------------------------------------- the whole file

SpecLoadResult Loader::load(const std::string& text) {
  SpecLoadResult result;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& ex) {
    Loc at{ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ex.mark.column >= 0 ? ex.mark.column + 1 : 0};
    fail(at, "", "valid YAML", "a syntax error: " + ex.msg);
    result.errors = std::move(m_errors);
    return result;
  } catch (const YAML::Exception& ex) {
    fail({}, "", "valid YAML", ex.what());
    result.errors = std::move(m_errors);
    return result;
  }
  if (!root.IsDefined() || root.IsNull()) {
    fail({1, 1}, "", "a map with workload: and space:", "an empty file");
  } else if (!root.IsMap()) {
    fail(loc_of(root, {1, 1}), "", "a map with workload: and space: at the top level", describe(root));
  } else {
    m_spec.file = m_file;
    Entries top = read_map(root, "", &kTopKeys);
    // The space first: rules, the initial configurations and the workload
    // factory all need its parameters.
    if (const Entry* e = find(top, "space")) read_space(*e);
    else fail({1, 1}, "space", "a 'space' section (the parameters to tune)", "none");
    if (const Entry* e = find(top, "constraints")) read_constraints(*e);
    build_space();
    if (const Entry* e = find(top, "workload")) read_workload(*e);
    else fail({1, 1}, "workload", "a 'workload' section (e.g. {kind: synthetic})", "none");
    if (const Entry* e = find(top, "objective")) read_objective(*e);
    // Without `search.strategy`: bo when it is built in, else random.
    m_spec.search.strategy = find_strategy("bo") ? "bo" : "random";
    m_spec.search.budget_trials = kDefaultBudgetTrials;
    if (const Entry* e = find(top, "search")) read_search(*e);
    if (const Entry* e = find(top, "executor")) read_executor(*e);
    read_output(find(top, "output"));
  }
  std::stable_sort(m_errors.begin(), m_errors.end(), [](const SpecError& a, const SpecError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  result.errors = std::move(m_errors);
  if (result.errors.empty()) result.spec = std::move(m_spec);
  return result;
}

}  // namespace

SpecLoadResult load_spec_text(const std::string& text, const std::string& name, const fs::path& base_dir) {
  std::error_code ec;
  fs::path base = base_dir.empty() ? fs::current_path(ec) : fs::absolute(base_dir, ec);
  if (ec) base = base_dir;
  Loader loader(name, base);
  return loader.load(text);
}

SpecLoadResult load_spec_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::is_directory(path, ec)) {
    SpecLoadResult r;
    SpecError e;
    e.file = path.string();
    e.expected = "a readable spec file";
    e.found = fs::is_directory(path, ec) ? "a directory" : "no such file";
    r.errors.push_back(std::move(e));
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    SpecLoadResult r;
    SpecError e;
    e.file = path.string();
    e.expected = "a readable spec file";
    e.found = "a file that cannot be read";
    r.errors.push_back(std::move(e));
    return r;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  auto r = load_spec_text(text.str(), path.string(), dir);
  if (r.spec) r.spec->file = path;
  return r;
}

// configs/default_cpu.yaml and configs/default_gpu.yaml, embedded at build
// time (cmake/EmbedText.cmake): one source, which users can copy.
const std::string& default_cpu_spec_text();
const std::string& default_gpu_spec_text();

const std::string& embedded_default_spec() {
  // On a GPU every precision is a real choice; the cpu workload measures fp32
  // only, so there the default does not spend trials on `error` outcomes.
  return cuda_device_present() ? default_gpu_spec_text() : default_cpu_spec_text();
}

}  // namespace autotune
