#include "search/feasibility.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

#include "core/metric_names.hpp"

namespace autotune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTie = 1e-12;

bool uses(const KnobMemory& k, MemoryKind kind) { return kind == MemoryKind::device ? k.device() : k.host(); }

// The message names the value as a word of its own ("bf16 is not supported"
// names bf16; "bf16-mixed" does not name fp16).
bool names_value(const std::string& message, const std::string& value) {
  if (value.empty()) return false;
  auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (std::size_t at = message.find(value); at != std::string::npos; at = message.find(value, at + 1)) {
    const bool left = at == 0 || !word(message[at - 1]);
    const std::size_t end = at + value.size();
    const bool right = end == message.size() || !word(message[end]);
    if (left && right) return true;
  }
  return false;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / 1.4142135623730951); }

constexpr double kGoodFit = 0.15;     // relative rms error under which the bytes model is trusted
constexpr double kMinSpread = 0.03;   // floor on the fit's log spread: extrapolation is never exact
constexpr int kMinMeasured = 3;
constexpr int kMaxDegree = 4;         // knobs multiplied in one term of the bytes model
// The bytes fit's ridge, relative to each term's column norm. Light on the
// constant, on each knob alone and on the products memory is known to grow
// by (memory_products(): the loader's queue, pinned staging, activations);
// heavy on the other products. With six trials and 31 terms the fit is free
// to explain what ran by anything: on the cache-knob landscape it put the
// loader's queue (workers x prefetch x batch, a tenth of the bytes that
// ran) on products with the cache, so each host OOM at a deep queue of
// 512-batches taught only that this one queue was too deep, and bo walked
// down the wall one failure at a time (nine in a row on one seed). Preferring
// the known products (six failure landscapes, 100 fresh seeds, busy shares
// reported): cache-knob @15 median 0.732 -> 0.800, @30 p10 0.869 -> 0.920,
// bo's failed trials after the design @15 0.145 -> 0.107 and @30 0.096 ->
// 0.080, nothing lower; 24 held-out landscapes: @30 p10 0.944 -> 0.955,
// failed after the design @15 0.170 -> 0.137. A fit the known products
// cannot explain still uses the others: the heavy ridge only prefers.
constexpr double kKnownTermRidge = 1e-6;
constexpr double kOtherTermRidge = 1.0;
constexpr double kReach = 0.2;        // in memory coordinates (a fifth of a knob's range)

// The bytes model's terms: every product of up to kMaxDegree of `dims` (the
// knobs that grow one memory; pinned queue buffers are workers x prefetch x
// batch x pinning), the empty product (the constant) first.
std::vector<std::vector<std::size_t>> memory_terms(const std::vector<std::size_t>& dims) {
  std::vector<std::vector<std::size_t>> terms;
  for (std::uint32_t mask = 0; mask < (1u << std::min<std::size_t>(dims.size(), 16)); ++mask) {
    if (std::popcount(mask) > kMaxDegree) continue;
    std::vector<std::size_t> term;
    for (std::size_t i = 0; i < dims.size(); ++i)
      if (mask & (1u << i)) term.push_back(dims[i]);
    terms.push_back(std::move(term));
  }
  return terms;
}

// Non-negative least squares of rows x c = 1, by projected coordinate
// descent; each term's ridge (relative to its column norm) keeps the terms
// the rows do not identify near 0 (kKnownTermRidge).
Eigen::VectorXd nonnegative_fit(const Eigen::MatrixXd& rows, const std::vector<double>& ridge) {
  const Eigen::Index nt = rows.cols();
  const Eigen::VectorXd norm2 = rows.colwise().squaredNorm();
  Eigen::VectorXd c = Eigen::VectorXd::Zero(nt);
  Eigen::VectorXd r = Eigen::VectorXd::Ones(rows.rows());  // 1 - rows c
  for (int sweep = 0; sweep < 300; ++sweep) {
    double moved = 0.0;
    for (Eigen::Index t = 0; t < nt; ++t) {
      if (norm2[t] <= 0) continue;
      const double penalty = ridge[static_cast<std::size_t>(t)] * norm2[t];
      const double next = std::max(0.0, (c[t] * norm2[t] + rows.col(t).dot(r)) / (norm2[t] + penalty));
      const double delta = next - c[t];
      if (delta != 0.0) {
        r -= delta * rows.col(t);
        c[t] = next;
        moved = std::max(moved, std::abs(delta) * std::sqrt(norm2[t]));
      }
    }
    if (moved < 1e-9) break;
  }
  return c;
}

}  // namespace

