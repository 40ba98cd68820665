// DataLoader(dataset, **torch_dataloader): the loader's keywords, as
// autotune_trial.loader_arguments passes them.
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_torch_dataloader(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "torch_dataloader" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "batch_size", k.bs);
  put_knob(e, "num_workers", k.workers);
  put_knob(e, "prefetch_factor", k.prefetch);
  put_knob(e, "pin_memory", k.pin);
  e << YAML::EndMap;
}

}  // namespace

ExportFormat torch_dataloader_export() {
  return {"torch_dataloader", "PyTorch's DataLoader keywords", write_torch_dataloader};
}

}  // namespace autotune
