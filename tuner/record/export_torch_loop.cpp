// What a plain PyTorch loop does with the rest: step the optimizer every
// grad_accum micro-batches; autocast's dtype (null: none) and TF32 matmuls.
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_torch_loop(YAML::Emitter& e, const ExportKnobs& k) {
  e << YAML::Key << "torch_loop" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "optimizer_step_every", k.accum);
  if (!k.prec.empty()) {
    e << YAML::Key << "autocast_dtype" << YAML::Value;
    if (k.prec == "bf16") e << "bfloat16";
    else if (k.prec == "fp16") e << "float16";
    else e << YAML::Null;
    e << YAML::Key << "allow_tf32" << YAML::Value << (k.prec == "tf32");
  }
  e << YAML::EndMap;
}

}  // namespace

ExportFormat torch_loop_export() {
  return {"torch_loop", "a plain PyTorch training loop: optimizer step, autocast, TF32", write_torch_loop};
}

}  // namespace autotune
