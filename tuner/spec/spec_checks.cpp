#include "tuner/spec/spec_checks.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "search/strategy.hpp"
#include "core/options.hpp"

namespace autotune {

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

namespace {

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

}  // namespace

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string m = near_match(word, candidates);
  return m.empty() ? std::string() : "did you mean '" + m + "'?";
}

std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 60;
  if (s.size() > kMax) return "'" + std::string(s.substr(0, kMax)) + "...'";
  return "'" + std::string(s) + "'";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? std::string(sep) : "") + items[i];
  return out;
}

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

std::optional<Invalid> check_bounds(double x, std::string_view text, std::optional<double> min,
                                    std::optional<double> max) {
  if ((!min || x >= *min) && (!max || x <= *max)) return std::nullopt;
  std::string expected;
  if (min && max) expected = fmt::format("a value from {} to {}", *min, *max);
  else if (min) expected = fmt::format("a value >= {}", *min);
  else expected = fmt::format("a value <= {}", *max);
  return Invalid{expected, quote(text), {}};
}

Checked<std::int64_t> check_int(std::string_view text, std::optional<std::int64_t> min,
                                std::optional<std::int64_t> max) {
  std::int64_t v = 0;
  switch (parse_int(text, v)) {
    case IntParse::not_integer: return Checked<std::int64_t>::refused({"an integer", quote(text), {}});
    case IntParse::overflow:
      return Checked<std::int64_t>::refused({"an integer that fits in 64 bits", quote(text), {}});
    case IntParse::ok: break;
  }
  std::optional<double> lo, hi;
  if (min) lo = static_cast<double>(*min);
  if (max) hi = static_cast<double>(*max);
  if (auto e = check_bounds(static_cast<double>(v), text, lo, hi)) return Checked<std::int64_t>::refused(*e);
  return Checked<std::int64_t>::ok(v);
}

Checked<double> check_number(std::string_view text, std::optional<double> min, std::optional<double> max) {
  auto x = parse_double(std::string(text));
  if (!x) return Checked<double>::refused({"a number", quote(text), {}});
  if (auto e = check_bounds(*x, text, min, max)) return Checked<double>::refused(*e);
  return Checked<double>::ok(*x);
}

Checked<bool> check_bool(std::string_view text) {
  if (auto b = parse_bool(text)) return Checked<bool>::ok(*b);
  return Checked<bool>::refused(
      {"true or false", quote(text), is_yaml11_bool(text) ? "only true and false are booleans here" : ""});
}

Checked<double> check_duration(std::string_view text, std::optional<double> min, std::optional<double> max) {
  auto x = parse_duration(text);
  if (!x)
    return Checked<double>::refused(
        {std::string(to_string(OptionType::duration)) + " with unit ms, s, m, min or h", quote(text), {}});
  if (auto e = check_bounds(*x, text, min, max)) return Checked<double>::refused(*e);
  return Checked<double>::ok(*x);
}

Checked<std::int64_t> check_bytes(std::string_view text, std::optional<double> min, std::optional<double> max) {
  auto x = parse_bytes(text);
  if (!x)
    return Checked<std::int64_t>::refused(
        {std::string(to_string(OptionType::bytes)) + "; units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB", quote(text),
         {}});
  if (auto e = check_bounds(static_cast<double>(*x), text, min, max)) return Checked<std::int64_t>::refused(*e);
  return Checked<std::int64_t>::ok(*x);
}

Checked<std::string> check_choice(std::string_view text, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), text) != choices.end())
    return Checked<std::string>::ok(std::string(text));
  return Checked<std::string>::refused({"one of " + join(choices), quote(text), did_you_mean(text, choices)});
}

Checked<std::string> check_strategy(std::string_view text) { return check_choice(text, strategy_names()); }

Checked<std::uint64_t> check_seed(std::string_view text) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return Checked<std::uint64_t>::refused({"a non-negative integer", quote(text), {}});
  return Checked<std::uint64_t>::ok(v);
}

Checked<int> check_budget_trials(std::string_view text) {
  const auto [lo, hi] = kBudgetTrialsRange;
  std::int64_t v = 0;
  switch (parse_int(text, v)) {
    case IntParse::not_integer: return Checked<int>::refused({"an integer", quote(text), {}});
    case IntParse::overflow: break;  // too many trials, like any number past hi
    case IntParse::ok:
      if (v >= lo && v <= hi) return Checked<int>::ok(static_cast<int>(v));
      break;
  }
  return Checked<int>::refused({fmt::format("a number of trials from {} to {}", lo, hi), quote(text), {}});
}

Checked<Budget> check_budget(std::string_view text) {
  std::int64_t unused = 0;
  if (parse_int(text, unused) != IntParse::not_integer) {
    auto n = check_budget_trials(text);
    if (!n.value) return Checked<Budget>::refused(n.error);
    return Checked<Budget>::ok({*n.value, 0});
  }
  auto s = parse_duration(text);
  if (!s) return Checked<Budget>::refused({"a number of trials (40) or a duration (10m, 90s)", quote(text), {}});
  if (*s <= 0) return Checked<Budget>::refused({"a duration > 0", quote(text), {}});
  return Checked<Budget>::ok({0, *s});
}

}  // namespace autotune
