#include "tuner/run/slots.hpp"

#include <gtest/gtest.h>

#include <set>

namespace autotune {
namespace {

TEST(Slots, EachSlotGetsItsOwnGpuAndDisjointCpus) {
  SlotPlan p = plan_slots(4, {"0", "1", "2", "3"}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, true);
  ASSERT_EQ(p.slots.size(), 4u);
  std::set<int> used;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p.slots[i].env.at("CUDA_VISIBLE_DEVICES"), std::to_string(i));
    EXPECT_EQ(p.slots[i].cpus.size(), 2u);
    for (int c : p.slots[i].cpus) EXPECT_TRUE(used.insert(c).second) << "cpu " << c << " in two slots";
  }
  EXPECT_EQ(format_cpu_list(p.slots[1].cpus), "2-3");
}

TEST(Slots, FewerGpusThanSlotsIsAnError) {
  EXPECT_THROW(plan_slots(3, {"0", "1"}, {0, 1, 2, 3}, true), std::invalid_argument);
}

TEST(Slots, NoGpusAndTooFewCpusMeansSharedPlainSlots) {
  SlotPlan p = plan_slots(4, {}, {0, 1}, true);
  ASSERT_EQ(p.slots.size(), 4u);
  for (const auto& s : p.slots) {
    EXPECT_TRUE(s.env.empty());
    EXPECT_TRUE(s.cpus.empty());
  }
  EXPECT_NE(p.summary.find("shared"), std::string::npos) << p.summary;
  EXPECT_EQ(plan_slots(1, {}, {0, 1}, true).slots[0].cpus.size(), 0u) << "one slot is never pinned";
}

TEST(Slots, CpuListFormatting) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_FALSE(allowed_cpus().empty());
}

}  // namespace
}  // namespace autotune
