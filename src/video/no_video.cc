// Copyright 2026 The stoker Authors.
//
// VideoClips without FFmpeg (CMake STOKER_WITH_VIDEO off, or libav* not found):
// Open says so, naming the reason.
#include "stoker/video.h"

namespace stoker {

bool BuiltWithVideo() { return false; }

StatusOr<std::shared_ptr<VideoClips>> VideoClips::Open(const VideoClipsOptions& options) {
  return UnimplementedError(
      "VideoClips: stoker was built without video (FFmpeg's libavformat, libavcodec and "
      "libswscale were not found when it was built; Debian: apt-get install libavformat-dev "
      "libavcodec-dev libswscale-dev, then rebuild)");
}

}  // namespace stoker
