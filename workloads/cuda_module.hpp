#pragma once
// The cuda workload's code lives in a shared library of its own,
// libautotune_cuda.so (workloads/cuda/), loaded with dlopen the first time a
// cuda trial measures, in the process that measures it. cuBLAS and the CUDA
// runtime come with it, about 160 MiB resident once mapped: linked into the
// tuner, they were in every process, so every cpu trial's ram_bytes carried
// them and every forked trial inherited them.
//
// The schema (options, defaults) is here, in the workloads library, so that
// specs naming `cuda` validate without loading anything. Where the module
// cannot be loaded (not built, or the CUDA libraries missing), a cuda trial
// is an `error` outcome naming each place looked and why it failed.
//
// Where it is looked for: $AUTOTUNE_CUDA_MODULE alone when it is set; else,
// in order, beside the running executable, ../lib from it (a carried or
// installed tree), the build tree it was built in, then the dynamic linker's
// own search (LD_LIBRARY_PATH).
#include <string>

#include "workloads/workload.hpp"

namespace autotune {

// The module's entry point: a new cuda workload over these (validated)
// options; the caller owns it.
using CudaCreateFn = Workload* (*)(const Options* options);

// Loads the module once per process; nullptr and `why` when it cannot.
CudaCreateFn load_cuda_module(std::string& why);

}  // namespace autotune

extern "C" autotune::Workload* autotune_cuda_create(const autotune::Options* options);
