#pragma once
// Which GPU architectures this module carries code for, and whether a card
// can run it: pure functions, so that the "no kernel image" explanation is
// tested without a device.
//
// The list comes from the build (cmake/CudaArchitectures.cmake) in CMake's
// syntax, comma-separated: "75-real,80-real,90" is SASS for sm_75 and sm_80,
// SASS and PTX for sm_90. Compute capabilities are major * 10 + minor (8.9 -> 89).
#include <string>
#include <string_view>
#include <vector>

namespace autotune::cuda {

struct BuiltArch {
  int cc = 0;        // 75, 80, 86, ...
  bool sass = false;  // machine code for it
  bool ptx = false;   // PTX the driver compiles for this and later cards
};

// Entries it cannot read ("native", "all") are skipped.
std::vector<BuiltArch> parse_architectures(std::string_view csv);
// This module's list, and whether -DCMAKE_CUDA_ARCHITECTURES chose it.
const std::vector<BuiltArch>& built_architectures();
bool architectures_from_user();

// True when a card of compute capability `cc` can run what was built: SASS of
// the same major and a minor at or under the card's (binary compatibility
// within a major: sm_80 code runs on sm_86 and sm_89), or PTX for `cc` or an
// earlier one (JIT-compiled by the driver).
bool runs_on(const std::vector<BuiltArch>& built, int cc);

// "sm_75, sm_80, sm_86, sm_89, sm_90 and PTX compute_90".
std::string describe_architectures(const std::vector<BuiltArch>& built);

// The card a trial runs on, for error messages; cc 0 when not known yet.
struct CardInfo {
  std::string name;
  int cc = 0;
};
std::string describe_card(const CardInfo& card);  // "NVIDIA A100-SXM4-80GB (compute capability 8.0)"

// The trial's error when the module has no code for the card (or the driver
// cannot take its PTX): names the card, what was built, and the fix.
std::string no_kernel_image_message(const CardInfo& card, const std::vector<BuiltArch>& built,
                                    std::string_view cause);

}  // namespace autotune::cuda
