// Copyright 2026 The stoker Authors.
#include "video/index.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "io/cache_file.h"
#include "video/demux.h"

namespace stoker {
namespace {

struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

void SortUnique(std::vector<int64_t>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

constexpr char kMagic[8] = {'S', 'T', 'K', 'V', 'I', 'D', 'X', '1'};

void PutTimes(std::string* out, const std::vector<int64_t>& v) {
  PutU64(out, v.size());
  for (int64_t t : v) PutU64(out, static_cast<uint64_t>(t));
}

bool GetTimes(ByteCursor* c, size_t limit, std::vector<int64_t>* v) {
  uint64_t n = 0;
  if (!c->Get(&n) || n > limit) return false;
  v->resize(static_cast<size_t>(n));
  for (int64_t& t : *v) {
    uint64_t u = 0;
    if (!c->Get(&u)) return false;
    t = static_cast<int64_t>(u);
  }
  return std::is_sorted(v->begin(), v->end()) &&
         std::adjacent_find(v->begin(), v->end()) == v->end();
}

}  // namespace

std::string EncodeVideoIndex(const VideoIndex& index, const FileIdentity& id) {
  std::string out(kMagic, sizeof(kMagic));
  PutIdentity(&out, id);
  PutU32(&out, static_cast<uint32_t>(index.time_base_num));
  PutU32(&out, static_cast<uint32_t>(index.time_base_den));
  PutU32(&out, static_cast<uint32_t>(index.width));
  PutU32(&out, static_cast<uint32_t>(index.height));
  PutTimes(&out, index.pts);
  PutTimes(&out, index.keyframes);
  return out;
}

StatusOr<VideoIndex> DecodeVideoIndex(const std::string& bytes, FileIdentity* id) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return DataLossError("not a stoker video index");
  }
  ByteCursor c(bytes, sizeof(kMagic));
  VideoIndex index;
  uint32_t num = 0, den = 0, w = 0, h = 0;
  const size_t limit = bytes.size() / 8;
  if (!c.GetIdentity(id) || !c.Get32(&num) || !c.Get32(&den) || !c.Get32(&w) || !c.Get32(&h) ||
      !GetTimes(&c, limit, &index.pts) || !GetTimes(&c, limit, &index.keyframes) || !c.done()) {
    return DataLossError("corrupt video index");
  }
  if (num == 0 || den == 0 || num > INT32_MAX || den > INT32_MAX || w == 0 || h == 0 ||
      w > INT32_MAX || h > INT32_MAX || index.pts.empty() || index.keyframes.empty()) {
    return DataLossError("corrupt video index (header)");
  }
  index.time_base_num = static_cast<int>(num);
  index.time_base_den = static_cast<int>(den);
  index.width = static_cast<int>(w);
  index.height = static_cast<int>(h);
  return index;
}

std::string VideoIndexPath(const std::string& index_dir, const std::string& path) {
  return CachePath(index_dir, path) + ".vidx";
}

StatusOr<VideoIndex> LoadOrBuildVideoIndex(const std::string& path, int64_t max_pixels,
                                           const std::string& index_dir, bool* loaded) {
  return LoadOrBuildVideoIndex(VideoLocation{path, -1, 0, ""}, max_pixels, index_dir, loaded);
}

StatusOr<VideoIndex> LoadOrBuildVideoIndex(const VideoLocation& where, int64_t max_pixels,
                                           const std::string& index_dir, bool* loaded) {
  *loaded = false;
  FileIdentity id;
  std::string entry;
  if (!index_dir.empty() && IdentifyFile(where.path, &id).ok()) {
    entry = VideoIndexPath(index_dir, where.offset < 0
                                          ? where.path
                                          : where.path + "#" + std::to_string(where.offset));
    std::ifstream f(entry, std::ios::binary);
    if (f) {
      const std::string bytes((std::istreambuf_iterator<char>(f)), {});
      FileIdentity was;
      StatusOr<VideoIndex> index = DecodeVideoIndex(bytes, &was);
      if (index.ok() && was == id &&
          static_cast<int64_t>(index.value().width) * index.value().height <= max_pixels) {
        *loaded = true;
        return index;
      }
    }
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<VideoFile> file, VideoFile::Open(where, max_pixels));
  STOKER_ASSIGN_OR_RETURN(VideoIndex index, BuildVideoIndex(file.get()));
  if (!entry.empty()) WriteFileAtomically(entry, EncodeVideoIndex(index, id));
  return index;
}

