#include "tuner/spec/yaml_reader.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/options.hpp"

namespace autotune {

Loc loc_of(const YAML::Node& n, Loc fallback) {
  if (!n.IsDefined()) return fallback;
  const YAML::Mark m = n.Mark();
  if (m.line < 0 || m.column < 0) return fallback;  // Mark::null_mark()
  return {m.line + 1, m.column + 1};
}

const Entry* find(const Entries& es, std::string_view key) {
  for (const auto& e : es)
    if (e.key == key) return &e;
  return nullptr;
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string item(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return quote(n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    default: return "nothing";
  }
}

bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

void YamlReader::fail(Loc at, std::string path, std::string expected, std::string found, std::string hint) {
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

std::vector<SpecError> YamlReader::take_errors() {
  std::stable_sort(m_errors.begin(), m_errors.end(), [](const SpecError& a, const SpecError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  return std::move(m_errors);
}

Entries YamlReader::read_map(const YAML::Node& map, const std::string& path,
                             const std::vector<std::string>* allowed) {
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

bool YamlReader::expect_map(const YAML::Node& n, Loc at, const std::string& path, const std::string& what) {
  if (n.IsMap()) return true;
  fail(at, path, what, describe(n));
  return false;
}

std::optional<std::string> YamlReader::get_scalar(const YAML::Node& n, Loc at, const std::string& path,
                                                  const std::string& what) {
  if (n.IsScalar()) return n.Scalar();
  fail(at, path, what, describe(n));
  return std::nullopt;
}

std::optional<std::int64_t> YamlReader::get_int(const YAML::Node& n, Loc at, const std::string& path,
                                                std::optional<std::int64_t> min, std::optional<std::int64_t> max) {
  return get_checked<std::int64_t>(n, at, path, "an integer",
                                   [&](const std::string& t) { return check_int(t, min, max); });
}

std::optional<double> YamlReader::get_number(const YAML::Node& n, Loc at, const std::string& path,
                                             std::optional<double> min, std::optional<double> max) {
  return get_checked<double>(n, at, path, "a number", [&](const std::string& t) { return check_number(t, min, max); });
}

std::optional<bool> YamlReader::get_bool(const YAML::Node& n, Loc at, const std::string& path) {
  return get_checked<bool>(n, at, path, "true or false", [](const std::string& t) { return check_bool(t); });
}

std::optional<double> YamlReader::get_duration(const YAML::Node& n, Loc at, const std::string& path,
                                               std::optional<double> min, std::optional<double> max) {
  return get_checked<double>(n, at, path, std::string(to_string(OptionType::duration)),
                             [&](const std::string& t) { return check_duration(t, min, max); });
}

std::optional<std::int64_t> YamlReader::get_bytes(const YAML::Node& n, Loc at, const std::string& path,
                                                  std::optional<double> min, std::optional<double> max) {
  return get_checked<std::int64_t>(n, at, path, std::string(to_string(OptionType::bytes)),
                                   [&](const std::string& t) { return check_bytes(t, min, max); });
}

std::optional<std::string> YamlReader::get_choice(const YAML::Node& n, Loc at, const std::string& path,
                                                  const std::vector<std::string>& choices) {
  return get_checked<std::string>(n, at, path, "one of " + join(choices),
                                  [&](const std::string& t) { return check_choice(t, choices); });
}

std::optional<std::vector<std::string>> YamlReader::get_string_list(const YAML::Node& n, Loc at,
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

}  // namespace autotune
