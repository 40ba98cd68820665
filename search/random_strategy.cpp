// random: uniform sampling over valid configurations, without repeats.
#include "search/strategies.hpp"

namespace autotune {
namespace {

class RandomStrategy final : public StrategyBase {
 public:
  using StrategyBase::StrategyBase;
  std::string_view name() const override { return "random"; }

 protected:
  std::optional<Config> propose() override { return random_unasked(); }
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(const StrategyContext& ctx) {
  return std::make_unique<RandomStrategy>(ctx);
}

}  // namespace autotune
