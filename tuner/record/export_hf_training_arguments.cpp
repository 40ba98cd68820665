// Hugging Face's TrainingArguments(**hf_training_arguments).
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_hf_training_arguments(YAML::Emitter& e, const ExportKnobs& k) {
  const bool has_workers = k.workers && to_number(*k.workers) > 0;
  e << YAML::Key << "hf_training_arguments" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "per_device_train_batch_size", k.bs);
  put_knob(e, "gradient_accumulation_steps", k.accum);
  put_knob(e, "dataloader_num_workers", k.workers);
  if (k.prefetch) put_knob(e, "dataloader_prefetch_factor", k.prefetch);
  // The Trainer passes its prefetch_factor (None by default) to the
  // DataLoader, which torch before 2.0 refuses: the helper wrote torch's
  // default there, which torch 2 uses for None.
  else if (has_workers) e << YAML::Key << "dataloader_prefetch_factor" << YAML::Value << 2;
  put_knob(e, "dataloader_pin_memory", k.pin);
  if (!k.prec.empty()) {  // stated for fp32 too: `bf16: false` overrides a script's own default
    e << YAML::Key << "bf16" << YAML::Value << (k.prec == "bf16");
    e << YAML::Key << "fp16" << YAML::Value << (k.prec == "fp16");
    e << YAML::Key << "tf32" << YAML::Value << (k.prec == "tf32");
  }
  e << YAML::EndMap;
}

}  // namespace

ExportFormat hf_training_arguments_export() {
  return {"hf_training_arguments", "Hugging Face's TrainingArguments keywords", write_hf_training_arguments};
}

}  // namespace autotune
