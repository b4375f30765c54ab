#include <gtest/gtest.h>

#include "mpijob/quantity.h"

namespace mpijob {
namespace {

std::string sum(const std::vector<kube::Object>& qs, int64_t times = 1) {
  Quantity total;
  for (const auto& q : qs) total += Quantity::parse(q) * times;
  return total.to_string();
}

TEST(Quantity, SumsAndFormatsLikeKubernetes) {
  EXPECT_EQ(sum({"500m", "500m"}), "1");
  EXPECT_EQ(sum({"1Gi", "512Mi"}), "1536Mi");
  EXPECT_EQ(sum({"1Gi"}, 4), "4Gi");
  EXPECT_EQ(sum({1, "250m"}), "1250m");
  EXPECT_EQ(sum({"2k"}, 3), "6k");
  EXPECT_EQ(sum({"1.5"}), "1500m");
  EXPECT_EQ(sum({"8"}), "8");
}

TEST(Quantity, RejectsGarbage) {
  EXPECT_THROW(Quantity::parse("abc"), std::invalid_argument);
  EXPECT_THROW(Quantity::parse("1Qi"), std::invalid_argument);
}

}  // namespace
}  // namespace mpijob
