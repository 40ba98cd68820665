// The kind -> factory table of workloads. Adding one: declare its info()
// function in workloads.hpp and add one line here.
#include "workloads/workloads.hpp"

namespace autotune {

const std::vector<WorkloadInfo>& workload_catalog() {
  static const std::vector<WorkloadInfo> catalog = {
      synthetic_workload_info(),
      replay_workload_info(),
      command_workload_info(),
      cpu_workload_info(),
#ifdef AUTOTUNE_HAVE_CUDA
      cuda_workload_info(),
#endif
  };
  return catalog;
}

}  // namespace autotune
