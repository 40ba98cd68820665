// The spec `autotune` runs when no --config is given.
#include "tuner/spec/devices.hpp"
#include "tuner/spec/spec.hpp"

namespace autotune {

// configs/default_cpu.yaml and configs/default_gpu.yaml, embedded at build
// time (cmake/EmbedText.cmake): one source, which users can copy.
const std::string& default_cpu_spec_text();
const std::string& default_gpu_spec_text();

const std::string& embedded_default_spec() {
  // On a GPU every precision is a real choice; the cpu workload measures fp32
  // only, so there the default does not spend trials on `error` outcomes.
  return cuda_device_present() ? default_gpu_spec_text() : default_cpu_spec_text();
}

}  // namespace autotune
