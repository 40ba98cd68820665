#pragma once
// The typed, located YAML reader under the spec loader. Private to the loader
// files (spec_loader.cpp, spec_space.cpp, spec_sections.cpp): the one header
// that brings in yaml-cpp; nothing else in the tuner should include it.
//
// Every getter checks one node, records a located SpecError when it is not
// what was expected (never throws, never stops at the first), and returns
// nullopt then. The checks on the text itself are the shared ones
// (tuner/spec/spec_checks.hpp), so the command line refuses what the file does.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tuner/spec/spec.hpp"
#include "tuner/spec/spec_checks.hpp"

namespace autotune {

// 1-based; 0 when unknown.
struct Loc {
  int line = 0;
  int column = 0;
};

Loc loc_of(const YAML::Node& n, Loc fallback = {});

// One key of a map, first occurrence.
struct Entry {
  std::string key;
  Loc key_loc;
  YAML::Node value;
  Loc loc;  // the value's position, or the key's when the value has none (empty value)
};
using Entries = std::vector<Entry>;

const Entry* find(const Entries& es, std::string_view key);

// Key paths in messages: "space.batch_size", "search.initial[2]".
std::string child(const std::string& path, std::string_view key);
std::string item(const std::string& path, std::size_t i);

// "'16'", "a list", "a map", "nothing": what a node is, for "found ...".
std::string describe(const YAML::Node& n);
// A scalar written with quotes ("16", 'x') is a string even when it reads as a
// number: yaml-cpp tags quoted scalars "!" and plain ones "?".
bool is_quoted(const YAML::Node& n);

// The error collector and the typed getters for one file.
class YamlReader {
 public:
  explicit YamlReader(std::string file) : m_file(std::move(file)) {}

  const std::string& file() const { return m_file; }
  void fail(Loc at, std::string path, std::string expected, std::string found, std::string hint = {});
  void fail(Loc at, std::string path, Invalid why) {
    fail(at, std::move(path), std::move(why.expected), std::move(why.found), std::move(why.hint));
  }
  // The errors so far, sorted by position (stable: same place, reported order).
  std::vector<SpecError> take_errors();

  // Iterates a map: reports duplicate keys (yaml-cpp keeps both pairs) and,
  // when `allowed` is given, unknown ones. Returns the first occurrences.
  Entries read_map(const YAML::Node& map, const std::string& path, const std::vector<std::string>* allowed);
  // A map node or an error; `what` describes the expected map.
  bool expect_map(const YAML::Node& n, Loc at, const std::string& path, const std::string& what);

  // Scalars; the bounds are inclusive.
  std::optional<std::string> get_scalar(const YAML::Node& n, Loc at, const std::string& path,
                                        const std::string& what);
  std::optional<std::int64_t> get_int(const YAML::Node& n, Loc at, const std::string& path,
                                      std::optional<std::int64_t> min = std::nullopt,
                                      std::optional<std::int64_t> max = std::nullopt);
  std::optional<std::int64_t> get_int(const YAML::Node& n, Loc at, const std::string& path, IntRange r) {
    return get_int(n, at, path, r.min, r.max);
  }
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
  // A shared check on a scalar's text (check_strategy, check_seed, ...);
  // `what` names the expected scalar when the node is a list or a map.
  template <class T, class Check>
  std::optional<T> get_checked(const YAML::Node& n, Loc at, const std::string& path, const std::string& what,
                               Check check) {
    auto text = get_scalar(n, at, path, what);
    if (!text) return std::nullopt;
    return take(check(*text), at, path);
  }

 private:
  template <class T>
  std::optional<T> take(Checked<T> c, Loc at, const std::string& path) {
    if (!c.value) fail(at, path, std::move(c.error));
    return std::move(c.value);
  }

  std::string m_file;
  std::vector<SpecError> m_errors;
};

}  // namespace autotune
