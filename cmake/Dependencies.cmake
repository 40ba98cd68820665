# Every dependency comes from Debian 12 packages (see README, "Set-up").
find_package(Threads REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(NLopt REQUIRED)          # 2.7.1 on Debian 12: C API / vfunc form only
find_package(yaml-cpp REQUIRED)       # 0.7: target is `yaml-cpp`
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(MUPARSER REQUIRED IMPORTED_TARGET muparser)

# CUDA is optional: detected, never required.
set(AUTOTUNE_HAVE_CUDA OFF)
if(AUTOTUNE_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(AUTOTUNE_HAVE_CUDA ON)
    endif()
  endif()
endif()
message(STATUS "autotune: cuda workload ${AUTOTUNE_HAVE_CUDA}")
