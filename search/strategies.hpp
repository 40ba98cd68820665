#pragma once
// Factories of the built-in strategies (registered in strategy_registry.cpp).
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "search/strategy.hpp"

namespace autotune {

std::unique_ptr<Strategy> make_random_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_grid_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_heuristic_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_anneal_strategy(const StrategyContext& ctx);
std::unique_ptr<Strategy> make_bo_strategy(const StrategyContext& ctx);

// The columns bo's GP reads a configuration by: the space's encoding, then a
// categorical precision's rank (precision_rank, scaled to [0,1] over its
// listed values) when every value has one.
Eigen::VectorXd bo_surrogate_columns(const SearchSpace& space, const Config& c);
// The GP column group (one length scale each) of every such column.
std::vector<int> bo_surrogate_groups(const SearchSpace& space);

}  // namespace autotune
