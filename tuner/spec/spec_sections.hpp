#pragma once
// The sections of a space.yaml, each read into its part of the Spec through
// the reader (which collects the located errors). Private to the loader files;
// spec_loader.cpp calls them in order: the space first, because the initial
// configurations and the workload need its parameters.
#include <filesystem>
#include <string>
#include <vector>

#include "tuner/spec/spec.hpp"
#include "tuner/spec/yaml_reader.hpp"

namespace autotune {

// What the space section left for the sections after it.
struct SpaceRead {
  std::vector<Parameter> params;  // the parameters that parsed
  bool parsed = false;            // `space` present, non-empty, every parameter parsed
  bool built = false;             // the Spec's space holds the parameters and the rules
  std::optional<std::int64_t> effective_batch;  // constraints.effective_batch, when given
  std::int64_t ranks = 1;                       // constraints.ranks
};

std::vector<std::string> names_of(const std::vector<Parameter>& params);

// spec_space.cpp: `space` (either entry may be null: a missing `space` is
// reported by the caller) and `constraints` (limits and rules), then the
// SearchSpace, refused when no configuration satisfies the rules.
SpaceRead read_space(YamlReader& r, const Entry* space, const Entry* constraints, SearchSpace& out_space,
                     Limits& out_limits);

// spec_sections.cpp.
void read_workload(YamlReader& r, const Entry& e, const SpaceRead& space, const std::filesystem::path& base_dir,
                   WorkloadSpec& out);
void read_objective(YamlReader& r, const Entry& e, std::string& out);
void read_search(YamlReader& r, const Entry& e, const SpaceRead& space, const SearchSpace& built, SearchSpec& out);
// `e` may be null: the local kind with its defaults. `kind`, `gpus` (every
// kind), then the kind's declared options.
void read_executor(YamlReader& r, const Entry* e, const ExecutorKinds& kinds, const std::filesystem::path& base_dir,
                   ExecutorSpec& out);
// `e` may be null: the defaults (tuned.yaml, its journal beside it).
void read_output(YamlReader& r, const Entry* e, OutputSpec& out);

}  // namespace autotune
