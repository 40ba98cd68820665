// The cuda workload's schema, and the proxy that loads its module
// (workloads/cuda_module.hpp) when a trial first measures.
#ifdef AUTOTUNE_HAVE_CUDA

#include <dlfcn.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "workloads/cuda_module.hpp"
#include "workloads/pipeline_knobs.hpp"
#include "workloads/workloads.hpp"

namespace autotune {

namespace {

constexpr const char* kModuleName = "libautotune_cuda.so";

// Where to look, in order. $AUTOTUNE_CUDA_MODULE, when set, is the only
// place: a user who names a file means that file, not a silent fallback.
std::vector<std::string> module_candidates() {
  namespace fs = std::filesystem;
  if (const char* p = std::getenv("AUTOTUNE_CUDA_MODULE"); p && *p) return {p};
  std::vector<std::string> c;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    c.push_back((exe.parent_path() / kModuleName).string());
    c.push_back((exe.parent_path().parent_path() / "lib" / kModuleName).string());
  }
  c.emplace_back(AUTOTUNE_CUDA_MODULE_PATH);
  c.emplace_back(kModuleName);  // bare: the dynamic linker's search (LD_LIBRARY_PATH)
  return c;
}

struct Module {
  CudaCreateFn create = nullptr;
  std::string why;
};

Module open_module() {
  Module m;
  std::string tried;
  for (const std::string& path : module_candidates()) {
    const bool bare = path.find('/') == std::string::npos;
    if (!bare && !std::filesystem::exists(path)) {
      tried += "; " + path + ": no such file";
      continue;
    }
    // Never closed: the CUDA libraries do not support being unloaded.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = ::dlerror();
      tried += "; " + path + ": " + (e ? e : "dlopen failed");
      continue;
    }
    m.create = reinterpret_cast<CudaCreateFn>(::dlsym(handle, "autotune_cuda_create"));
    if (m.create) return m;
    tried += "; " + path + ": no autotune_cuda_create in it";
  }
  m.why = "the cuda workload's module (" + std::string(kModuleName) + ") could not be loaded" + tried;
  return m;
}

// Forwards to the module's workload, created on the first measurement.
class CudaModuleWorkload final : public Workload {
 public:
  explicit CudaModuleWorkload(Options o) : m_opts(std::move(o)) {}
  std::string_view kind() const override { return "cuda"; }

  Outcome measure(const Assignment& config, const TrialContext& ctx) override {
    // The module catches its own exceptions; this catches those of a module
    // that does not (another build, a stand-in), so that a trial reports an
    // `error` instead of dying (exit 127, a lost outcome).
    try {
      if (!m_impl) {
        std::string why;
        const CudaCreateFn create = load_cuda_module(why);
        if (!create) return Outcome::failure(Status::error, why);
        m_impl.reset(create(&m_opts));
        if (!m_impl)
          return Outcome::failure(Status::error, "the cuda workload's module could not create the workload");
      }
      return m_impl->measure(config, ctx);
    } catch (const std::exception& e) {
      return Outcome::failure(Status::error, std::string("the cuda workload's module failed: ") + e.what());
    } catch (...) {
      return Outcome::failure(Status::error, "the cuda workload's module failed with an exception of unknown type");
    }
  }

 private:
  Options m_opts;
  std::unique_ptr<Workload> m_impl;
};

}  // namespace

CudaCreateFn load_cuda_module(std::string& why) {
  static const Module module = open_module();  // once per process, thread-safe
  why = module.why;
  return module.create;
}

WorkloadInfo cuda_workload_info() {
  using I = std::int64_t;
  WorkloadInfo info;
  info.kind = "cuda";
  info.builtin_worker = true;
  info.summary = "the harness's loader and an MLP trained with cuBLAS on the GPU (fp32, tf32, fp16, bf16)";
  info.options = {
      {"device", OptionType::integer, OptionValue{I{0}}, "CUDA device index (after CUDA_VISIBLE_DEVICES)", {}, 0.0,
       1024.0},
      // PyTorch's fp32 matmul is CUBLAS_COMPUTE_32F with cuBLAS's default
      // math; pedantic forbids every reduced-precision shortcut (slower).
      {"fp32_math", OptionType::string, OptionValue{std::string("default")},
       "cuBLAS math of precision fp32: default (as PyTorch) or pedantic (CUBLAS_COMPUTE_32F_PEDANTIC)",
       {"default", "pedantic"}},
  };
  ModelDefaults m;
  m.depth = 4;
  m.width = 4096;
  m.input_dim = 1024;
  m.classes = 1000;
  m.learning_rate = 1e-4;
  m.max_depth = 256;
  m.max_width = 1048576;
  for (auto& s : model_option_specs(m)) info.options.push_back(std::move(s));
  PipelineDefaults d;
  // On paper (this machine: ~1.3 ns per byte-pass and core): ~50 us of
  // preprocessing per sample, ~20k samples/s per worker, so 14 workers feed
  // ~270k/s: fp32 (~100k/s at width 4096) compute-bound, bf16 loader-bound.
  // Calibrate on the first GPU run (bench/gpu/README.md).
  d.sample_bytes = 8192;
  d.preprocess_passes = 2;
  d.dataset_samples = 4096;
  d.max_seconds = 10.0;
  for (auto& s : pipeline_option_specs(d)) info.options.push_back(std::move(s));
  info.make = [](const Options& o, const WorkloadEnv&) -> std::unique_ptr<Workload> {
    check_model_fits_samples(o, "cuda");
    return std::make_unique<CudaModuleWorkload>(o);
  };
  return info;
}

}  // namespace autotune

#endif  // AUTOTUNE_HAVE_CUDA
