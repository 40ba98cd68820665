#pragma once
// The first points of a search, before any model (docs/strategies.md, "The
// design"): how many, and where.
#include <functional>
#include <optional>
#include <vector>

#include "core/space.hpp"

namespace autotune {

// Points before a model takes over, the user's initial configurations
// included: d + 1 (d: the knobs with more than one value), and at most a
// third of a known budget (never fewer than 2).
int initial_design_size(const SearchSpace& space, int budget);

// n points spread over the space: a Latin hypercube over the positions of
// the ordered parameters with every point at the centre of its stratum
// ((i + 1/2) / n, pulled 20% of the way towards the middle), so that the design covers each range without sitting on
// its ends, where failures are likeliest; categorical values dealt out in
// turn. The best of `tries` random designs by maximin distance in the
// space's encoding (to each other and to `taken`, e.g. the baseline); each
// point then moves to the nearest configuration `usable` accepts (valid, not
// asked, not ruled out), searched over `listed` when the space could be
// listed, else over random draws. Fewer than n when nothing usable is left.
std::vector<Config> spread_design(const SearchSpace& space, int n, const std::vector<Config>& taken, Rng& rng,
                                  const std::function<bool(const Config&)>& usable,
                                  const std::vector<Config>* listed, int tries = 64);

// Reorders a design so that the points with the knob table's design_lead
// knobs highest come first (num_workers, then batch_size; core/knobs.hpp):
// the same points, measured in the order most likely to find a starved
// pipeline's gain soonest. Stable; a space without those knobs keeps its
// order.
void lead_with_parallel_loading(const SearchSpace& space, std::vector<Config>& design);

}  // namespace autotune
