// grid: every valid configuration, in lexicographic order of the declared
// domains (first parameter slowest, last fastest).
#include "search/strategies.hpp"

namespace autotune {
namespace {

class GridStrategy final : public StrategyBase {
 public:
  using StrategyBase::StrategyBase;
  std::string_view name() const override { return "grid"; }

 protected:
  std::optional<Config> propose() override {
    const auto& all = valid_configs();
    if (!all) return random_unasked();  // too large to list: degrade to random, never repeat
    while (m_next < all->size()) {
      const Config& c = (*all)[m_next++];
      if (!was_asked(c)) return c;
    }
    return std::nullopt;
  }

 private:
  std::size_t m_next = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_grid_strategy(const StrategyContext& ctx) {
  return std::make_unique<GridStrategy>(ctx);
}

}  // namespace autotune
