// DeepSpeed's config: the keys of its JSON file.
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_deepspeed(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "deepspeed" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "train_micro_batch_size_per_gpu", k.bs);
  put_knob(e, "gradient_accumulation_steps", k.accum);
  if (!k.prec.empty()) {  // stated for fp32 too: `enabled: false` overrides the file's own
    e << YAML::Key << "bf16" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value
      << (k.prec == "bf16") << YAML::EndMap;
    e << YAML::Key << "fp16" << YAML::Value << YAML::BeginMap << YAML::Key << "enabled" << YAML::Value
      << (k.prec == "fp16");
    if (k.prec == "fp16") e << YAML::Key << "loss_scale" << YAML::Value << 0;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

}  // namespace

ExportFormat deepspeed_export() { return {"deepspeed", "DeepSpeed's config file", write_deepspeed}; }

}  // namespace autotune
