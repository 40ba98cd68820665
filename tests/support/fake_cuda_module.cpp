// A stand-in for libautotune_cuda.so (workloads/cuda_module.hpp) that
// misbehaves on purpose, so that tests/workloads/cuda_module_test.cpp can
// check that nothing a module does takes a trial down: its workload's
// measure() throws, or, with AUTOTUNE_FAKE_CUDA_NULL set, it creates nothing.
#include <cstdlib>
#include <stdexcept>

#include "workloads/workload.hpp"

namespace {

class ThrowingWorkload final : public autotune::Workload {
 public:
  std::string_view kind() const override { return "cuda"; }
  autotune::Outcome measure(const autotune::Assignment&, const autotune::TrialContext&) override {
    throw std::logic_error("fake module: measure threw");
  }
};

}  // namespace

extern "C" autotune::Workload* autotune_cuda_create(const autotune::Options*) {
  if (std::getenv("AUTOTUNE_FAKE_CUDA_NULL")) return nullptr;
  return new ThrowingWorkload();
}
