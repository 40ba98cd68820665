#include "workloads/cuda/cuda_check.hpp"

#include <cstdio>

namespace autotune::cuda {

namespace {
std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}
}  // namespace

const char* cublas_status_name(cublasStatus_t s) noexcept {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_(unknown)";
  }
}

CudaFailure failure_of(cudaError_t e) noexcept {
  switch (e) {
    case cudaErrorMemoryAllocation: return CudaFailure::out_of_memory;
    // No SASS for this card and no PTX it can JIT, or PTX newer than the
    // driver's compiler: the build's architecture list is the cause.
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx: return CudaFailure::no_kernel_image;
    default: return CudaFailure::other;
  }
}

CudaFailure failure_of(cublasStatus_t s) noexcept {
  switch (s) {
    case CUBLAS_STATUS_ALLOC_FAILED: return CudaFailure::out_of_memory;
    case CUBLAS_STATUS_ARCH_MISMATCH: return CudaFailure::card_lacks_feature;
    default: return CudaFailure::other;
  }
}

void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  // Clears a non-sticky error so that later calls do not report it again.
  (void)cudaGetLastError();
  throw CudaError(where(call, file, line) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")",
                  failure_of(e));
}

void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  throw CudaError(where(call, file, line) + ": " + cublas_status_name(s), failure_of(s));
}

void report_cuda_error(cudaError_t e, const char* call, const char* file, int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "autotune: %s at %s:%d: %s\n", call, file, line, cudaGetErrorName(e));
}

void report_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "autotune: %s at %s:%d: %s\n", call, file, line, cublas_status_name(s));
}

}  // namespace autotune::cuda
