// What a finished run's output says: the out-of-memory messages of the
// device libraries and of the host, as those programs print them.
#include <gtest/gtest.h>

#include <optional>

#include "proc/subprocess.hpp"

namespace autotune {
namespace {

TEST(OomMessages, DeviceAndHostPatterns) {
  EXPECT_EQ(find_oom_message("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB"), Status::oom);
  EXPECT_EQ(find_oom_message("RuntimeError: CUDA error: out of memory\nCUDA kernel errors"), Status::oom);
  EXPECT_EQ(find_oom_message("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"), Status::oom);
  EXPECT_EQ(find_oom_message("terminate called after throwing an instance of 'std::bad_alloc'"), Status::host_oom);
  EXPECT_EQ(find_oom_message("Traceback...\nMemoryError\n"), Status::host_oom);
  EXPECT_EQ(find_oom_message("MemoryError"), Status::host_oom);
  EXPECT_EQ(find_oom_message("loading 3 GB of memory into cache"), std::nullopt);
  EXPECT_EQ(find_oom_message(""), std::nullopt);
}

}  // namespace
}  // namespace autotune
