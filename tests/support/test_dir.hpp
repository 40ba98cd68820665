#pragma once
// A folder of the running test's own, made empty:
// <temp>/autotune_<suite>_<pid>_<test name>.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace autotune::testing {

inline std::filesystem::path fresh_test_dir(const std::string& suite) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("autotune_" + suite + "_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace autotune::testing
