// The checks the spec file and the command line share (tuner/spec/spec_checks.hpp):
// a value written in `search:` and the same value given as --parallel,
// --confirm, --budget, --strategy or --seed are accepted or refused together,
// and a refusal on the command line keeps the `--flag: expected ..., found
// '...'` shape with the file's own words.
#include "tuner/spec/spec_checks.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "tuner/cli/cli_common.hpp"
#include "tuner/spec/spec.hpp"

namespace autotune {
namespace {

const std::string kHead =
    "workload: {kind: synthetic}\n"
    "space:\n"
    "  batch_size: [16, 32, 64]\n";

Spec base_spec() {
  auto r = load_spec_text(kHead, "t.yaml", "/base");
  EXPECT_TRUE(r.spec) << (r.errors.empty() ? "" : r.errors[0].format());
  return *r.spec;
}

// The message apply_overrides printed, and whether it accepted.
struct Applied {
  bool ok = false;
  std::string message;
  Spec spec;
};

Applied apply(const Overrides& o) {
  Applied a;
  a.spec = base_spec();
  ::testing::internal::CaptureStderr();
  a.ok = apply_overrides(a.spec, o);
  a.message = ::testing::internal::GetCapturedStderr();
  return a;
}

struct Case {
  const char* name;
  std::string search;  // the `search:` section's value in the file
  Overrides flags;     // the same value on the command line
  bool accepted;
  bool same_words;     // the file's `expected` and `found` appear in the flag's message
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

Overrides parallel(int n) {
  Overrides o;
  o.parallel = n;
  return o;
}
Overrides confirm(int n) {
  Overrides o;
  o.confirm = n;
  return o;
}
Overrides budget(std::string text) {
  Overrides o;
  o.budget = std::move(text);
  return o;
}
Overrides strategy(std::string name) {
  Overrides o;
  o.strategy = std::move(name);
  return o;
}

class FileAndFlag : public ::testing::TestWithParam<Case> {};

TEST_P(FileAndFlag, AcceptOrRefuseTogether) {
  const Case& c = GetParam();
  auto file = load_spec_text(kHead + "search: " + c.search + "\n", "t.yaml", "/base");
  Applied flag = apply(c.flags);
  EXPECT_EQ(file.errors.empty(), c.accepted) << (file.errors.empty() ? "" : file.errors[0].format());
  EXPECT_EQ(flag.ok, c.accepted) << flag.message;
  if (c.accepted) {  // no complaint; at most a note of which limit still holds
    EXPECT_EQ(flag.message.find("expected"), std::string::npos) << flag.message;
    return;
  }
  ASSERT_EQ(file.errors.size(), 1u);
  EXPECT_EQ(flag.message.rfind("--", 0), 0u) << flag.message;
  EXPECT_NE(flag.message.find(": expected "), std::string::npos) << flag.message;
  EXPECT_NE(flag.message.find(", found '"), std::string::npos) << flag.message;
  if (c.same_words) {
    EXPECT_NE(flag.message.find(file.errors[0].expected), std::string::npos)
        << flag.message << " vs " << file.errors[0].format();
    EXPECT_NE(flag.message.find(file.errors[0].found), std::string::npos)
        << flag.message << " vs " << file.errors[0].format();
  }
}

INSTANTIATE_TEST_SUITE_P(
    SpecChecks, FileAndFlag,
    ::testing::Values(
        Case{"ParallelZero", "{parallel: 0}", parallel(0), false, true},
        Case{"ParallelOne", "{parallel: 1}", parallel(1), true, true},
        Case{"ParallelAtTheTop", "{parallel: 4096}", parallel(4096), true, true},
        Case{"ParallelPastTheTop", "{parallel: 4097}", parallel(4097), false, true},
        Case{"ConfirmNegative", "{confirm: -1}", confirm(-1), false, true},
        Case{"ConfirmZero", "{confirm: 0}", confirm(0), true, true},
        Case{"ConfirmAtTheTop", "{confirm: 1000}", confirm(1000), true, true},
        Case{"ConfirmPastTheTop", "{confirm: 1001}", confirm(1001), false, true},
        Case{"BudgetZero", "{budget: 0}", budget("0"), false, true},
        Case{"BudgetNegative", "{budget: -3}", budget("-3"), false, true},
        Case{"BudgetTrials", "{budget: 12}", budget("12"), true, true},
        Case{"BudgetPastInt32", "{budget: 2147483648}", budget("2147483648"), false, true},
        Case{"BudgetBadUnit", "{budget: {time: 10x}}", budget("10x"), false, false},
        Case{"BudgetTime", "{budget: {time: 10m}}", budget("10m"), true, true},
        Case{"BudgetZeroTime", "{budget: {time: 0s}}", budget("0s"), false, false},
        Case{"StrategyKnown", "{strategy: random}", strategy("random"), true, true},
        Case{"StrategyTypo", "{strategy: randon}", strategy("randon"), false, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SpecChecks, FlagsSetWhatTheFileWouldSet) {
  Applied t = apply(budget("12"));
  EXPECT_EQ(t.spec.search.budget_trials, 12);
  Applied s = apply(budget("10m"));
  EXPECT_DOUBLE_EQ(s.spec.search.budget_seconds, 600);
  EXPECT_EQ(apply(parallel(4)).spec.search.parallel, 4);
  EXPECT_EQ(apply(confirm(3)).spec.search.confirm, 3);
  EXPECT_EQ(apply(strategy("grid")).spec.search.strategy, "grid");
}

TEST(SpecChecks, FlagMessagesKeepTheirShape) {
  EXPECT_EQ(apply(budget("10x")).message,
            "--budget: expected a number of trials (40) or a duration (10m, 90s), found '10x'\n");
  EXPECT_EQ(apply(parallel(0)).message, "--parallel: expected a value from 1 to 4096, found '0'\n");
  EXPECT_EQ(apply(confirm(-1)).message, "--confirm: expected a value from 0 to 1000, found '-1'\n");
  EXPECT_NE(apply(strategy("randon")).message.find("(did you mean 'random'?)"), std::string::npos);
}

TEST(SpecChecks, BudgetTextIsTrialsOrADuration) {
  auto trials = check_budget("40");
  ASSERT_TRUE(trials.value);
  EXPECT_EQ(trials.value->trials, 40);
  EXPECT_EQ(trials.value->seconds, 0);
  auto time = check_budget("90s");
  ASSERT_TRUE(time.value);
  EXPECT_EQ(time.value->trials, 0);
  EXPECT_DOUBLE_EQ(time.value->seconds, 90);
  // Digits too many for any integer are refused, not thrown.
  EXPECT_EQ(check_budget("99999999999999999999999").error.expected, "a number of trials from 1 to 2147483647");
  EXPECT_FALSE(check_budget("").value);
  EXPECT_FALSE(check_budget("lots").value);
}

TEST(SpecChecks, SeedIsAnyUnsigned64BitInteger) {
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  auto file = load_spec_text(kHead + "search: {seed: " + std::to_string(top) + "}\n", "t.yaml", "/base");
  ASSERT_TRUE(file.spec);
  EXPECT_EQ(file.spec->search.seed, top);
  EXPECT_EQ(check_seed(std::to_string(top)).value, top);
  EXPECT_FALSE(check_seed("-1").value);
  EXPECT_FALSE(check_seed("18446744073709551616").value);
  Overrides o;
  o.seed = std::to_string(top);
  EXPECT_EQ(apply(o).spec.search.seed, top);
  // --seed -1 is refused as the file refuses it, not wrapped to 2^64 - 1.
  o.seed = "-1";
  const Applied minus = apply(o);
  EXPECT_FALSE(minus.ok);
  EXPECT_NE(minus.message.find("--seed: expected a non-negative integer, found '-1'"), std::string::npos)
      << minus.message;
  // --seed= (given empty) is refused too, not taken as not given.
  o.seed = "";
  const Applied empty = apply(o);
  EXPECT_FALSE(empty.ok);
  EXPECT_NE(empty.message.find("--seed: expected a non-negative integer"), std::string::npos) << empty.message;
  Overrides strategy;
  strategy.strategy = "";
  EXPECT_FALSE(apply(strategy).ok);
}

TEST(SpecChecks, IntegerChecksSayWhatWasWrong) {
  EXPECT_EQ(check_int("x").error.expected, "an integer");
  EXPECT_EQ(check_int("99999999999999999999").error.expected, "an integer that fits in 64 bits");
  EXPECT_EQ(check_int("0", kParallelRange).error.expected, "a value from 1 to 4096");
  EXPECT_EQ(check_int("0", kParallelRange).error.found, "'0'");
  EXPECT_EQ(check_int("+7", kParallelRange).value, 7);
}

}  // namespace
}  // namespace autotune
