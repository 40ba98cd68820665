#pragma once
// The export formats of tuned.yaml's `exports:`: the answer in another tool's
// own keys (PyTorch's DataLoader, Hugging Face's TrainingArguments,
// Lightning's Trainer, DeepSpeed's config, ...), one file per format
// (export_*.cpp) behind this interface, listed in export_registry.cpp.
//
// Contract, for every format:
//  - write() adds its own keys to the open `exports:` map, in flow style, and
//    nothing when the answer gives it nothing to say (threads, notes);
//  - it writes only knobs the trials ran (a knob the space does not declare
//    is left out, never given a default of ours), through emit_value, so
//    that every reader takes each value back as written;
//  - the precision keys only when the answer changes the baseline's
//    precision (ExportKnobs::prec is then set): precision is the user's to
//    give, and a tie never moves it.
// Where a tool needs a setting that autotune_trial gave it during the trials,
// the export carries it (python/autotune_trial/_knobs.py, training_arguments),
// or a note says it when no keyword can.
// Adding a format: a file export_NAME.cpp defining NAME_export(), its line in
// exports.hpp and one line in export_registry.cpp.
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/value.hpp"

namespace autotune {

// The answer's knobs every format reads: null where the space has no such knob.
struct ExportKnobs {
  const Value* bs = nullptr;
  const Value* workers = nullptr;
  const Value* prefetch = nullptr;  // null where it means nothing (0 workers)
  const Value* pin = nullptr;
  const Value* accum = nullptr;
  const Value* threads = nullptr;  // intra-op threads of each rank
  std::string prec;  // empty: the answer keeps the baseline's precision (or there is none)
};

// `best` and the baseline's configuration (null: none) read into ExportKnobs;
// the pointers point into `best`.
ExportKnobs export_knobs(const Assignment& best, const Assignment* baseline);

struct ExportFormat {
  std::string name;   // the format's name: its key in `exports:` where it writes one
  std::string about;  // one line: what reads it
  void (*write)(YAML::Emitter& e, const ExportKnobs& k);
};

// Every format, in the order tuned.yaml writes them.
const std::vector<ExportFormat>& export_formats();

// `exports:` with every format, for the answer `best`.
void emit_exports(YAML::Emitter& e, const Assignment& best, const Assignment* baseline);

// key: value, only for a declared knob (v not null).
void put_knob(YAML::Emitter& e, std::string_view key, const Value* v);

}  // namespace autotune
