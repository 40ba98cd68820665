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

void throw_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  // Clears a non-sticky error so that later calls do not report it again.
  (void)cudaGetLastError();
  throw CudaError(where(call, file, line) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")",
                  e == cudaErrorMemoryAllocation);
}

void throw_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) {
  throw CudaError(where(call, file, line) + ": " + cublas_status_name(s), s == CUBLAS_STATUS_ALLOC_FAILED);
}

void report_cuda_error(cudaError_t e, const char* call, const char* file, int line) noexcept {
  (void)cudaGetLastError();
  std::fprintf(stderr, "autotune: %s at %s:%d: %s\n", call, file, line, cudaGetErrorName(e));
}

void report_cublas_error(cublasStatus_t s, const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr, "autotune: %s at %s:%d: %s\n", call, file, line, cublas_status_name(s));
}

}  // namespace autotune::cuda
