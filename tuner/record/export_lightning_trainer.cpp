// Lightning's Trainer(**lightning_trainer).
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_lightning_trainer(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "lightning_trainer" << YAML::Value << YAML::Flow << YAML::BeginMap;
  if (!k.prec.empty()) {
    const char* lp = k.prec == "bf16" ? "bf16-mixed" : k.prec == "fp16" ? "16-mixed" : "32-true";
    e << YAML::Key << "precision" << YAML::Value << lp;
  }
  put_knob(e, "accumulate_grad_batches", k.accum);
  e << YAML::EndMap;
}

}  // namespace

ExportFormat lightning_trainer_export() {
  return {"lightning_trainer", "Lightning's Trainer keywords", write_lightning_trainer};
}

}  // namespace autotune
