#include "schema/status.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd value " + std::to_string(x));
  return x / 2;
}

Status Chain(int x) {
  auto r = Half(x);
  BATON_RETURN_IF_ERROR(r.status());
  return Status::Ok();
}

TEST(StatusTest, ExitCodesFollowTheContract) {
  EXPECT_EQ(Status::Config("x").exit_code(), 78);
  EXPECT_EQ(Status::Data("x").exit_code(), 65);
  EXPECT_EQ(Status::InvalidArgument("x").exit_code(), 64);
  EXPECT_EQ(Status::NotFound("x").exit_code(), 66);
  EXPECT_EQ(Status::Unavailable("x").exit_code(), 69);
  EXPECT_EQ(Status::Ok().exit_code(), 0);
}

TEST(StatusTest, ResultCarriesValueOrError) {
  auto ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value(), 4);
  auto bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString(), "usage error: odd value 3");
  EXPECT_FALSE(Chain(5).ok());
  EXPECT_TRUE(Chain(4).ok());
  EXPECT_EQ(Status::Data("bad").Annotate("episode 3").message(), "episode 3: bad");
}

}  // namespace
}  // namespace baton
