// Copyright 2026 The stoker Authors.
#include "stoker/status.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = DataLossError("bad huffman code");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.ToString(), "DataLoss: bad huffman code");
}

TEST(StatusTest, OkCodeWithMessageIsOk) {
  EXPECT_TRUE(Status(StatusCode::kOk, "ignored").ok());
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  EXPECT_EQ(DataLossError("truncated").WithContext("/d/a.jpg").message(), "/d/a.jpg: truncated");
  EXPECT_EQ(DataLossError("x").WithContext("p").code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Status::OK().WithContext("p").ok());
}

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  STOKER_ASSIGN_OR_RETURN(int h, Half(x));
  STOKER_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::OK();
}

TEST(StatusOrTest, ValueOrError) {
  EXPECT_EQ(Half(8).value(), 4);
  EXPECT_FALSE(Half(3).ok());
  EXPECT_EQ(Half(3).status().message(), "odd");
  int q = 0;
  EXPECT_TRUE(Quarter(8, &q).ok());
  EXPECT_EQ(q, 2);
  EXPECT_EQ(Quarter(6, &q).code(), StatusCode::kInvalidArgument);
}

Status FailIfNegative(int x) {
  STOKER_RETURN_IF_ERROR(x < 0 ? InvalidArgumentError("negative") : Status::OK());
  return NotFoundError("reached the end");
}

TEST(StatusTest, ReturnIfErrorStopsEarly) {
  EXPECT_EQ(FailIfNegative(-1).message(), "negative");
  EXPECT_EQ(FailIfNegative(1).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stoker
