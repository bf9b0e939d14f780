#include "schema/status.h"

#include <gtest/gtest.h>

#include <memory>

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

// Quarter through Half twice: a Result<int> function unwrapping others with the macro.
Result<int> Quarter(int x) {
  BATON_ASSIGN_OR_RETURN(int half, Half(x));
  BATON_ASSIGN_OR_RETURN(half, Half(half));  // assigns an existing variable
  return half;
}

// Move-only values come out of the Result by move.
Result<std::unique_ptr<int>> Boxed(int x) {
  if (x < 0) return Status::Data("negative value " + std::to_string(x));
  return std::make_unique<int>(x);
}

Status Unbox(int x, int* out) {
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<int> box, Boxed(x));
  *out = *box;
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

TEST(StatusTest, AssignOrReturnUnwrapsOrReturnsTheError) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(Quarter(8).value(), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd value 3");  // the second unwrap failed
  EXPECT_EQ(Quarter(5).status().message(), "odd value 5");
  int out = 0;
  ASSERT_TRUE(Unbox(7, &out).ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(Unbox(-1, &out).code(), Code::kData);
}

}  // namespace
}  // namespace baton
