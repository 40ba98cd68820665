#include "core/value.hpp"

#include <cmath>
#include <limits>

namespace autotune {

std::string to_string(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

double to_number(const Value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return std::numeric_limits<double>::quiet_NaN();
}

bool is_int(const Value& v) { return std::holds_alternative<std::int64_t>(v); }
bool is_bool(const Value& v) { return std::holds_alternative<bool>(v); }
bool is_string(const Value& v) { return std::holds_alternative<std::string>(v); }

void Assignment::set(std::string name, Value v) {
  for (auto& [n, val] : m_items) {
    if (n == name) {
      val = std::move(v);
      return;
    }
  }
  m_items.emplace_back(std::move(name), std::move(v));
}

const Value* Assignment::find(std::string_view name) const {
  for (const auto& [n, v] : m_items)
    if (n == name) return &v;
  return nullptr;
}

std::int64_t Assignment::get_int(std::string_view name, std::int64_t fallback) const {
  const Value* v = find(name);
  if (!v) return fallback;
  if (is_int(*v)) return std::get<std::int64_t>(*v);
  if (is_bool(*v)) return std::get<bool>(*v) ? 1 : 0;
  return fallback;
}

bool Assignment::get_bool(std::string_view name, bool fallback) const {
  const Value* v = find(name);
  if (!v) return fallback;
  if (is_bool(*v)) return std::get<bool>(*v);
  if (is_int(*v)) return std::get<std::int64_t>(*v) != 0;
  const auto& s = std::get<std::string>(*v);
  return s == "true" || s == "1" || s == "yes";
}

std::string Assignment::get_string(std::string_view name, std::string fallback) const {
  const Value* v = find(name);
  return v ? to_string(*v) : fallback;
}

std::string Assignment::describe() const {
  std::string out;
  for (const auto& [n, v] : m_items) {
    if (!out.empty()) out += ' ';
    out += n + '=' + to_string(v);
  }
  return out;
}

}  // namespace autotune