std::optional<MemoryKind> memory_failure_kind(const Outcome& o, double vram_limit, double ram_limit) {
  if (o.status == Status::oom) return MemoryKind::device;
  if (o.status == Status::host_oom) return MemoryKind::host;
  if (o.status == Status::invalid) {
    // Measured but over a limit: whichever memory it measured over; the
    // runner's own check is on host memory, so that when unsure.
    const auto vram = o.vram_bytes();
    const auto ram = o.ram_bytes();
    const bool over_vram = vram && vram_limit > 0 && *vram > vram_limit;
    const bool over_ram = ram && ram_limit > 0 && *ram > ram_limit;
    return over_vram && !over_ram ? MemoryKind::device : MemoryKind::host;
  }
  return std::nullopt;
}

FeasibilityModel::FeasibilityModel(const SearchSpace& space, double vram_limit, double ram_limit)
    : m_space(space), m_knobs(knob_memory(space)), m_limit{vram_limit, ram_limit} {
  for (std::size_t d = 0; d < space.dims(); ++d) {
    const Parameter& p = space.param(d);
    const auto& size = m_knobs[d].size;
    std::vector<double> z(p.values.size(), std::nan(""));
    if (p.scale != Scale::categorical) {
      for (std::size_t k = 0; k < z.size(); ++k) z[k] = space.position(d, static_cast<int>(k));
    } else {
      // By log size when every placed size is positive (precision by bytes
      // per element), else by the listed order.
      double lo = kInf, hi = -kInf;
      bool positive = true;
      for (double s : size)
        if (std::isfinite(s)) lo = std::min(lo, s), hi = std::max(hi, s), positive = positive && s > 0;
      for (std::size_t k = 0; k < z.size(); ++k) {
        if (!std::isfinite(size[k])) continue;
        if (hi <= lo) z[k] = 0.5;
        else if (positive) z[k] = (std::log(size[k]) - std::log(lo)) / (std::log(hi) - std::log(lo));
        else z[k] = (size[k] - lo) / (hi - lo);
      }
    }
    m_coord.push_back(std::move(z));
  }
  set_relevance(m_memory[0], MemoryKind::device, 0);
  set_relevance(m_memory[1], MemoryKind::host, 0);
  m_excluded.assign(space.dims(), {});
  for (std::size_t d = 0; d < space.dims(); ++d) m_excluded[d].assign(space.param(d).values.size(), false);
}

// level 0: the knob table; 1: every knob that is not neutral, ordered where
// it grows some memory; 2: exact matches only.
void FeasibilityModel::set_relevance(Memory& m, MemoryKind kind, int level) const {
  m.widened = level;
  m.relevance.assign(m_space.dims(), kIgnore);
  for (std::size_t d = 0; d < m_space.dims(); ++d) {
    const KnobMemory& k = m_knobs[d];
    if (level >= 2) m.relevance[d] = k.use == MemoryUse::none ? kIgnore : kEqual;
    else if (k.use == MemoryUse::none) m.relevance[d] = kIgnore;
    else if (k.use == MemoryUse::unknown) m.relevance[d] = kEqual;
    else if (uses(k, kind) || level == 1) m.relevance[d] = kOrdered;
    else m.relevance[d] = kIgnore;
  }
}

bool FeasibilityModel::known_product(const std::vector<std::size_t>& term) const {
  for (const auto& product : memory_products()) {
    if (product.size() != term.size()) continue;
    bool all = true;
    for (std::size_t d : term)
      all = all && std::find(product.begin(), product.end(), m_space.param(d).name) != product.end();
    if (all) return true;
  }
  return false;
}

// A parameter's size for the bytes model: its numeric value (precision by
// bytes per element, a declared categorical by position), 0 where it means
// nothing (prefetch without workers).
double FeasibilityModel::size(std::size_t d, const Config& c) const {
  if (const auto& np = m_knobs[d].needs_positive)
    if (to_number(m_space.param(*np).values[static_cast<std::size_t>(c[*np])]) <= 0) return 0.0;
  const double s = m_knobs[d].size[static_cast<std::size_t>(c[d])];
  return std::isfinite(s) ? std::max(0.0, s) : 0.0;
}

