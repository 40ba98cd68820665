// The export formats behind tuner/record/export_format.hpp: the registry's
// order is tuned.yaml's, each format writes under its own name, and a format
// the answer gives nothing to say writes nothing. What each writes is checked
// key by key in tuned_yaml_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "tuner/record/export_format.hpp"

namespace autotune {
namespace {

std::vector<std::string> names_of(const std::vector<ExportFormat>& formats) {
  std::vector<std::string> out;
  for (const auto& f : formats) out.push_back(f.name);
  return out;
}

// One format's keys, written alone into a map.
YAML::Node written_by(const ExportFormat& f, const Assignment& best, const Assignment* baseline = nullptr) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  f.write(e, export_knobs(best, baseline));
  e << YAML::EndMap;
  EXPECT_TRUE(e.good()) << f.name << ": " << e.GetLastError();
  return YAML::Load(e.c_str());
}

std::vector<std::string> keys_of(const YAML::Node& map) {
  std::vector<std::string> out;
  if (map.IsMap())
    for (const auto& kv : map) out.push_back(kv.first.as<std::string>());
  return out;
}

Assignment loader_answer(bool with_threads) {
  Assignment a;
  a.set("batch_size", Value{std::int64_t{64}});
  a.set("num_workers", Value{std::int64_t{4}});
  a.set("grad_accum", Value{std::int64_t{2}});
  a.set("precision", Value{std::string("tf32")});
  if (with_threads) a.set("threads", Value{std::int64_t{3}});
  return a;
}

TEST(ExportFormats, AreListedInTheOrderTunedYamlWritesThem) {
  EXPECT_EQ(names_of(export_formats()),
            (std::vector<std::string>{"torch_dataloader", "torch_loop", "hf_training_arguments", "lightning_trainer",
                                      "deepspeed", "threads", "notes"}));
  for (const auto& f : export_formats()) {
    EXPECT_FALSE(f.about.empty()) << f.name;
    EXPECT_NE(f.write, nullptr) << f.name;
  }
}

TEST(ExportFormats, EachWritesUnderItsOwnNameOrNothing) {
  const Assignment best = loader_answer(false);
  for (const auto& f : export_formats()) {
    const YAML::Node n = written_by(f, best);
    if (f.name == "threads") {
      EXPECT_TRUE(keys_of(n).empty()) << "no threads knob, nothing to say: " << YAML::Dump(n);
    } else if (f.name == "notes") {
      ASSERT_EQ(keys_of(n), std::vector<std::string>{"notes"});
      ASSERT_EQ(n["notes"].size(), 1u);  // tf32's call
    } else {
      ASSERT_EQ(keys_of(n), std::vector<std::string>{f.name}) << YAML::Dump(n);
      EXPECT_TRUE(n[f.name].IsMap()) << f.name;
    }
  }
}

TEST(ExportFormats, ThreadsGoToEveryRanksEnvironmentAndToTorch) {
  const Assignment best = loader_answer(true);
  const ExportFormat* threads = nullptr;
  for (const auto& f : export_formats())
    if (f.name == "threads") threads = &f;
  ASSERT_NE(threads, nullptr);
  const YAML::Node n = written_by(*threads, best);
  EXPECT_EQ(keys_of(n), (std::vector<std::string>{"environment", "torch"}));
  EXPECT_EQ(n["environment"]["OMP_NUM_THREADS"].as<int>(), 3);
  EXPECT_EQ(n["torch"]["set_num_threads"].as<int>(), 3);
}

TEST(ExportFormats, TheExportsMapIsEveryFormatInTurn) {
  const Assignment best = loader_answer(true);
  Assignment baseline = best;
  baseline.set("precision", Value{std::string("fp32")});
  YAML::Emitter e;
  e << YAML::BeginMap;
  emit_exports(e, best, &baseline);
  e << YAML::EndMap;
  const YAML::Node all = YAML::Load(e.c_str())["exports"];
  std::vector<std::string> expected;
  for (const auto& f : export_formats())
    for (const auto& k : keys_of(written_by(f, best, &baseline))) expected.push_back(k);
  EXPECT_EQ(keys_of(all), expected);
  EXPECT_EQ(expected.size(), export_formats().size() + 1);  // threads writes two keys
  // The same answer with the baseline's precision: no precision keys anywhere.
  const YAML::Node same = written_by(export_formats()[3], best, &best);
  EXPECT_FALSE(same["lightning_trainer"]["precision"]) << YAML::Dump(same);
}

}  // namespace
}  // namespace autotune
