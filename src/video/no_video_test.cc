// Copyright 2026 The stoker Authors.
//
// A build without FFmpeg (STOKER_WITH_VIDEO off): VideoClips says so.
#include <gtest/gtest.h>

#include "stoker/video.h"

namespace stoker {
namespace {

TEST(NoVideo, OpenSaysStokerWasBuiltWithoutVideo) {
  EXPECT_FALSE(BuiltWithVideo());
  VideoClipsOptions o;
  o.files = {"a.mp4"};
  const Status st = VideoClips::Open(o).status();
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("built without video"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace stoker