StatusOr<VideoIndex> BuildVideoIndex(VideoFile* file) {
  VideoIndex index;
  const AVRational tb = file->stream()->time_base;
  index.time_base_num = tb.num;
  index.time_base_den = tb.den;
  index.width = file->width();
  index.height = file->height();
  if (tb.num <= 0 || tb.den <= 0) return DataLossError(file->path() + ": no time base");
  std::unique_ptr<AVPacket, PacketDeleter> pkt(av_packet_alloc());
  if (!pkt) return ResourceExhaustedError("av_packet_alloc failed");
  int64_t last_dts = AV_NOPTS_VALUE;
  for (;;) {
    const int err = av_read_frame(file->format(), pkt.get());
    if (err == AVERROR_EOF) break;
    if (err < 0) {
      return DataLossError(file->path() + ": reading packet " + std::to_string(index.pts.size()) +
                           " failed (" + AvErrorString(err) + ")");
    }
    if (pkt->stream_index == file->stream_index() && (pkt->flags & AV_PKT_FLAG_DISCARD) == 0) {
      const int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      if (ts == AV_NOPTS_VALUE) {
        av_packet_unref(pkt.get());
        return DataLossError(file->path() + ": a video packet has no timestamp");
      }
      // Decode order's timestamps never go back (a concatenated stream whose
      // clock restarts, a broken muxer): frames would be found by the wrong time.
      if (pkt->dts != AV_NOPTS_VALUE) {
        if (last_dts != AV_NOPTS_VALUE && pkt->dts < last_dts) {
          const std::string at = std::to_string(index.pts.size());
          av_packet_unref(pkt.get());
          return DataLossError(file->path() + ": timestamps go backwards at video packet " + at +
                               " (decode timestamp " + std::to_string(last_dts) + " then " +
                               std::to_string(pkt->dts) + ")");
        }
        last_dts = pkt->dts;
      }
      index.pts.push_back(ts);
      if (pkt->flags & AV_PKT_FLAG_KEY) index.keyframes.push_back(ts);
    }
    av_packet_unref(pkt.get());
  }
  const size_t packets = index.pts.size();
  SortUnique(&index.pts);
  SortUnique(&index.keyframes);
  if (index.pts.empty()) return DataLossError(file->path() + ": the video stream has no frames");
  // Frames are chosen by presentation timestamp: frames sharing one (a
  // stream of zero duration, timestamps that repeat) cannot be told apart.
  if (index.pts.size() != packets) {
    return DataLossError(file->path() + ": " + std::to_string(packets - index.pts.size()) +
                         " of its " + std::to_string(packets) +
                         " video frames repeat another's presentation timestamp (zero duration "
                         "or repeated timestamps)");
  }
  if (index.keyframes.empty()) index.keyframes.push_back(index.pts.front());
  return index;
}

std::vector<int64_t> PlanClipFrames(const VideoIndex& index, const ClipSpec& spec, int clip,
                                    Rng* rng) {
  const int64_t n = static_cast<int64_t>(index.pts.size());
  const int64_t len = std::max(1, spec.clip_len);
  const int64_t k = std::max(1, spec.clips_per_video);
  // A start in [0, range]: drawn, or the clip's evenly spaced one.
  auto start_in = [&](int64_t range) -> int64_t {
    if (range <= 0) return 0;
    if (!spec.uniform) return static_cast<int64_t>(rng->Below(static_cast<uint64_t>(range) + 1));
    if (k == 1) return range / 2;
    return static_cast<int64_t>(static_cast<__int128>(clip) * range / (k - 1));
  };
  std::vector<int64_t> frames(static_cast<size_t>(len));
  if (spec.all) {
    const int64_t step = std::max(1, spec.step);
    if (spec.frame_rate <= 0) {
      const int64_t stride = std::max(1, spec.frame_stride);
      for (int64_t j = 0; j < len; ++j) frames[j] = std::min(n - 1, clip * step + j * stride);
      return frames;
    }
    const double units_per_frame = 1.0 / (spec.frame_rate * index.time_base());
    for (int64_t j = 0; j < len; ++j) {
      const int64_t t = index.pts.front() +
                        static_cast<int64_t>(std::floor((clip * step + j) * units_per_frame + 1e-9));
      const auto it = std::upper_bound(index.pts.begin(), index.pts.end(), t);
      frames[j] = std::max<int64_t>(0, (it - index.pts.begin()) - 1);
    }
    return frames;
  }
  if (spec.frame_rate <= 0) {
    const int64_t stride = std::max(1, spec.frame_stride);
    const int64_t span = (len - 1) * stride + 1;
    const int64_t s = start_in(n - span);
    for (int64_t j = 0; j < len; ++j) frames[j] = std::min(n - 1, s + j * stride);
    return frames;
  }
  // By time, in pts units: frame j is the last one presented at or before
  // t0 + j / rate.
  const double units_per_frame = 1.0 / (spec.frame_rate * index.time_base());
  const int64_t first = index.pts.front(), last = index.pts.back();
  const int64_t clip_units = static_cast<int64_t>(std::floor((len - 1) * units_per_frame));
  const int64_t t0 = first + start_in(last - first - clip_units);
  for (int64_t j = 0; j < len; ++j) {
    const int64_t t = t0 + static_cast<int64_t>(std::floor(j * units_per_frame + 1e-9));
    const auto it = std::upper_bound(index.pts.begin(), index.pts.end(), t);
    frames[j] = std::max<int64_t>(0, (it - index.pts.begin()) - 1);
  }
  return frames;
}

int64_t CountAllClips(const VideoIndex& index, const ClipSpec& spec) {
  const int64_t len = std::max(1, spec.clip_len);
  const int64_t step = std::max(1, spec.step);
  int64_t frames = static_cast<int64_t>(index.pts.size());
  int64_t span = (len - 1) * std::max(1, spec.frame_stride) + 1;
  if (spec.frame_rate > 0 && !index.pts.empty()) {
    // Resampled frames k = 0..K-1 with first + floor(k * upf) <= last.
    const double units_per_frame = 1.0 / (spec.frame_rate * index.time_base());
    const int64_t range = index.pts.back() - index.pts.front();
    auto inside = [&](int64_t k) {
      return static_cast<int64_t>(std::floor(k * units_per_frame + 1e-9)) <= range;
    };
    int64_t k = static_cast<int64_t>(
                    std::min(1e15, (static_cast<double>(range) + 1) / units_per_frame)) + 1;
    while (k > 0 && !inside(k)) --k;
    frames = k + 1;  // k = 0..K-1 are inside
    span = len;
  }
  return frames < span ? 0 : (frames - span) / step + 1;
}

size_t PlanSeek(const VideoIndex& index, int64_t first_pts) {
  const auto it = std::upper_bound(index.keyframes.begin(), index.keyframes.end(), first_pts);
  return it == index.keyframes.begin() ? 0 : static_cast<size_t>(it - index.keyframes.begin()) - 1;
}

}  // namespace stoker
