#pragma once
// Descriptions (options + factory) of the built-in workload kinds.
#include "workloads/workload.hpp"

namespace autotune {

WorkloadInfo synthetic_workload_info();
WorkloadInfo replay_workload_info();
WorkloadInfo command_workload_info();
WorkloadInfo cpu_workload_info();
#ifdef AUTOTUNE_HAVE_CUDA
WorkloadInfo cuda_workload_info();  // its code is a module loaded when first measured (cuda_module.hpp)
#endif

}  // namespace autotune
