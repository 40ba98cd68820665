#include "tuner/record/yaml_emit.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

#include <fmt/format.h>

namespace autotune {

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

void emit_string(YAML::Emitter& e, std::string_view s) {
  if (plain_is_string(s)) e << std::string(s);
  else e << YAML::DoubleQuoted << std::string(s);
}

// PyYAML reads 1e+20 without a point as a string: a point is added.
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

// A figure past int64's range (a job's garbage) is written as a float rather
// than wrapped to a negative integer.
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

YAML::Emitter& operator<<(YAML::Emitter& e, Float f) {
  emit_double(e, f.x);
  return e;
}

YAML::Emitter& operator<<(YAML::Emitter& e, Str s) {
  emit_string(e, s.s);
  return e;
}

}  // namespace autotune
