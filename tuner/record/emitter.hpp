#pragma once
// tuned.yaml: the best feasible configuration, its metrics, the baseline and
// speedup, a search summary, and the same answer in the keys of PyTorch's
// DataLoader, Hugging Face's TrainingArguments, Lightning's Trainer and
// DeepSpeed's config (the export formats, tuner/record/export_format.hpp).
// Written atomically (temp file + rename). yaml-cpp is used here, in the
// export formats and in the spec loader only.
#include <filesystem>
#include <string>

#include "tuner/spec/spec.hpp"
#include "tuner/record/study.hpp"

namespace autotune {

std::string render_tuned_yaml(const Spec& spec, const Study& result);
// Throws std::runtime_error when the file cannot be written; the previous
// file, if any, is then left as it was.
void write_tuned_yaml(const Spec& spec, const Study& result, const std::filesystem::path& path);

// Writes text to path through a temp file in the same folder and a rename.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace autotune
