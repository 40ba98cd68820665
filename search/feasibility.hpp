#pragma once
// Feasibility of configurations before they are run, learned from outcomes
// (issue 12). One model per failure kind, each monotone in the knobs that
// grow that memory and blind to the others:
//
//  - device (`oom`): the knobs the knob table (core/knobs.hpp) or the spec
//    says grow device memory: batch_size, precision (by bytes per element),
//    a user's `memory: device` knob. A device OOM teaches nothing about
//    workers or prefetch.
//  - host (`host_oom`, and `invalid` unless its vram_bytes is what was over):
//    num_workers, prefetch_factor (meaningless, so smallest, at 0 workers),
//    pin_memory, batch_size, a user's `memory: host` knob. Nothing about
//    precision.
//  - grad_accum and `memory: none` knobs are neutral; a knob nobody
//    described must be equal for one configuration to teach about another.
//
// Each kind is read in memory coordinates z in [0,1]^d (a knob's position
// in its domain, by log where the domain is log-scaled; precision by log
// bytes per element). A configuration at least as large as a failure of
// that kind in every relevant coordinate is infeasible; one at most as
// large as a success is feasible (the monotone structure, docs/strategies.md).
// In between, P(fits) = a / (a + b), where a is how far the configuration
// must grow to reach the nearest failure's cone and b how far it sits above
// the nearest success (or above the smallest configuration), capped at a
// fifth of a range (a success vouches for its neighbourhood only): a monotone
// nearest-neighbour classifier, so P shrinks towards known failures and
// stays high away from them (a failure at 13 workers leaves 3 open).
// Where trials report the memory (vram_bytes, ram_bytes), the bytes are
// fitted as a sum of non-negative terms, each a product of up to four
// relevant knobs' sizes (batch x workers x prefetch x pinning is how a
// loader's pinned queue grows; the knob table's memory_products() are
// preferred to other products by a lighter ridge), so the fit is monotone too (with as many
// terms as points it can put a failure anywhere: one it puts below the most
// that ran joins the fit at that level, the least it can have used); against the capacity (the spec's
// limit, or the geometric middle between the most that ran and the least
// the fit puts on a failure, when not given) it gives P(fits) =
// Phi(log(capacity / predicted) / spread). Between the cones (a
// configuration neither above a failure nor below a success) that replaces
// the nearest-neighbour estimate, which falls with the mere nearness of a
// failure and so held the edge of the feasible region, where memory-bound
// optima sit, at P ~ 0.2-0.3 even where the bytes said it fits. A fit worse
// than 15% relative error, or one that puts a failure clearly below what
// ran, is not used.
// If the table's story is contradicted (a success at least as large as a
// failure in the relevant knobs), that kind falls back to every non-neutral
// knob, and then to nothing but exact matches.
//
// Errors and crashes never count as memory. A categorical value is excluded
// only when its failures share a cause that points at it: the same error
// message at least twice, or once when the message names the value, never
// seen with another value of that knob, and the value never ran.
#include <array>
#include <optional>
#include <vector>

#include <Eigen/Core>

#include "core/knobs.hpp"
#include "core/space.hpp"
#include "search/strategy.hpp"

namespace autotune {

enum class MemoryKind { device = 0, host = 1 };

// Which memory a failed outcome ran out of; nullopt for other failures.
std::optional<MemoryKind> memory_failure_kind(const Outcome& o, double vram_limit, double ram_limit);

class FeasibilityModel {
 public:
  FeasibilityModel(const SearchSpace& space, double vram_limit, double ram_limit);

  // Refit from the whole history (cheap: no optimisation).
  void update(const std::vector<Observation>& history);

  // P(the configuration runs): the product over memory kinds, 0 for an
  // excluded categorical value.
  double probability(const Config& c) const;
  Eigen::VectorXd probability(const std::vector<const Config*>& configs) const;
  double probability(const Config& c, MemoryKind kind) const;

  bool known_infeasible(const Config& c) const;
  bool known_feasible(const Config& c) const;
  bool excluded(std::size_t dim, int value) const;
  bool any_failures() const;
  // Whether kind's failures currently generalise along this parameter.
  bool depends_on(MemoryKind kind, std::size_t dim) const;

 private:
  enum Relevance : unsigned char { kIgnore, kOrdered, kEqual };
  struct Memory {
    std::vector<unsigned char> relevance;  // per parameter
    std::vector<Config> failed;
    int widened = 0;
    // The bytes model: terms (products of parameters' sizes), their
    // coefficients (>= 0; empty = no model), capacity and spread in log.
    std::vector<std::vector<std::size_t>> terms;
    std::vector<double> coef;
    double log_capacity = 0.0;
    double log_sd = 0.0;
  };

  double coord(std::size_t d, const Config& c) const;
  bool at_least(const Memory& m, const Config& a, const Config& b) const;
  // How far `from` must grow (in relevant coordinates) to use as much as
  // `to`; +inf when a knob that must match does not.
  double gap(const Memory& m, const Config& from, const Config& to) const;
  void set_relevance(Memory& m, MemoryKind kind, int level) const;
  void fit_bytes(Memory& m, MemoryKind kind, const std::vector<Observation>& history) const;
  // After fit_bytes' fit: the capacity between the most that ran and the
  // least that failed (or the limit), or no bytes model when they disagree.
  void settle_capacity(Memory& m, double most_ran, double limit, double rms) const;
  double predicted_bytes(const Memory& m, const Config& c) const;
  // Whether a term's knobs are one of memory_products() (core/knobs.hpp).
  bool known_product(const std::vector<std::size_t>& term) const;
  double cone_probability(const Memory& m, const Config& c) const;
  double size(std::size_t d, const Config& c) const;

  const SearchSpace& m_space;
  std::vector<KnobMemory> m_knobs;
  std::vector<std::vector<double>> m_coord;  // per parameter, per value; NaN = cannot be placed
  std::array<double, 2> m_limit{};           // bytes; 0 = not given
  std::array<Memory, 2> m_memory;
  std::vector<Config> m_ran;                  // ok outcomes
  std::vector<std::vector<bool>> m_excluded;  // per parameter, per value
};

}  // namespace autotune
