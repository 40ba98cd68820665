#pragma once
// Factories of the built-in strategies (registered in strategy_registry.cpp).
#include <memory>

#include "search/strategy.hpp"

namespace autotune {

std::unique_ptr<Strategy> make_random_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_grid_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_heuristic_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_anneal_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_bo_strategy(const StrategyContext& ctx);

// The options anneal and bo declare (their defaults: the values tuned on the
// benchmarks, bench/results/search_constants.md).
std::vector<OptionSpec> anneal_options();
std::vector<OptionSpec> bo_options();

}  // namespace autotune
