// The name -> factory table of strategies. Adding a strategy: declare its
// factory (and its options, if it takes any) in strategies.hpp and add one
// line here.
#include "search/strategies.hpp"
#include "search/strategy.hpp"

namespace autotune {

const std::vector<StrategyInfo>& strategy_catalog() {
  static const std::vector<StrategyInfo> catalog = {
      {"random", "uniform random sampling over valid configurations", make_random_strategy},
      {"grid", "exhaustive, in lexicographic order of the declared domains", make_grid_strategy},
      {"heuristic", "the tuning-guide recipe: batch size, then workers, prefetch, precision, accumulation",
       make_heuristic_strategy},
      {"anneal", "simulated annealing over the integer domains, restarts after stagnation", make_anneal_strategy,
       anneal_options()},
      {"bo", "Gaussian-process Bayesian optimisation: log EI x P(feasible) over the whole space", make_bo_strategy,
       bo_options()},
  };
  return catalog;
}

}  // namespace autotune
