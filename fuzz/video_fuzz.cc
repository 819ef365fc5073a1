// Copyright 2026 The stoker Authors.
//
// libFuzzer target: the video demuxer and decoder (src/video/: libavformat
// over an AVIOContext on the input's bytes, the index, the seek plan and the
// clip decoder with libswscale's conversion), as VideoClips reads a video.
//
// Each input is opened as a video (VideoFile::OpenMemory), indexed
// (BuildVideoIndex) and, when the index holds at most kMaxFrames frames,
// three clips of it are decoded (3 frames at stride 2, uniform starts).
// Bounded so that each input ends fast: frames above kMaxPixels are refused
// before decoding (max_pixels), a longer index is not decoded, and the
// fuzzer's -max_len bounds the packets. Checked: every error names the
// video; an index is sorted, unique and non-empty with a keyframe; a clip
// that decodes calls the sink once per wanted frame, in order, with frames
// of the index's size.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "video/decode.h"
#include "video/demux.h"
#include "video/index.h"

namespace {

constexpr int64_t kMaxPixels = int64_t{1} << 16;  // 256 x 256
constexpr size_t kMaxFrames = 2048;
const char kName[] = "fuzz.video";

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool Named(const stoker::Status& st) { return st.message().find(kName) != std::string::npos; }

struct Sink {
  int calls = 0;
  int width = 0, height = 0;
  stoker::Rect want;  // the rectangle asked for (width 0: the whole frame)
  uint64_t sum = 0;   // touches every byte (ASan sees a short buffer)
  static stoker::Status Call(void* p, int j, const uint8_t* rgb, int w, int h,
                             const stoker::Rect& r, ptrdiff_t stride) {
    auto* s = static_cast<Sink*>(p);
    Check(j == s->calls);
    Check(w == s->width && h == s->height && stride >= 3 * r.width);
    // The rectangle converted lies in the frame and holds the one asked for.
    Check(r.x >= 0 && r.y >= 0 && r.width > 0 && r.height > 0 && r.right() <= w &&
          r.bottom() <= h);
    if (s->want.width > 0) {
      Check(r.x <= s->want.x && r.y <= s->want.y && r.right() >= s->want.right() &&
            r.bottom() >= s->want.bottom());
    } else {
      Check(r.width == w && r.height == h);
    }
    for (int y = 0; y < r.height; ++y) {
      for (int x = 0; x < 3 * r.width; ++x) s->sum += rgb[y * stride + x];
    }
    ++s->calls;
    return stoker::Status::OK();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  auto file = VideoFile::OpenMemory(data, size, kName, kMaxPixels);
  if (!file.ok()) {
    Check(Named(file.status()));
    return 0;
  }
  Check(static_cast<int64_t>(file.value()->width()) * file.value()->height() <= kMaxPixels);
  StatusOr<VideoIndex> built = BuildVideoIndex(file.value().get());
  if (!built.ok()) {
    Check(Named(built.status()));
    return 0;
  }
  const VideoIndex& index = built.value();
  Check(!index.pts.empty() && !index.keyframes.empty());
  for (size_t i = 1; i < index.pts.size(); ++i) Check(index.pts[i - 1] < index.pts[i]);
  if (index.pts.size() > kMaxFrames) return 0;
  ClipSpec spec;
  spec.clip_len = 3;
  spec.frame_stride = 2;
  spec.clips_per_video = 3;
  spec.uniform = true;
  ClipDecoder decoder;  // reused across clips, as a worker reuses its own
  for (int clip = 0; clip < spec.clips_per_video; ++clip) {
    Rng rng(1);
    const std::vector<int64_t> frames = PlanClipFrames(index, spec, clip, &rng);
    std::vector<int64_t> targets;
    for (int64_t f : frames) {
      Check(f >= 0 && f < static_cast<int64_t>(index.pts.size()));
      targets.push_back(index.pts[static_cast<size_t>(f)]);
    }
    auto again = VideoFile::OpenMemory(data, size, kName, kMaxPixels);
    Check(again.ok());  // it opened once
    Sink sink;
    sink.width = index.width;
    sink.height = index.height;
    // Clip 0 converts whole frames, the others a rectangle (as a crop asks).
    if (clip > 0 && index.width >= 2 && index.height >= 2) {
      sink.want = clip == 1 ? Rect{index.width / 4, index.height / 3, index.width / 2,
                                   std::max(1, index.height / 2)}
                            : Rect{1, 1, index.width - 2 > 0 ? index.width - 2 : 1,
                                   index.height - 2 > 0 ? index.height - 2 : 1};
      sink.want.width = std::max(1, sink.want.width);
    }
    DecodeStats stats;
    Status st = decoder.Decode(again.value().get(), index, targets, 1, sink.want, &Sink::Call,
                               &sink, &stats);
    if (st.ok()) {
      Check(sink.calls == static_cast<int>(targets.size()));
    } else {
      Check(Named(st));
    }
  }
  return 0;
}
