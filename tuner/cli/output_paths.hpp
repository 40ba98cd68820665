#pragma once
// What a command will write, checked before it runs anything: every output
// apart from every other, from the files it reads (the spec, the journal),
// and writable. A run that would overwrite the user's spec, or its own
// journal with tuned.yaml or a report, is refused before its first trial.
#include <filesystem>
#include <string>
#include <vector>

namespace autotune {

struct NamedPath {
  std::string role;  // "tuned.yaml (--out)", "the journal", "the spec", ...
  std::filesystem::path path;
  bool folder = false;  // an output that is a folder (the trial logs)
};

// Every problem, one line each ("--out spec.yaml: the same file as the spec
// (space.yaml)"); empty when the outputs can be written.
std::vector<std::string> output_problems(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// True when `path` is a file whose first line is an autotune journal's header.
bool looks_like_journal(const std::filesystem::path& path);

}  // namespace autotune
