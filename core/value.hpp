#pragma once
// Parameter values and named configurations.
//
// A parameter's domain is an ordered list of Values; a configuration inside the
// search engine is a vector of indices into those lists (see space.hpp). An
// Assignment is the same configuration by name and value, as workloads,
// journals and emitted YAML see it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace autotune {

using Value = std::variant<std::int64_t, bool, std::string>;

std::string to_string(const Value& v);
// Numeric view: integers as themselves, booleans as 0/1, strings as NaN.
double to_number(const Value& v);
bool is_int(const Value& v);
bool is_bool(const Value& v);
bool is_string(const Value& v);

// A configuration by name, in the space's parameter order.
class Assignment {
 public:
  using Item = std::pair<std::string, Value>;
  Assignment() = default;
  explicit Assignment(std::vector<Item> items) : m_items(std::move(items)) {}

  const std::vector<Item>& items() const { return m_items; }
  void set(std::string name, Value v);
  const Value* find(std::string_view name) const;
  // Typed lookups with a fallback when the parameter is not declared.
  std::int64_t get_int(std::string_view name, std::int64_t fallback) const;
  bool get_bool(std::string_view name, bool fallback) const;
  std::string get_string(std::string_view name, std::string fallback) const;
  // "batch_size=64 precision=bf16 ..."
  std::string describe() const;

  friend bool operator==(const Assignment&, const Assignment&) = default;

 private:
  std::vector<Item> m_items;
};

}  // namespace autotune