double FeasibilityModel::predicted_bytes(const Memory& m, const Config& c) const {
  double y = 0.0;
  for (std::size_t t = 0; t < m.terms.size(); ++t) {
    if (m.coef[t] == 0.0) continue;
    double x = m.coef[t];
    for (std::size_t d : m.terms[t]) x *= size(d, c);
    y += x;
  }
  return y;
}

// Non-negative least squares on relative errors, by projected coordinate
// descent (Eigen has no NNLS): columns are the terms at each measured
// configuration divided by its bytes, the target is 1.
void FeasibilityModel::fit_bytes(Memory& m, MemoryKind kind, const std::vector<Observation>& history) const {
  m.coef.clear();
  m.terms.clear();
  if (m.widened >= 2) return;
  const metric::Real bytes = kind == MemoryKind::device ? metric::vram_bytes : metric::ram_bytes;
  std::vector<const Observation*> measured;
  for (const auto& o : history)
    if (o.outcome.ok())
      if (auto b = o.outcome.get(bytes); b && *b > 0) measured.push_back(&o);
  const double limit = m_limit[static_cast<std::size_t>(kind)];
  if (static_cast<int>(measured.size()) < kMinMeasured || (m.failed.empty() && limit <= 0)) return;
  std::vector<std::size_t> dims;  // the knobs that grow this memory
  for (std::size_t d = 0; d < m_space.dims(); ++d)
    if (m.relevance[d] == kOrdered) dims.push_back(d);
  m.terms = memory_terms(dims);
  const auto n = static_cast<Eigen::Index>(measured.size());
  const auto nt = static_cast<Eigen::Index>(m.terms.size());
  std::vector<double> ridge(m.terms.size(), kKnownTermRidge);
  for (std::size_t t = 0; t < m.terms.size(); ++t)
    if (m.terms[t].size() > 1 && !known_product(m.terms[t])) ridge[t] = kOtherTermRidge;
  auto row_of = [&](const Config& c, double bytes) {
    Eigen::RowVectorXd row(nt);
    for (Eigen::Index t = 0; t < nt; ++t) {
      double x = 1.0;
      for (std::size_t d : m.terms[static_cast<std::size_t>(t)]) x *= size(d, c);
      row[t] = x / bytes;
    }
    return row;
  };
  double most_ran = 0.0;
  for (const auto* o : measured) most_ran = std::max(most_ran, *o->outcome.get(bytes));
  Eigen::MatrixXd a(n, nt);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto* o = measured[static_cast<std::size_t>(i)];
    a.row(i) = row_of(o->config, *o->outcome.get(bytes));
  }
  auto solve = [&ridge](const Eigen::MatrixXd& rows) { return nonnegative_fit(rows, ridge); };
  // A failure used at least as much as the most that ran: with few points
  // and many terms, the fit to what ran alone can put a failure anywhere.
  // A failure it puts below that joins the fit at that level (the least it
  // can have used), until none is below.
  Eigen::MatrixXd rows = a;
  Eigen::VectorXd c = solve(rows);
  std::vector<bool> joined(m.failed.size(), false);
  for (int round = 0; round < 4; ++round) {
    std::vector<Eigen::RowVectorXd> add;
    for (std::size_t f = 0; f < m.failed.size(); ++f) {
      if (joined[f]) continue;
      const Eigen::RowVectorXd row = row_of(m.failed[f], most_ran);
      if (row.dot(c) < 1.0) add.push_back(row), joined[f] = true;
    }
    if (add.empty()) break;
    const Eigen::Index old = rows.rows();
    rows.conservativeResize(old + static_cast<Eigen::Index>(add.size()), nt);
    for (std::size_t i = 0; i < add.size(); ++i) rows.row(old + static_cast<Eigen::Index>(i)) = add[i];
    c = solve(rows);
  }
  const Eigen::VectorXd r = Eigen::VectorXd::Ones(n) - a * c;  // on what ran
  if (!c.allFinite()) return;
  const double rms = std::sqrt(r.squaredNorm() / static_cast<double>(n));
  if (!(rms < kGoodFit)) return;
  m.coef.assign(c.data(), c.data() + nt);
  settle_capacity(m, most_ran, limit, rms);
}

