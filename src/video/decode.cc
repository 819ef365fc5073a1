// Copyright 2026 The stoker Authors.
#include "video/decode.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <memory>
#include <string>

#include "base/clock.h"
#include "video/demux.h"
#include "video/index.h"

namespace stoker {
namespace {

struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

}  // namespace

Rect ConvertRect(const Rect& want, int width, int height, int format) {
  const Rect whole{0, 0, width, height};
  if (want.width <= 0 || want.height <= 0 || (height & 1) != 0 ||
      (format != AV_PIX_FMT_YUV420P && format != AV_PIX_FMT_YUVJ420P)) {
    return whole;
  }
  constexpr int kColumns = 16;
  const int x0 = std::max(0, want.x) / kColumns * kColumns;
  const int y0 = std::max(0, want.y) & ~1;
  const int x1 = std::min(width, (want.right() + kColumns - 1) / kColumns * kColumns);
  const int y1 = std::min(height, (want.bottom() + 1) & ~1);
  if (x1 <= x0 || y1 <= y0) return whole;
  return Rect{x0, y0, x1 - x0, y1 - y0};
}

ClipDecoder::~ClipDecoder() {
  sws_freeContext(sws_);
  sws_freeContext(sws_rect_);
}

Status ClipDecoder::Decode(VideoFile* file, const VideoIndex& index,
                           const std::vector<int64_t>& targets, int codec_threads,
                           const Rect& want, FrameSink sink, void* ctx, DecodeStats* stats) {
  if (targets.empty()) return Status::OK();
  const std::string& path = file->path();
  int64_t t = NowNs();
  // Adds the time since the last lap to `*to`.
  auto lap = [&t](int64_t* to) {
    const int64_t now = NowNs();
    *to += now - t;
    t = now;
  };
  std::unique_ptr<AVCodecContext, CodecDeleter> codec(avcodec_alloc_context3(file->codec()));
  std::unique_ptr<AVFrame, FrameDeleter> frame(av_frame_alloc());
  std::unique_ptr<AVPacket, PacketDeleter> pkt(av_packet_alloc());
  if (!codec || !frame || !pkt) return ResourceExhaustedError("FFmpeg: out of memory");
  int err = avcodec_parameters_to_context(codec.get(), file->stream()->codecpar);
  if (err < 0) return DataLossError(path + ": bad codec parameters (" + AvErrorString(err) + ")");
  codec->thread_count = codec_threads;
  codec->thread_type = codec_threads > 1 ? (FF_THREAD_FRAME | FF_THREAD_SLICE) : 0;
  codec->pkt_timebase = file->stream()->time_base;
  err = avcodec_open2(codec.get(), file->codec(), nullptr);
  lap(&stats->decode_ns);
  if (err < 0) return UnimplementedError(path + ": cannot open the decoder (" + AvErrorString(err) + ")");

  // The seek plan: the last keyframe at or before the first wanted frame.
  const size_t key = PlanSeek(index, targets.front());
  auto seek_to = [&](int64_t ts) -> Status {
    ++stats->seeks;
    const int e = av_seek_frame(file->format(), file->stream_index(), ts, AVSEEK_FLAG_BACKWARD);
    if (e < 0) return DataLossError(path + ": seek to pts " + std::to_string(ts) + " failed (" + AvErrorString(e) + ")");
    avcodec_flush_buffers(codec.get());
    lap(&stats->seek_ns);
    return Status::OK();
  };
  if (key > 0) STOKER_RETURN_IF_ERROR(seek_to(index.keyframes[key]));
  bool restarted = key == 0;

  const int w = index.width, h = index.height;
  // Frames to convert (targets repeat a frame for a short video).
  int64_t distinct = 0;
  for (size_t i = 0; i < targets.size(); ++i) distinct += i == 0 || targets[i] != targets[i - 1];
  size_t next = 0;             // the next target to deliver
  bool first_frame = true;
  bool draining = false;
  auto take_frames = [&]() -> Status {
    for (;;) {
      const int e = avcodec_receive_frame(codec.get(), frame.get());
      lap(&stats->decode_ns);
      if (e == AVERROR(EAGAIN) || e == AVERROR_EOF) return Status::OK();
      if (e < 0) return DataLossError(path + ": decoding failed (" + AvErrorString(e) + ")");
      ++stats->frames_decoded;
      if (frame->key_frame) ++stats->gops_decoded;
      const int64_t p = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
      if (first_frame) {
        first_frame = false;
        if (p != AV_NOPTS_VALUE && p > targets[next] && !restarted) {
          // The demuxer's seek landed past the keyframe: start over once.
          av_frame_unref(frame.get());
          restarted = true;
          first_frame = true;
          STOKER_RETURN_IF_ERROR(seek_to(index.keyframes.front()));
          return Status::OK();
        }
      }
      if (p == AV_NOPTS_VALUE || p < targets[next]) {
        av_frame_unref(frame.get());
        continue;
      }
      if (p > targets[next]) {
        av_frame_unref(frame.get());
        return DataLossError(path + ": the frame at pts " + std::to_string(targets[next]) +
                             " was not decoded (the next one is at " + std::to_string(p) + ")");
      }
      if (frame->width != w || frame->height != h) {
        const std::string got = std::to_string(frame->width) + "x" + std::to_string(frame->height);
        av_frame_unref(frame.get());
        return DataLossError(path + ": a frame of " + got + " in a stream of " +
                             std::to_string(w) + "x" + std::to_string(h));
      }
      // Only the rectangle the sink reads (4:2:0: the same pixels as converting
      // the whole frame and cropping; ConvertRect).
      // A rectangle needs a context of its size (set up again for each clip,
      // about one frame's conversion): kept only when it saves more than that.
      Rect r = ConvertRect(want, w, h, frame->format);
      const int64_t whole_area = static_cast<int64_t>(w) * h;
      if ((whole_area - static_cast<int64_t>(r.width) * r.height) * distinct < whole_area) {
        r = Rect{0, 0, w, h};
      }
      SwsContext*& sws = r.width < w || r.height < h ? sws_rect_ : sws_;
      sws = sws_getCachedContext(sws, r.width, r.height,
                                 static_cast<AVPixelFormat>(frame->format), r.width, r.height,
                                 AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
      if (sws == nullptr) {
        av_frame_unref(frame.get());
        return UnimplementedError(path + ": cannot convert pixel format " +
                                  std::to_string(frame->format) + " to RGB");
      }
      const ptrdiff_t stride = static_cast<ptrdiff_t>(r.width) * 3;
      rgb_.resize(static_cast<size_t>(stride) * r.height + 16);
      uint8_t* dst[4] = {rgb_.data(), nullptr, nullptr, nullptr};
      int dst_stride[4] = {static_cast<int>(stride), 0, 0, 0};
      const uint8_t* src[4] = {frame->data[0], frame->data[1], frame->data[2], frame->data[3]};
      if (r.x != 0 || r.y != 0) {  // 4:2:0 only: chroma at half the offsets
        src[0] += static_cast<ptrdiff_t>(r.y) * frame->linesize[0] + r.x;
        src[1] += static_cast<ptrdiff_t>(r.y / 2) * frame->linesize[1] + r.x / 2;
        src[2] += static_cast<ptrdiff_t>(r.y / 2) * frame->linesize[2] + r.x / 2;
      }
      sws_scale(sws, src, frame->linesize, 0, r.height, dst, dst_stride);
      av_frame_unref(frame.get());
      ++stats->frames_converted;
      lap(&stats->convert_ns);
      while (next < targets.size() && targets[next] == p) {
        STOKER_RETURN_IF_ERROR(sink(ctx, static_cast<int>(next), rgb_.data(), w, h, r, stride));
        ++next;
        ++stats->frames_delivered;
      }
      lap(&stats->sink_ns);
      if (next == targets.size()) return Status::OK();
    }
  };
  while (next < targets.size()) {
    if (draining) break;
    err = av_read_frame(file->format(), pkt.get());
    lap(&stats->demux_ns);
    if (err == AVERROR_EOF) {
      draining = true;
      avcodec_send_packet(codec.get(), nullptr);  // flush: the delayed frames
    } else if (err < 0) {
      return DataLossError(path + ": reading failed (" + AvErrorString(err) + ")");
    } else {
      if (pkt->stream_index != file->stream_index()) {
        av_packet_unref(pkt.get());
        continue;
      }
      // A frame no other frame references (a non-reference B-frame) is not decoded
      // unless the clip wants it: fewer frames decoded, the same pixels for the others.
      const int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      codec->skip_frame = std::binary_search(targets.begin(), targets.end(), ts)
                              ? AVDISCARD_DEFAULT
                              : AVDISCARD_NONREF;
      err = avcodec_send_packet(codec.get(), pkt.get());
      av_packet_unref(pkt.get());
      lap(&stats->decode_ns);
      if (err < 0 && err != AVERROR(EAGAIN)) {
        return DataLossError(path + ": the decoder refused a packet (" + AvErrorString(err) + ")");
      }
    }
    STOKER_RETURN_IF_ERROR(take_frames());
  }
  if (next < targets.size()) {
    return DataLossError(path + ": the video ends before the frame at pts " +
                         std::to_string(targets[next]) + " (truncated?)");
  }
  return Status::OK();
}

}  // namespace stoker
