#include "workloads/cuda/cuda_arch.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#ifndef AUTOTUNE_CUDA_ARCHITECTURES
#define AUTOTUNE_CUDA_ARCHITECTURES ""
#endif
#ifndef AUTOTUNE_CUDA_ARCHITECTURES_FROM_USER
#define AUTOTUNE_CUDA_ARCHITECTURES_FROM_USER 0
#endif

namespace autotune::cuda {

std::vector<BuiltArch> parse_architectures(std::string_view csv) {
  std::vector<BuiltArch> out;
  while (!csv.empty()) {
    const auto comma = csv.find(',');
    std::string_view item = csv.substr(0, comma);
    csv = comma == std::string_view::npos ? std::string_view{} : csv.substr(comma + 1);
    int cc = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), cc);
    if (ec != std::errc{} || cc <= 0) continue;
    const std::string_view suffix(end, static_cast<std::size_t>(item.data() + item.size() - end));
    BuiltArch a{cc, true, true};  // CMake: a bare number is both
    if (suffix == "-real") a.ptx = false;
    else if (suffix == "-virtual") a.sass = false;
    else if (!suffix.empty()) continue;  // "90a" and other suffixes: not for general cards
    out.push_back(a);
  }
  std::sort(out.begin(), out.end(), [](const BuiltArch& x, const BuiltArch& y) { return x.cc < y.cc; });
  return out;
}

const std::vector<BuiltArch>& built_architectures() {
  static const std::vector<BuiltArch> built = parse_architectures(AUTOTUNE_CUDA_ARCHITECTURES);
  return built;
}

bool architectures_from_user() { return AUTOTUNE_CUDA_ARCHITECTURES_FROM_USER != 0; }

bool runs_on(const std::vector<BuiltArch>& built, int cc) {
  return std::any_of(built.begin(), built.end(), [cc](const BuiltArch& a) {
    return (a.sass && a.cc / 10 == cc / 10 && a.cc <= cc) || (a.ptx && a.cc <= cc);
  });
}

std::string describe_architectures(const std::vector<BuiltArch>& built) {
  std::string sass, ptx;
  for (const BuiltArch& a : built) {
    if (a.sass) sass += (sass.empty() ? "" : ", ") + fmt::format("sm_{}", a.cc);
    if (a.ptx) ptx += (ptx.empty() ? "" : ", ") + fmt::format("compute_{}", a.cc);
  }
  if (sass.empty() && ptx.empty()) return "no architecture";
  if (ptx.empty()) return sass;
  return sass.empty() ? "PTX " + ptx : sass + " and PTX " + ptx;
}

std::string describe_card(const CardInfo& card) {
  if (card.cc <= 0) return card.name.empty() ? "the card" : card.name;
  return fmt::format("{} (compute capability {}.{})", card.name.empty() ? "the card" : card.name, card.cc / 10,
                     card.cc % 10);
}

std::string no_kernel_image_message(const CardInfo& card, const std::vector<BuiltArch>& built,
                                    std::string_view cause) {
  std::string m = fmt::format("no code in libautotune_cuda.so for {}: it was built for {}", describe_card(card),
                              describe_architectures(built));
  if (card.cc > 0 && runs_on(built, card.cc))
    // The list covers the card, so only the PTX path can be at fault.
    m += "; the list covers this card, so the driver is likely older than the CUDA toolkit the module was built "
         "with (it cannot compile that PTX): update the driver";
  else if (card.cc > 0)
    m += fmt::format("; rebuild with -DCMAKE_CUDA_ARCHITECTURES={} (or leave it unset for the default list)",
                     card.cc);
  if (!cause.empty()) m += fmt::format(" [{}]", cause);
  return m;
}

}  // namespace autotune::cuda
