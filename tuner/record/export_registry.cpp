// The table of export formats, in the order tuned.yaml writes them. Adding
// one: declare its function in exports.hpp and add one line here.
#include "tuner/record/exports.hpp"

namespace autotune {

const std::vector<ExportFormat>& export_formats() {
  static const std::vector<ExportFormat> formats = {
      torch_dataloader_export(),
      torch_loop_export(),
      hf_training_arguments_export(),
      lightning_trainer_export(),
      deepspeed_export(),
      threads_export(),
      notes_export(),  // last: what no keyword of the others can carry
  };
  return formats;
}

}  // namespace autotune