// The capacity: what ran fits, what failed did not. A fit that still puts
// a failure well below what ran has the shape wrong: no bytes model then.
// Within the fit's own error of it, the capacity is simply where the two
// meet.
void FeasibilityModel::settle_capacity(Memory& m, double most_ran, double limit, double rms) const {
  const double fit_sd = std::max(kMinSpread, rms);
  double least_failed = std::numeric_limits<double>::infinity();
  for (const auto& f : m.failed) least_failed = std::min(least_failed, predicted_bytes(m, f));
  if (least_failed < most_ran * std::exp(-2.0 * fit_sd)) {
    m.coef.clear();
    return;
  }
  least_failed = std::max(least_failed, most_ran);
  double capacity = limit > 0 ? limit : 0.0;
  double capacity_range = 0.0;  // in log: where between what ran and what failed
  if (std::isfinite(least_failed) && (capacity <= 0 || least_failed < capacity)) {
    capacity = std::sqrt(most_ran * least_failed);
    capacity_range = std::log(least_failed / most_ran);
  }
  if (!(capacity > 0)) {
    m.coef.clear();
    return;
  }
  m.log_capacity = std::log(capacity);
  // The fit's own error and the capacity's: the interval between the most
  // that ran and the least that failed read as +-2 sd.
  m.log_sd = std::sqrt(fit_sd * fit_sd + 0.0625 * capacity_range * capacity_range);
}

double FeasibilityModel::coord(std::size_t d, const Config& c) const {
  if (const auto& np = m_knobs[d].needs_positive)
    if (to_number(m_space.param(*np).values[static_cast<std::size_t>(c[*np])]) <= 0) return 0.0;
  return m_coord[d][static_cast<std::size_t>(c[d])];
}

bool FeasibilityModel::at_least(const Memory& m, const Config& a, const Config& b) const {
  for (std::size_t d = 0; d < a.size(); ++d) {
    if (m.relevance[d] == kIgnore) continue;
    if (m.relevance[d] == kEqual) {
      if (a[d] != b[d]) return false;
      continue;
    }
    const double za = coord(d, a), zb = coord(d, b);
    if (std::isnan(za) || std::isnan(zb)) {
      if (a[d] != b[d]) return false;
    } else if (za < zb - kTie) {
      return false;
    }
  }
  return true;
}

double FeasibilityModel::gap(const Memory& m, const Config& from, const Config& to) const {
  double g = 0.0;
  for (std::size_t d = 0; d < from.size(); ++d) {
    if (m.relevance[d] == kIgnore) continue;
    if (m.relevance[d] == kEqual) {
      if (from[d] != to[d]) return kInf;
      continue;
    }
    const double zf = coord(d, from), zt = coord(d, to);
    if (std::isnan(zf) || std::isnan(zt)) {
      if (from[d] != to[d]) return kInf;
      continue;
    }
    const double up = zt - zf;
    if (up > 0) g += up * up;
  }
  return std::sqrt(g);
}

void FeasibilityModel::update(const std::vector<Observation>& history) {
  m_ran.clear();
  for (auto& m : m_memory) m.failed.clear();
  for (const auto& o : history) {
    if (o.outcome.ok()) m_ran.push_back(o.config);
    else if (auto kind = memory_failure_kind(o.outcome, m_limit[0], m_limit[1]))
      m_memory[static_cast<std::size_t>(*kind)].failed.push_back(o.config);
  }
  // The table's story must agree with what ran: a success that uses at
  // least as much of this memory as a failure says some other knob matters.
  for (std::size_t k = 0; k < m_memory.size(); ++k) {
    Memory& m = m_memory[k];
    for (int level = 0; level <= 2; ++level) {
      set_relevance(m, static_cast<MemoryKind>(k), level);
      bool contradicted = false;
      for (const auto& f : m.failed) {
        for (const auto& s : m_ran)
          if (at_least(m, s, f)) {
            contradicted = true;
            break;
          }
        if (contradicted) break;
      }
      if (!contradicted) break;
    }
    fit_bytes(m, static_cast<MemoryKind>(k), history);
  }

  // Attribution of errors to categorical values.
  for (std::size_t d = 0; d < m_space.dims(); ++d) {
    const Parameter& p = m_space.param(d);
    const bool categorical = p.scale == Scale::categorical || is_bool(p.values[0]);
    const std::size_t n = p.values.size();
    m_excluded[d].assign(n, false);
    if (!categorical) continue;
    std::vector<bool> ran(n, false);
    // message -> per value, how many errors carried it
    std::map<std::string, std::vector<int>> messages;
    for (const auto& o : history) {
      const auto v = static_cast<std::size_t>(o.config[d]);
      if (o.outcome.ok()) ran[v] = true;
      if (o.outcome.status != Status::error && o.outcome.status != Status::crash) continue;
      auto& count = messages[o.outcome.reason];
      count.resize(n, 0);
      ++count[v];
    }
    for (const auto& [message, count] : messages) {
      std::size_t values_with_it = 0, value = 0;
      for (std::size_t v = 0; v < n; ++v)
        if (count[v] > 0) ++values_with_it, value = v;
      if (values_with_it != 1 || ran[value] || message.empty()) continue;
      const bool named = names_value(message, to_string(p.values[value]));
      if (count[value] >= 2 || named) m_excluded[d][value] = true;
    }
  }
}

