// `memory: device | host | both | none` on a space parameter (issue 12): read
// into Parameter::memory, and a located error for anything else.
#include <gtest/gtest.h>

#include "tuner/spec/spec.hpp"

namespace autotune {
namespace {

SpecLoadResult load(const std::string& text) { return load_spec_text(text, "t.yaml", "/base"); }

TEST(SpecMemory, ReadsTheDeclaredMemoryOfAParameter) {
  const auto r = load(
      "workload: {kind: synthetic}\n"
      "space:\n"
      "  batch_size: [16, 32]\n"
      "  decode_cache_gb: {values: [0, 2, 4], memory: host}\n"
      "  image_size: {range: [128, 256], step: 64, memory: device}\n"
      "  seed_mode: {values: [a, b], memory: none}\n");
  ASSERT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].format());
  const auto& s = r.spec->space;
  EXPECT_EQ(s.param(0).memory, MemoryUse::unknown);
  EXPECT_EQ(s.param(1).memory, MemoryUse::host);
  EXPECT_EQ(s.param(2).memory, MemoryUse::device);
  EXPECT_EQ(s.param(3).memory, MemoryUse::none);
}

TEST(SpecMemory, AnUnknownMemoryIsALocatedError) {
  const auto r = load(
      "workload: {kind: synthetic}\n"
      "space:\n"
      "  batch_size: [16, 32]\n"
      "  cache: {values: [0, 2], memory: gpu}\n");
  ASSERT_EQ(r.errors.size(), 1u);
  const SpecError& e = r.errors[0];
  EXPECT_EQ(e.key_path, "space.cache.memory");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.column, 35);  // the value `gpu`
  EXPECT_NE(e.expected.find("device"), std::string::npos) << e.format();
  EXPECT_NE(e.found.find("gpu"), std::string::npos) << e.format();
}

}  // namespace
}  // namespace autotune
