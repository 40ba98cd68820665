// Intra-op threads are each process's own: every rank of the job gets them,
// from its environment as it starts (`environment:`) or from
// torch.set_num_threads (`torch:`). Nothing when the space has no threads knob.
#include "tuner/record/exports.hpp"

namespace autotune {
namespace {

void write_threads(YAML::Emitter& e, const ExportKnobs& k) {
  if (!k.threads) return;
  e << YAML::Key << "environment" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "OMP_NUM_THREADS", k.threads);
  e << YAML::EndMap;
  e << YAML::Key << "torch" << YAML::Value << YAML::Flow << YAML::BeginMap;
  put_knob(e, "set_num_threads", k.threads);
  e << YAML::EndMap;
}

}  // namespace

ExportFormat threads_export() {
  return {"threads", "intra-op threads per rank: the job's environment and torch.set_num_threads", write_threads};
}

}  // namespace autotune
