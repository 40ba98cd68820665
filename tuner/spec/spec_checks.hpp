#pragma once
// Checks on the text of one setting, shared by the spec file (through the
// YAML reader, which adds where it was written) and the command line
// (apply_overrides), so that `--parallel 0` and `search: {parallel: 0}` are
// refused by the same rule with the same words. No YAML here.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotune {

// Why a value was refused: the halves of "expected X, found Y" and a hint
// such as "did you mean 'random'?" (may be empty).
struct Invalid {
  std::string expected;
  std::string found;
  std::string hint;
};

// A value, or why there is none.
template <class T>
struct Checked {
  std::optional<T> value;
  Invalid error;  // meaningful when !value

  static Checked ok(T v) { return {std::move(v), {}}; }
  static Checked refused(Invalid e) { return {std::nullopt, std::move(e)}; }
};

// Inclusive bounds of an integer setting.
struct IntRange {
  std::int64_t min;
  std::int64_t max;
};

// search.parallel / --parallel: trials in flight.
inline constexpr IntRange kParallelRange{1, 4096};
// search.confirm / --confirm: the best configurations re-measured after the search.
inline constexpr IntRange kConfirmRange{0, 1000};
// `budget: N` / `--budget N`: a number of trials.
inline constexpr IntRange kBudgetTrialsRange{1, std::numeric_limits<std::int32_t>::max()};

// Scalars. The bounds are inclusive; `text` is quoted in the error as found.
Checked<std::int64_t> check_int(std::string_view text, std::optional<std::int64_t> min = std::nullopt,
                                std::optional<std::int64_t> max = std::nullopt);
inline Checked<std::int64_t> check_int(std::string_view text, IntRange r) {
  return check_int(text, r.min, r.max);
}
Checked<double> check_number(std::string_view text, std::optional<double> min = std::nullopt,
                             std::optional<double> max = std::nullopt);
// YAML 1.2 core booleans only: yes/no/on/off are refused with a hint.
Checked<bool> check_bool(std::string_view text);
// A duration with a unit (ms, s, m, min, h), in seconds.
Checked<double> check_duration(std::string_view text, std::optional<double> min = std::nullopt,
                               std::optional<double> max = std::nullopt);
// A size in bytes with an optional unit (KB, MiB, ...).
Checked<std::int64_t> check_bytes(std::string_view text, std::optional<double> min = std::nullopt,
                                  std::optional<double> max = std::nullopt);
Checked<std::string> check_choice(std::string_view text, const std::vector<std::string>& choices);
// The refusal for a number outside [min, max], or nothing when inside.
std::optional<Invalid> check_bounds(double x, std::string_view text, std::optional<double> min,
                                    std::optional<double> max);

// search.strategy / --strategy: a registered strategy's name.
Checked<std::string> check_strategy(std::string_view text);
// search.seed: any unsigned 64-bit integer.
Checked<std::uint64_t> check_seed(std::string_view text);

// `budget: N` / `--budget N`: a number of trials in kBudgetTrialsRange.
Checked<int> check_budget_trials(std::string_view text);

// One budget written as text (`--budget`): an integer is a number of trials
// (check_budget_trials, as `budget: N` in the file), anything else a
// duration > 0 (as `budget: {time: ...}`). Exactly one of the two is set.
struct Budget {
  int trials = 0;
  double seconds = 0;
};
Checked<Budget> check_budget(std::string_view text);

// The parsers under the checks, for readers that classify text themselves
// (a parameter's values may be integers, booleans or names).
enum class IntParse { ok, not_integer, overflow };
IntParse parse_int(std::string_view s, std::int64_t& out);
std::optional<double> parse_double(const std::string& s);  // finite, the whole text
std::optional<bool> parse_bool(std::string_view s);        // true/false, True, TRUE, ...
bool is_yaml11_bool(std::string_view s);                    // yes/no/on/off: not booleans here

// Message helpers the spec's errors share.
std::string quote(std::string_view s);  // 'text', shortened past 60 characters
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);
// "did you mean 'x'?" for the nearest candidate, or empty when none is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace autotune