bool FeasibilityModel::excluded(std::size_t dim, int value) const {
  return m_excluded[dim][static_cast<std::size_t>(value)];
}

bool FeasibilityModel::any_failures() const {
  for (const auto& m : m_memory)
    if (!m.failed.empty()) return true;
  for (const auto& e : m_excluded)
    for (bool x : e)
      if (x) return true;
  return false;
}

bool FeasibilityModel::depends_on(MemoryKind kind, std::size_t dim) const {
  return m_memory[static_cast<std::size_t>(kind)].relevance[dim] != kIgnore;
}

double FeasibilityModel::probability(const Config& c, MemoryKind kind) const {
  const Memory& m = m_memory[static_cast<std::size_t>(kind)];
  if (!m.coef.empty()) {
    for (const auto& f : m.failed)
      if (at_least(m, c, f)) return 0.0;
    for (const auto& s : m_ran)
      if (at_least(m, s, c)) return 1.0;
    const double y = predicted_bytes(m, c);
    const double by_bytes = y > 0 ? normal_cdf((m.log_capacity - std::log(y)) / m.log_sd) : 1.0;
    // Between the cones, a fit that holds (on what ran, and with every
    // failure above what ran) is the better estimate: the cones' own P
    // falls with the mere nearness of a failure, and the best configuration
    // of a memory-bound pipeline sits next to the failures by nature, so
    // capping by the cones kept its neighbourhood at P ~ 0.2-0.3 whatever
    // the bytes said. The fit's spread carries its doubt.
    return by_bytes;
  }
  return cone_probability(m, c);
}

double FeasibilityModel::cone_probability(const Memory& m, const Config& c) const {
  if (m.failed.empty()) return 1.0;
  double a = kInf;
  for (const auto& f : m.failed) a = std::min(a, gap(m, c, f));
  if (a <= kTie) return 0.0;
  if (!std::isfinite(a)) return 1.0;  // no failure this configuration could reach
  // Above the smallest configuration (the weakest evidence that it fits) or
  // above something that ran.
  double b = 0.0;
  for (std::size_t d = 0; d < c.size(); ++d) {
    if (m.relevance[d] != kOrdered) continue;
    const double z = coord(d, c);
    if (std::isfinite(z)) b += z * z;
  }
  b = std::sqrt(b);
  for (const auto& s : m_ran) b = std::min(b, gap(m, s, c));
  if (b <= kTie) return 1.0;
  // A success vouches for its neighbourhood, not for the far side of the
  // space: beyond kReach above it, only the nearness of failures counts.
  b = std::min(b, kReach);
  return a / (a + b);
}

double FeasibilityModel::probability(const Config& c) const {
  for (std::size_t d = 0; d < c.size(); ++d)
    if (excluded(d, c[d])) return 0.0;
  return probability(c, MemoryKind::device) * probability(c, MemoryKind::host);
}

Eigen::VectorXd FeasibilityModel::probability(const std::vector<const Config*>& configs) const {
  Eigen::VectorXd p(static_cast<Eigen::Index>(configs.size()));
  for (std::size_t i = 0; i < configs.size(); ++i) p[static_cast<Eigen::Index>(i)] = probability(*configs[i]);
  return p;
}

bool FeasibilityModel::known_infeasible(const Config& c) const {
  for (std::size_t d = 0; d < c.size(); ++d)
    if (excluded(d, c[d])) return true;
  for (const auto& m : m_memory)
    for (const auto& f : m.failed)
      if (at_least(m, c, f)) return true;
  return false;
}

bool FeasibilityModel::known_feasible(const Config& c) const {
  for (std::size_t d = 0; d < c.size(); ++d)
    if (excluded(d, c[d])) return false;
  for (const auto& m : m_memory) {
    if (m.failed.empty()) continue;
    bool below = false;
    for (const auto& s : m_ran)
      if (at_least(m, s, c)) {
        below = true;
        break;
      }
    if (!below) return false;
  }
  return true;
}

}  // namespace autotune

