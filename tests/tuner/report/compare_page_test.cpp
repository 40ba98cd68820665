// `autotune compare` writes compare.html beside its CSV and plots: the same
// kind of self-contained page as `autotune report`, loaded in Chromium.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "../../support/chromium_util.hpp"
#include "../../support/proc_util.hpp"

namespace autotune {
namespace {

TEST(ComparePage, CompareWritesAPageWithItsSummaryAndPlots) {
  testing::ScratchDir dir;
  const std::string cmd = "cd '" + dir.path().string() + "' && '" + AUTOTUNE_BINARY + "' compare --config '" +
                          AUTOTUNE_SOURCE_DIR + "/configs/synthetic.yaml' --strategies random,anneal --repeats 3 "
                          "--budget 12 --budgets 6 --out cmp >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string html = dir.read("cmp/compare.html");
  ASSERT_FALSE(html.empty());
  for (const char* id : {"summary", "best-so-far", "evals-to-95"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("<svg"), std::string::npos) << "gnuplot drew the plots";
  EXPECT_NE(html.find("anneal"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos) << "nothing fetched";
  if (testing::chromium_binary().empty()) return;
  const auto page = testing::render_page(dir.path() / "cmp/compare.html", dir.path() / "compare.png", dir.path());
  EXPECT_NE(page.dom.find("data-rendered=\"yes\""), std::string::npos);
  EXPECT_EQ(page.console, "");
  EXPECT_TRUE(page.screenshot);
}

}  // namespace
}  // namespace autotune
