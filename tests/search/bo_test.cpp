// bo's surrogate reads what the knob table knows (search/knobs.hpp): a
// precision it has not tried is read by its rank beside the ones it has.
// Seeded and deterministic.
#include <gtest/gtest.h>

#include "search/knobs.hpp"
#include "search/surrogate.hpp"
#include "search/strategy.hpp"

namespace autotune {
namespace {

TEST(PrecisionRank, OrdersFullTf32AndReducedFormats) {
  EXPECT_EQ(precision_rank("fp32"), 0.0);
  EXPECT_EQ(precision_rank("tf32"), 0.5);
  EXPECT_EQ(precision_rank("fp16"), 1.0);
  EXPECT_EQ(precision_rank("bf16"), 1.0);
  EXPECT_EQ(precision_rank("bf16-mixed"), 1.0);
  EXPECT_EQ(precision_rank("fp8"), 2.0);
  EXPECT_FALSE(precision_rank("int4"));
}

// fp16 and bf16 sit nearer each other in bo's columns than either does to
// fp32, tf32 between: the space's one-hot alone puts every pair of precisions
// at the same distance (GaussianProcess.CategoriesAreEquidistant), so
// nothing fp16 showed carried to bf16. Other knobs and unknown names are
// read as before.
TEST(Bo, ReadsPrecisionByRankBesideItsOneHot) {
  std::vector<Value> batch;
  for (std::int64_t b : {32, 64, 128}) batch.emplace_back(b);
  auto precisions = [](std::initializer_list<const char*> names) {
    std::vector<Value> v;
    for (const char* n : names) v.emplace_back(std::string(n));
    return v;
  };
  const SearchSpace space({{"batch_size", batch, Scale::log},
                           {"precision", precisions({"fp32", "tf32", "fp16", "bf16"}), Scale::categorical}});
  const Surrogate model(space);
  auto at = [&](int prec) { return model.columns(Config{1, prec}); };
  ASSERT_EQ(at(0).size(), space.encoded_dims() + 1);
  const double fp16_bf16 = (at(2) - at(3)).norm(), fp16_fp32 = (at(2) - at(0)).norm();
  const double tf32_fp32 = (at(1) - at(0)).norm(), tf32_fp16 = (at(1) - at(2)).norm();
  EXPECT_LT(fp16_bf16, fp16_fp32);
  EXPECT_LT(tf32_fp32, fp16_fp32);
  EXPECT_LT(tf32_fp16, fp16_fp32);
  EXPECT_TRUE(model.columns(Config{2, 3}).head(space.encoded_dims()).isApprox(space.encode(Config{2, 3})))
      << "the space's own columns first";

  const SearchSpace unknown({{"batch_size", batch, Scale::log},
                             {"precision", precisions({"fp32", "int4"}), Scale::categorical}});
  EXPECT_EQ(Surrogate(unknown).columns(Config{0, 1}).size(), unknown.encoded_dims()) << "int4 has no rank";
}

}  // namespace
}  // namespace autotune
