#include "core/options.hpp"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace autotune {

std::string_view to_string(OptionType t) {
  switch (t) {
    case OptionType::boolean: return "a boolean";
    case OptionType::integer: return "an integer";
    case OptionType::number: return "a number";
    case OptionType::string: return "a string";
    case OptionType::duration: return "a duration (e.g. 300s, 5m)";
    case OptionType::bytes: return "a size (e.g. 8GiB, 512MB)";
    case OptionType::bytes_text: return "a size (e.g. 16G, 512MB)";
    case OptionType::path: return "a path";
    case OptionType::string_list: return "a list of strings";
    case OptionType::string_map: return "a map of strings";
  }
  return "a value";
}

const OptionValue& Options::at(std::string_view key) const {
  auto it = m_values.find(std::string(key));
  if (it == m_values.end()) throw std::out_of_range("option '" + std::string(key) + "' is not set");
  return it->second;
}

bool Options::get_bool(std::string_view key) const { return std::get<bool>(at(key)); }
std::int64_t Options::get_int(std::string_view key) const { return std::get<std::int64_t>(at(key)); }
double Options::get_number(std::string_view key) const {
  const auto& v = at(key);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  return std::get<double>(v);
}
const std::string& Options::get_string(std::string_view key) const {
  return std::get<std::string>(at(key));
}
const std::vector<std::string>& Options::get_list(std::string_view key) const {
  return std::get<std::vector<std::string>>(at(key));
}
const std::map<std::string, std::string>& Options::get_map(std::string_view key) const {
  return std::get<std::map<std::string, std::string>>(at(key));
}

const OptionSpec* find_option(const std::vector<OptionSpec>& declared, std::string_view key) {
  for (const OptionSpec& s : declared)
    if (s.key == key) return &s;
  return nullptr;
}

std::vector<std::string> option_keys(const std::vector<OptionSpec>& declared) {
  std::vector<std::string> out;
  for (const OptionSpec& s : declared) out.push_back(s.key);
  return out;
}

Options Options::with_defaults(const std::vector<OptionSpec>& schema,
                               std::map<std::string, OptionValue> given) {
  Options o;
  for (auto& [k, v] : given) o.set(k, std::move(v));
  for (const auto& s : schema)
    if (!o.has(s.key) && s.default_value) o.set(s.key, *s.default_value);
  return o;
}

namespace {

// Splits "12.5GiB" into 12.5 and "GiB"; nullopt when there is no number.
std::optional<std::pair<double, std::string>> number_and_unit(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  std::size_t end = i;
  while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.' ||
                            s[end] == 'e' || s[end] == 'E' || s[end] == '+' || s[end] == '-')) {
    // An 'e' followed by a letter is a unit, not an exponent.
    if ((s[end] == 'e' || s[end] == 'E') &&
        (end + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[end + 1]))))
      break;
    ++end;
  }
  if (end == i) return std::nullopt;
  double x = 0;
  try {
    std::size_t used = 0;
    x = std::stod(s.substr(i, end - i), &used);
    if (used != end - i) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  std::size_t u = end;
  while (u < s.size() && std::isspace(static_cast<unsigned char>(s[u]))) ++u;
  return std::make_pair(x, s.substr(u));
}

}  // namespace

std::optional<double> parse_duration(std::string_view text) {
  auto nu = number_and_unit(text);
  if (!nu || !std::isfinite(nu->first) || nu->first < 0) return std::nullopt;
  const auto& [x, unit] = *nu;
  if (unit.empty() || unit == "s") return x;
  if (unit == "ms") return x / 1000.0;
  if (unit == "m" || unit == "min") return x * 60.0;
  if (unit == "h") return x * 3600.0;
  return std::nullopt;
}

std::optional<std::int64_t> parse_bytes(std::string_view text) {
  auto nu = number_and_unit(text);
  if (!nu || !std::isfinite(nu->first) || nu->first < 0) return std::nullopt;
  const auto& [x, unit] = *nu;
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1.0},          {"B", 1.0},          {"KB", 1e3},         {"MB", 1e6},
      {"GB", 1e9},        {"TB", 1e12},        {"K", 1024.0},       {"M", 1048576.0},
      {"G", 1073741824.0}, {"T", 1099511627776.0}, {"KiB", 1024.0},  {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [name, scale] : kUnits)
    if (unit == name) return static_cast<std::int64_t>(std::llround(x * scale));
  return std::nullopt;
}

}  // namespace autotune
