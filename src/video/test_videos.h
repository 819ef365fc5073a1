// Copyright 2026 The stoker Authors.
//
// Test videos made by the ffmpeg CLI (Debian's), for the video tests. Header-only:
// used by src/video/*_test.cc.
//
// Thread-safety: functions of their arguments. Errors: MakeVideo returns false
// when ffmpeg fails or is missing (tests then skip, naming it).
#ifndef STOKER_VIDEO_TEST_VIDEOS_H_
#define STOKER_VIDEO_TEST_VIDEOS_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace stoker::testing {

inline bool HaveFfmpeg() { return std::system("ffmpeg -version > /dev/null 2>&1") == 0; }

// Runs `ffmpeg -v error -y <args> <path>`; true when it wrote a file.
inline bool MakeVideo(const std::string& args, const std::string& path) {
  const std::string cmd = "ffmpeg -nostdin -v error -y " + args + " '" + path + "'";
  return std::system(cmd.c_str()) == 0 && std::filesystem::file_size(path) > 0;
}

// A fresh temporary folder, removed by the destructor.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/stoker_video_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// testsrc, `seconds` long at `rate` fps, size WxH, H.264 with a keyframe every `gop` frames.
inline std::string H264Args(int w, int h, int rate, double seconds, int gop) {
  return "-f lavfi -i testsrc=size=" + std::to_string(w) + "x" + std::to_string(h) +
         ":rate=" + std::to_string(rate) + ":duration=" + std::to_string(seconds) +
         " -c:v libx264 -pix_fmt yuv420p -g " + std::to_string(gop) + " -keyint_min " +
         std::to_string(gop) + " -sc_threshold 0";
}

}  // namespace stoker::testing

#endif  // STOKER_VIDEO_TEST_VIDEOS_H_
