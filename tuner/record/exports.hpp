#pragma once
// The built-in export formats (registered in export_registry.cpp), one file
// each: export_NAME.cpp.
#include "tuner/record/export_format.hpp"

namespace autotune {

ExportFormat torch_dataloader_export();
ExportFormat torch_loop_export();
ExportFormat hf_training_arguments_export();
ExportFormat lightning_trainer_export();
ExportFormat deepspeed_export();
ExportFormat threads_export();
ExportFormat notes_export();

}  // namespace autotune
