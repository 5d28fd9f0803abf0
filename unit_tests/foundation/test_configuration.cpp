#include <gtest/gtest.h>

#include <sstream>

#include "kwsvd/kwsvd.hpp"

TEST(Configuration, ReportsVersionBackendAndScratchLimit) {
  std::ostringstream out;
  kwsvd::print_configuration(out);
  const std::string text = out.str();
  EXPECT_NE(text.find(std::string("kwsvd ") + KWSVD_VERSION_STRING), std::string::npos) << text;
  EXPECT_NE(text.find(Kokkos::DefaultExecutionSpace::name()), std::string::npos) << text;
  EXPECT_NE(text.find("team scratch max"), std::string::npos) << text;
  EXPECT_STREQ(kwsvd::version(), KWSVD_VERSION_STRING);
}
