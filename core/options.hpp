#pragma once
// Declared options: each workload kind, executor kind and strategy declares
// the keys it takes (name, type, default, help); the spec loader validates
// the user's map against that schema and hands on plain values. No YAML type
// crosses this line.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace autotune {

enum class OptionType {
  boolean,
  integer,
  number,
  string,
  duration,     // "300s", "5m", "1h", or a number of seconds -> double seconds
  bytes,        // "8GiB", "512MB", or a number of bytes -> std::int64_t
  bytes_text,   // checked as bytes are, kept as written -> std::string ("16G" handed on to srun --mem)
  path,         // string, resolved relative to the spec file's folder
  string_list,  // [a, b, c]
  string_map,   // {KEY: value, ...}
};
std::string_view to_string(OptionType t);

using OptionValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>,
                                 std::map<std::string, std::string>>;

struct OptionSpec {
  std::string key;
  OptionType type;
  std::optional<OptionValue> default_value;  // none: the key is required
  std::string help;
  // For string options: the accepted values (empty: any).
  std::vector<std::string> choices = {};
  // For integer/number/duration/bytes options: inclusive bounds.
  std::optional<double> min = std::nullopt;
  std::optional<double> max = std::nullopt;
};

// The declaration of `key` among `declared`, or null.
const OptionSpec* find_option(const std::vector<OptionSpec>& declared, std::string_view key);
// The keys declared, in their order.
std::vector<std::string> option_keys(const std::vector<OptionSpec>& declared);

// Validated option values, with every default filled in.
class Options {
 public:
  void set(const std::string& key, OptionValue v) { m_values[key] = std::move(v); }
  bool has(std::string_view key) const { return m_values.count(std::string(key)) > 0; }
  const std::map<std::string, OptionValue>& values() const { return m_values; }

  // Typed getters: throw std::out_of_range for a missing key and
  // std::bad_variant_access for a wrong type (a bug, not a user error).
  bool get_bool(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  double get_number(std::string_view key) const;     // number, duration, or integer
  const std::string& get_string(std::string_view key) const;
  const std::vector<std::string>& get_list(std::string_view key) const;
  const std::map<std::string, std::string>& get_map(std::string_view key) const;

  // Fills defaults for absent keys of a schema (used by code that builds
  // workloads without a spec file, e.g. tests and benchmarks).
  static Options with_defaults(const std::vector<OptionSpec>& schema,
                               std::map<std::string, OptionValue> given = {});

 private:
  const OptionValue& at(std::string_view key) const;
  std::map<std::string, OptionValue> m_values;
};

// "300s" / "5m" / "1.5h" / "250ms" / "42" -> seconds.
std::optional<double> parse_duration(std::string_view text);
// "8GiB" / "512MB" / "1.5G" / "1024" -> bytes.
std::optional<std::int64_t> parse_bytes(std::string_view text);

}  // namespace autotune
