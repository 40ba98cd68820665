// The module's architecture list: parsed and judged on the CPU, and checked
// against what is really in the built library (cuobjdump, when present).
#ifdef AUTOTUNE_HAVE_CUDA

#include "workloads/cuda/cuda_arch.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

namespace autotune::cuda {
namespace {

TEST(CudaArch, ParsesCMakesSyntax) {
  const auto a = parse_architectures("90,75-real,80-real,89-virtual,native,90a");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].cc, 75);
  EXPECT_TRUE(a[0].sass);
  EXPECT_FALSE(a[0].ptx);
  EXPECT_EQ(a[2].cc, 89);
  EXPECT_FALSE(a[2].sass);
  EXPECT_TRUE(a[2].ptx);
  EXPECT_EQ(a[3].cc, 90);
  EXPECT_TRUE(a[3].sass && a[3].ptx);
  EXPECT_TRUE(parse_architectures("").empty());
}

TEST(CudaArch, ACardRunsSassOfItsMajorAndAnyOlderPtx) {
  const auto sm90_only = parse_architectures("90-real");
  EXPECT_TRUE(runs_on(sm90_only, 90));
  EXPECT_FALSE(runs_on(sm90_only, 80));   // the issue's A100 on an sm_90 build
  EXPECT_FALSE(runs_on(sm90_only, 100));  // no PTX: not even a newer card
  const auto sm80 = parse_architectures("80-real");
  EXPECT_TRUE(runs_on(sm80, 86));  // binary compatible within a major
  EXPECT_TRUE(runs_on(sm80, 89));
  EXPECT_FALSE(runs_on(sm80, 75));
  EXPECT_FALSE(runs_on(sm80, 90));
  const auto with_ptx = parse_architectures("75-real,90");
  EXPECT_TRUE(runs_on(with_ptx, 120));  // Blackwell through the driver's JIT
  EXPECT_TRUE(runs_on(with_ptx, 75));
  EXPECT_FALSE(runs_on(with_ptx, 80));
}

TEST(CudaArch, TheMismatchErrorNamesTheCardAndWhatWasBuilt) {
  const auto built = parse_architectures("90");
  const std::string m = no_kernel_image_message({"NVIDIA A100-SXM4-80GB", 80}, built, "cudaErrorNoKernelImageForDevice");
  EXPECT_NE(m.find("NVIDIA A100-SXM4-80GB (compute capability 8.0)"), std::string::npos) << m;
  EXPECT_NE(m.find("sm_90 and PTX compute_90"), std::string::npos) << m;
  EXPECT_NE(m.find("-DCMAKE_CUDA_ARCHITECTURES=80"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorNoKernelImageForDevice"), std::string::npos) << m;
  // A card the list covers: the driver is too old for the PTX, not the build.
  const std::string d = no_kernel_image_message({"NVIDIA B200", 100}, built, "cudaErrorUnsupportedPtxVersion");
  EXPECT_NE(d.find("driver"), std::string::npos) << d;
  EXPECT_EQ(d.find("-DCMAKE_CUDA_ARCHITECTURES"), std::string::npos) << d;
}

TEST(CudaArch, TheDefaultBuildCoversTheCardsUsersHave) {
  if (architectures_from_user()) GTEST_SKIP() << "built with -DCMAKE_CUDA_ARCHITECTURES";
  const auto& built = built_architectures();
  // T4, A100, A10/RTX 3090, L4/RTX 4090, H100; B200 and RTX 5090 through PTX.
  for (int cc : {75, 80, 86, 89, 90, 100, 120}) EXPECT_TRUE(runs_on(built, cc)) << "sm_" << cc;
  for (int cc : {75, 80, 86, 89, 90})
    EXPECT_TRUE(std::any_of(built.begin(), built.end(), [cc](const BuiltArch& a) { return a.cc == cc && a.sass; }))
        << "no SASS for sm_" << cc;
}

std::string run(const std::string& cmd, int& status) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  status = ::pclose(p);
  return out;
}

std::set<int> listed(const std::string& out, const std::string& kind) {
  // "ELF file    1: libautotune_cuda.1.sm_90.cubin", "PTX file    1: ....sm_90.ptx"
  std::set<int> ccs;
  const std::regex line(kind + R"( file\s+\d+: \S*\.sm_(\d+)\.\w+)");
  for (std::sregex_iterator i(out.begin(), out.end(), line), end; i != end; ++i) ccs.insert(std::stoi((*i)[1]));
  return ccs;
}

TEST(CudaArch, TheBuiltModuleHoldsEveryListedArchitecture) {
  std::string tool = AUTOTUNE_CUOBJDUMP;
  if (const char* e = std::getenv("AUTOTUNE_CUOBJDUMP"); e && *e) tool = e;
  if (tool.empty() || !std::filesystem::exists(tool)) GTEST_SKIP() << "no cuobjdump (" << tool << ")";
  const std::string module = AUTOTUNE_CUDA_MODULE_FILE;
  int status = 0;
  const std::string elf = run("'" + tool + "' --list-elf '" + module + "' 2>&1", status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << elf;
  const std::string ptx = run("'" + tool + "' --list-ptx '" + module + "' 2>&1", status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ptx;
  const std::set<int> sass_in = listed(elf, "ELF"), ptx_in = listed(ptx, "PTX");
  std::set<int> sass_said, ptx_said;
  for (const BuiltArch& a : built_architectures()) {
    if (a.sass) sass_said.insert(a.cc);
    if (a.ptx) ptx_said.insert(a.cc);
  }
  if (sass_said.empty() && ptx_said.empty()) GTEST_SKIP() << "the build's architecture list is not one the module can read";
  // What the module says it was built for (its error messages) is what is in it.
  EXPECT_EQ(sass_in, sass_said) << elf;
  EXPECT_EQ(ptx_in, ptx_said) << ptx;
}

}  // namespace
}  // namespace autotune::cuda

#endif  // AUTOTUNE_HAVE_CUDA
