#include "tuner/record/export_format.hpp"

#include "core/knobs.hpp"
#include "tuner/record/yaml_emit.hpp"

namespace autotune {

ExportKnobs export_knobs(const Assignment& best, const Assignment* baseline) {
  ExportKnobs k;
  k.bs = best.find("batch_size");
  k.workers = best.find("num_workers");
  k.prefetch = best.find("prefetch_factor");
  k.pin = best.find("pin_memory");
  k.accum = best.find("grad_accum");
  k.threads = best.find("threads");
  // PyTorch refuses prefetch_factor when num_workers is 0: the knob table
  // says when a knob means nothing.
  if (k.prefetch && !knob_is_active(best, "prefetch_factor")) k.prefetch = nullptr;
  const Value* precision = best.find("precision");
  if (precision && baseline)
    if (const Value* before = baseline->find("precision"); before && *before == *precision) precision = nullptr;
  if (precision) k.prec = to_string(*precision);
  return k;
}

void put_knob(YAML::Emitter& e, std::string_view key, const Value* v) {
  if (!v) return;
  e << YAML::Key << std::string(key) << YAML::Value;
  emit_value(e, *v);
}

void emit_exports(YAML::Emitter& e, const Assignment& best, const Assignment* baseline) {
  const ExportKnobs k = export_knobs(best, baseline);
  e << YAML::Key << "exports" << YAML::Value << YAML::BeginMap;
  for (const ExportFormat& f : export_formats()) f.write(e, k);
  e << YAML::EndMap;
}

}  // namespace autotune
