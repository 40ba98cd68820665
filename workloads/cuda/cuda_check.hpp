#pragma once
// Every CUDA runtime and cuBLAS call goes through one of these macros, which
// name the call, file and line (after nvbench's NVBENCH_CUDA_CALL).
//
//   AUTOTUNE_CUDA_CALL(cudaMalloc(&p, n));     // throws CudaError
//   AUTOTUNE_CUBLAS_CALL(cublasCreate(&h));    // throws CudaError
//   AUTOTUNE_CUDA_CALL_NOEXCEPT(cudaFree(p));  // destructors: reports to stderr
//
// CudaError::out_of_memory() is true for cudaErrorMemoryAllocation,
// CUBLAS_STATUS_ALLOC_FAILED and the harness's own vram limit, so that the
// workload can report `oom` rather than `error`; no_kernel_image() for the
// errors that mean the module has no code this card runs (no SASS for it, a
// PTX newer than the driver), so that the trial's error can name the card and
// the architectures built (cuda_arch.hpp); card_lacks_feature() for
// CUBLAS_STATUS_ARCH_MISMATCH (a GEMM the card cannot do in that precision),
// whose error names the card too.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace autotune::cuda {

enum class CudaFailure { other, out_of_memory, no_kernel_image, card_lacks_feature };

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, CudaFailure kind) : std::runtime_error(what), m_kind(kind) {}
  CudaError(const std::string& what, bool out_of_memory)
      : CudaError(what, out_of_memory ? CudaFailure::out_of_memory : CudaFailure::other) {}
  CudaFailure kind() const { return m_kind; }
  bool out_of_memory() const { return m_kind == CudaFailure::out_of_memory; }
  bool no_kernel_image() const { return m_kind == CudaFailure::no_kernel_image; }
  bool card_lacks_feature() const { return m_kind == CudaFailure::card_lacks_feature; }

 private:
  CudaFailure m_kind;
};

// How the workload reports each runtime error and cuBLAS status.
CudaFailure failure_of(cudaError_t e) noexcept;
CudaFailure failure_of(cublasStatus_t s) noexcept;

[[noreturn]] void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line);
void report_cuda_error(cudaError_t e, const char* call, const char* file, int line) noexcept;
void report_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) noexcept;
const char* cublas_status_name(cublasStatus_t s) noexcept;

}  // namespace autotune::cuda

#define AUTOTUNE_CUDA_CALL(call)                                                       \
  do {                                                                                 \
    const cudaError_t autotune_cuda_status_ = (call);                                  \
    if (autotune_cuda_status_ != cudaSuccess)                                          \
      ::autotune::cuda::throw_cuda_error(autotune_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define AUTOTUNE_CUDA_CALL_NOEXCEPT(call)                                               \
  do {                                                                                  \
    const cudaError_t autotune_cuda_status_ = (call);                                   \
    if (autotune_cuda_status_ != cudaSuccess)                                           \
      ::autotune::cuda::report_cuda_error(autotune_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define AUTOTUNE_CUBLAS_CALL(call)                                                         \
  do {                                                                                     \
    const cublasStatus_t autotune_cublas_status_ = (call);                                 \
    if (autotune_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                  \
      ::autotune::cuda::throw_cublas_error(autotune_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define AUTOTUNE_CUBLAS_CALL_NOEXCEPT(call)                                                 \
  do {                                                                                      \
    const cublasStatus_t autotune_cublas_status_ = (call);                                  \
    if (autotune_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::autotune::cuda::report_cublas_error(autotune_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here.
#define AUTOTUNE_CUDA_CHECK_LAUNCH() AUTOTUNE_CUDA_CALL(cudaGetLastError())
