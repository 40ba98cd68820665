// What no keyword of the other formats can carry, as sentences.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tuner/record/exports.hpp"
#include "tuner/record/yaml_emit.hpp"

namespace autotune {
namespace {

void write_export_notes(YAML::Emitter& e, const ExportKnobs& k) {
  std::vector<std::string> notes;
  if (k.threads) {
    const std::string n = to_string(*k.threads);
    notes.push_back(fmt::format("threads: {} intra-op threads per rank (each process of the job, every rank of "
                                "torchrun): OMP_NUM_THREADS={} in the job's environment, or "
                                "torch.set_num_threads({}) in each rank",
                                n, n, n));
  }
  if (k.prec == "tf32")
    notes.emplace_back("tf32: call torch.backends.cuda.matmul.allow_tf32 = True (Lightning: "
                       "torch.set_float32_matmul_precision('high'))");
  // transformers 4.36-4.38 pass prefetch_factor=None to a DataLoader of 0
  // workers, which torch before 2.0 refuses, and TrainingArguments refuses
  // any other value there (autotune_trial's HFCallback sets it as the Trainer is made).
  if (k.workers && to_number(*k.workers) == 0)
    notes.emplace_back("hf_training_arguments, with torch before 2.0: after args = TrainingArguments(...), set "
                       "args.dataloader_prefetch_factor = 2 (at 0 workers TrainingArguments refuses it as a "
                       "keyword, and the Trainer's DataLoader refuses the None it passes otherwise)");
  if (notes.empty()) return;
  e << YAML::Key << "notes" << YAML::Value << YAML::BeginSeq;
  for (const auto& n : notes) e << Str{n};
  e << YAML::EndSeq;
}

}  // namespace

ExportFormat notes_export() { return {"notes", "what no keyword can carry, as sentences", write_export_notes}; }

}  // namespace autotune
