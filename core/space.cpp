#include "core/space.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/knobs.hpp"

namespace autotune {

std::string_view to_string(Scale s) {
  switch (s) {
    case Scale::linear: return "linear";
    case Scale::log: return "log";
    case Scale::categorical: return "categorical";
  }
  return "linear";
}

std::string_view to_string(MemoryUse m) {
  switch (m) {
    case MemoryUse::unknown: return "unknown";
    case MemoryUse::none: return "none";
    case MemoryUse::device: return "device";
    case MemoryUse::host: return "host";
    case MemoryUse::both: return "both";
  }
  return "unknown";
}

std::optional<MemoryUse> parse_memory_use(std::string_view s) {
  for (MemoryUse m : {MemoryUse::none, MemoryUse::device, MemoryUse::host, MemoryUse::both})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

namespace {

// Each value's place in [0,1] by f(value) (0.5 for all when they are equal).
template <class F>
std::vector<double> unit_positions(const std::vector<Value>& values, F f) {
  double lo = f(to_number(values.front())), hi = lo;
  for (const auto& v : values) {
    lo = std::min(lo, f(to_number(v)));
    hi = std::max(hi, f(to_number(v)));
  }
  std::vector<double> z;
  for (const auto& v : values) z.push_back(hi > lo ? (f(to_number(v)) - lo) / (hi - lo) : 0.5);
  return z;
}

// The knob table's offset for reading a linear domain by log(value + offset)
// in the surrogate; nullopt where the table says nothing or the domain does
// not allow it.
std::optional<double> surrogate_log_offset(const Parameter& p) {
  const KnobInfo* k = find_knob(p.name);
  if (!k || k->surrogate_log_offset <= 0 || p.scale != Scale::linear) return std::nullopt;
  for (const auto& v : p.values)
    if (!is_int(v) || to_number(v) + k->surrogate_log_offset <= 0) return std::nullopt;
  return k->surrogate_log_offset;
}

}  // namespace

SearchSpace::SearchSpace(std::vector<Parameter> params, std::vector<std::string> rules,
                         std::map<std::string, double> facts)
    : m_params(std::move(params)) {
  std::set<std::string> names;
  for (auto& p : m_params) {
    if (p.values.empty()) throw std::invalid_argument("parameter '" + p.name + "' has no values");
    if (!names.insert(p.name).second)
      throw std::invalid_argument("parameter '" + p.name + "' is declared twice");
    bool numeric = true;
    for (const auto& v : p.values) numeric = numeric && !is_string(v);
    if (!numeric && p.scale != Scale::categorical) p.scale = Scale::categorical;
    if (p.scale == Scale::log)
      for (const auto& v : p.values)
        if (to_number(v) <= 0)
          throw std::invalid_argument("parameter '" + p.name +
                                      "' is log-scaled but has a value <= 0");
  }
  m_rules = RuleSet(std::move(rules), m_params, std::move(facts));

  // Positions in [0,1] for ordered parameters; one-hot columns for categoricals.
  m_position.resize(m_params.size());
  m_encoded_position.resize(m_params.size());
  for (std::size_t d = 0; d < m_params.size(); ++d) {
    const auto& p = m_params[d];
    m_first_column.push_back(m_encoded_dims);
    if (p.scale == Scale::categorical) {
      for (std::size_t k = 0; k < p.values.size(); ++k) m_owner.push_back(d);
      m_encoded_dims += p.values.size();
      continue;
    }
    m_position[d] = unit_positions(p.values, [&](double x) { return p.scale == Scale::log ? std::log(x) : x; });
    if (const auto offset = surrogate_log_offset(p))
      m_encoded_position[d] = unit_positions(p.values, [&](double x) { return std::log(x + *offset); });
    else
      m_encoded_position[d] = m_position[d];
    m_owner.push_back(d);
    m_encoded_dims += 1;
  }
}

std::optional<std::size_t> SearchSpace::index_of(std::string_view name) const {
  for (std::size_t i = 0; i < m_params.size(); ++i)
    if (m_params[i].name == name) return i;
  return std::nullopt;
}

double SearchSpace::cardinality() const {
  double n = 1.0;
  for (const auto& p : m_params) n *= static_cast<double>(p.values.size());
  return m_params.empty() ? 0.0 : n;
}

bool SearchSpace::in_bounds(const Config& c) const {
  if (c.size() != m_params.size()) return false;
  for (std::size_t d = 0; d < c.size(); ++d)
    if (c[d] < 0 || static_cast<std::size_t>(c[d]) >= m_params[d].values.size()) return false;
  return true;
}

std::vector<double> SearchSpace::numeric_view(const Config& c) const {
  std::vector<double> out(c.size());
  for (std::size_t d = 0; d < c.size(); ++d) {
    const Value& v = m_params[d].values[static_cast<std::size_t>(c[d])];
    out[d] = is_string(v) ? static_cast<double>(c[d]) : to_number(v);
  }
  return out;
}

bool SearchSpace::is_valid(const Config& c) const {
  return in_bounds(c) && !m_rules.first_violated(numeric_view(c));
}

std::optional<std::string> SearchSpace::violated_rule(const Config& c) const {
  if (!in_bounds(c)) return std::string("configuration out of bounds");
  if (auto i = m_rules.first_violated(numeric_view(c))) return m_rules.rules()[*i];
  return std::nullopt;
}

std::optional<std::vector<Config>> SearchSpace::enumerate(std::size_t max_size) const {
  if (m_params.empty() || cardinality() > static_cast<double>(max_size)) return std::nullopt;
  std::vector<Config> out;
  Config c(m_params.size(), 0);
  while (true) {
    if (m_rules.empty() || !m_rules.first_violated(numeric_view(c))) out.push_back(c);
    // Mixed-radix increment, last parameter fastest.
    std::size_t d = c.size();
    while (d > 0) {
      --d;
      if (static_cast<std::size_t>(++c[d]) < m_params[d].values.size()) break;
      c[d] = 0;
      if (d == 0) return out;
    }
  }
}

std::optional<Config> SearchSpace::sample(Rng& rng, int max_tries) const {
  if (m_params.empty()) return std::nullopt;
  Config c(m_params.size());
  for (int t = 0; t < max_tries; ++t) {
    for (std::size_t d = 0; d < c.size(); ++d) {
      std::uniform_int_distribution<int> pick(0, static_cast<int>(m_params[d].values.size()) - 1);
      c[d] = pick(rng);
    }
    if (is_valid(c)) return c;
  }
  return std::nullopt;
}

std::vector<Config> SearchSpace::neighbours(const Config& c) const {
  std::vector<Config> out;
  for (std::size_t d = 0; d < c.size(); ++d) {
    const int n = static_cast<int>(m_params[d].values.size());
    auto consider = [&](int k) {
      if (k < 0 || k >= n || k == c[d]) return;
      Config nb = c;
      nb[d] = k;
      if (is_valid(nb)) out.push_back(std::move(nb));
    };
    if (m_params[d].scale == Scale::categorical) {
      for (int k = 0; k < n; ++k) consider(k);
    } else {
      consider(c[d] - 1);
      consider(c[d] + 1);
    }
  }
  return out;
}

void SearchSpace::encode_into(const Config& c, double* out) const {
  std::fill(out, out + m_encoded_dims, 0.0);
  for (std::size_t d = 0; d < m_params.size(); ++d) {
    const std::size_t col = m_first_column[d];
    const auto k = static_cast<std::size_t>(c[d]);
    if (m_params[d].scale == Scale::categorical)
      out[col + k] = 1.0;
    else
      out[col] = m_encoded_position[d][k];
  }
}

double SearchSpace::position(std::size_t dim, int k) const {
  const auto kk = static_cast<std::size_t>(k);
  if (m_params[dim].scale != Scale::categorical) return m_position[dim][kk];
  const std::size_t n = m_params[dim].values.size();
  return n > 1 ? static_cast<double>(kk) / static_cast<double>(n - 1) : 0.5;
}

Assignment SearchSpace::to_assignment(const Config& c) const {
  std::vector<Assignment::Item> items;
  items.reserve(c.size());
  for (std::size_t d = 0; d < c.size(); ++d)
    items.emplace_back(m_params[d].name, m_params[d].values[static_cast<std::size_t>(c[d])]);
  return Assignment(std::move(items));
}

std::optional<int> SearchSpace::index_of_value(std::size_t dim, const Value& v) const {
  const auto& vals = m_params[dim].values;
  for (std::size_t k = 0; k < vals.size(); ++k)
    if (vals[k] == v) return static_cast<int>(k);
  return std::nullopt;
}

std::optional<Config> SearchSpace::from_assignment(const Assignment& a) const {
  if (a.items().size() != m_params.size()) return std::nullopt;
  Config c(m_params.size());
  for (std::size_t d = 0; d < m_params.size(); ++d) {
    const Value* v = a.find(m_params[d].name);
    if (!v) return std::nullopt;
    auto k = index_of_value(d, *v);
    if (!k) return std::nullopt;
    c[d] = *k;
  }
  return c;
}

std::string SearchSpace::hash() const {
  // FNV-1a over a canonical text of the space.
  std::string text;
  for (const auto& p : m_params) {
    text += p.name + ':' + std::string(to_string(p.scale)) + '[';
    for (const auto& v : p.values) text += std::to_string(v.index()) + to_string(v) + ',';
    text += "];";
  }
  for (const auto& r : m_rules.rules()) text += "rule:" + r + ';';
  // A rule over the machine (`cores`) is another space on another machine.
  for (const auto& [name, value] : m_rules.facts_used()) text += "fact:" + name + '=' + std::to_string(value) + ';';
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<std::size_t>(i)] = hex[h & 0xF];
  return out;
}

std::map<std::string, double> SearchSpace::facts_in_rules() const { return m_rules.facts_used(); }

}  // namespace autotune
