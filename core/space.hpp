#pragma once
// The search space: ordered parameter domains and known constraints (rules).
//
// A Config is a vector of per-parameter indices into each domain. The space
// checks configurations against the rules, enumerates the valid ones when the
// space is small enough, samples them with a caller's RNG, lists neighbours for
// local search, and encodes configurations into [0,1]^D for a surrogate.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>


#include "core/rules.hpp"
#include "core/value.hpp"

namespace autotune {

using Config = std::vector<int>;
using Rng = std::mt19937_64;

// How a surrogate should read positions in a domain.
enum class Scale {
  linear,       // ordered; distance by value
  log,          // ordered; distance by log(value) (log ranges, powers of two)
  categorical,  // no order: one-hot in the encoding
};

// Which memory a knob's value grows (DESIGN "What the knobs mean"). `unknown`
// leaves it to the knob table (core/knobs.hpp) for the well-known names,
// and to nothing for others; the spec may declare it (`memory:`).
enum class MemoryUse {
  unknown,  // not declared: the knob table decides, else no assumption
  none,     // grows neither memory (grad_accum)
  device,   // grows device memory
  host,     // grows host memory
  both,     // grows both (batch_size)
};

struct Parameter {
  std::string name;
  std::vector<Value> values;  // the ordered domain, never empty
  Scale scale = Scale::linear;
  // Declared memory semantics; for an ordered domain memory grows with the
  // value, for a categorical one in the order the values are listed.
  MemoryUse memory = MemoryUse::unknown;
};

class SearchSpace {
 public:
  SearchSpace() = default;
  // Throws std::invalid_argument on an empty domain, a duplicate name, a
  // log-scaled domain with non-positive values, or a bad rule.
  // `facts`: constants the rules may name besides the parameters (`ranks`,
  // `cores`; core/rules.hpp).
  SearchSpace(std::vector<Parameter> params, std::vector<std::string> rules = {},
              std::map<std::string, double> facts = {});
  // The facts the rules name (those of `facts` that some rule uses).
  std::map<std::string, double> facts_in_rules() const;

  std::size_t dims() const { return m_params.size(); }
  const std::vector<Parameter>& params() const { return m_params; }
  const Parameter& param(std::size_t i) const { return m_params[i]; }
  std::optional<std::size_t> index_of(std::string_view name) const;
  const RuleSet& rules() const { return m_rules; }

  // Product of the domain sizes (before rules), as a double: it may be huge.
  double cardinality() const;

  bool in_bounds(const Config& c) const;
  // In bounds and satisfying every rule.
  bool is_valid(const Config& c) const;
  // The first rule the configuration violates, as text, if any.
  std::optional<std::string> violated_rule(const Config& c) const;

  // Every valid configuration in lexicographic order (last parameter fastest),
  // or nullopt when the unconstrained space exceeds max_size.
  std::optional<std::vector<Config>> enumerate(std::size_t max_size = 2'000'000) const;

  // A uniformly random valid configuration (rejection sampling), or nullopt
  // after max_tries rejections.
  std::optional<Config> sample(Rng& rng, int max_tries = 10'000) const;

  // Valid configurations one step away: adjacent values of one ordered
  // parameter, or any other value of one categorical parameter.
  std::vector<Config> neighbours(const Config& c) const;

  // Encoding for the surrogate: one column per ordered parameter, position
  // scaled to [0,1] by value (or log value; num_workers by log(workers + 2),
  // as the knob table says); one-hot columns per categorical.
  std::size_t encoded_dims() const { return m_encoded_dims; }
  // Column -> parameter index.
  const std::vector<std::size_t>& encoded_owner() const { return m_owner; }
  // Writes the encoding of `c` to out[0 .. encoded_dims()) (search/encoding.hpp
  // gives it as a vector).
  void encode_into(const Config& c, double* out) const;
  // Where value k of an ordered parameter sits in [0,1] by value or log
  // value (the domain's own scale: the initial design's strata and the
  // feasibility model's memory coordinates); for a categorical one, k / (n - 1).
  double position(std::size_t dim, int k) const;

  Assignment to_assignment(const Config& c) const;
  // The configuration with these values; nullopt if a name is missing or a
  // value is not in its domain. Extra names are an error too.
  std::optional<Config> from_assignment(const Assignment& a) const;
  // Index of a value in one domain (numbers compare by value: 64 == "64" is not accepted).
  std::optional<int> index_of_value(std::size_t dim, const Value& v) const;

  // Stable 16-hex-digit digest of the parameters, their domains and the rules.
  std::string hash() const;

 private:
  std::vector<double> numeric_view(const Config& c) const;

  std::vector<Parameter> m_params;
  RuleSet m_rules;
  std::size_t m_encoded_dims = 0;
  std::vector<std::size_t> m_owner;
  std::vector<std::size_t> m_first_column;  // per parameter
  std::vector<std::vector<double>> m_position;  // per parameter, per value: [0,1]
  // What encode_into() puts in an ordered parameter's column: its position, or
  // where the knob table says so (num_workers) its position by log(value +
  // offset). Per parameter, per value, in [0,1].
  std::vector<std::vector<double>> m_encoded_position;
};

std::string_view to_string(Scale s);
std::string_view to_string(MemoryUse m);
std::optional<MemoryUse> parse_memory_use(std::string_view s);

}  // namespace autotune
