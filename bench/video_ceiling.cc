// Copyright 2026 The stoker Authors.
//
// video_ceiling: the decode ceiling for a list of clips (bench/video_bench.py,
// docs/performance.md): the frames each clip needs, decoded by FFmpeg alone
// (libavformat + libavcodec, no stoker code), with the seek plan stoker uses,
// on `--threads` threads. Per clip: open the file, open the decoder
// (`--codec-threads` threads; 1: no FFmpeg threading), seek backward to the
// keyframe at or before the clip's first frame, decode forward until the
// clip's last frame comes out, skipping the non-reference frames the clip
// does not want (as stoker does). No conversion to RGB, no resize, no copy:
// what stoker adds on top of this is what the ratio stoker / ceiling shows.
//
//   video_ceiling --plan PLAN --threads N [--codec-threads C] [--no-skip] [--no-probe]
//                 [--reuse]
//
// --no-probe: no avformat_find_stream_info; --reuse: one decoder per thread, flushed
// between clips of streams with the same codec, size and extradata (experiments).
//
// PLAN: one clip per line: "<path>\t<pts> <pts> ..." (the clip's frames'
// presentation timestamps, ascending; VideoClips.frames_of gives them).
// Prints one JSON line: clips, seconds, clips_per_s, frames_decoded, errors.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

namespace {

struct Clip {
  std::string path;
  std::vector<int64_t> pts;
};

// --reuse: a thread's decoder, kept while the next clip's stream has the same
// codec, size and extradata (flushed between clips).
struct KeptDecoder {
  AVCodecContext* codec = nullptr;
  std::string key;
};

std::string StreamKey(const AVCodecParameters* p) {
  std::string k = std::to_string(p->codec_id) + "/" + std::to_string(p->width) + "x" +
                  std::to_string(p->height) + "/";
  if (p->extradata != nullptr) k.append(reinterpret_cast<const char*>(p->extradata), p->extradata_size);
  return k;
}

// Decodes one clip; returns the frames decoded, or -1 on an error.
int64_t DecodeClip(const Clip& clip, int codec_threads, bool skip_nonref, bool probe,
                   KeptDecoder* kept) {
  AVFormatContext* fmt = nullptr;
  if (avformat_open_input(&fmt, clip.path.c_str(), nullptr, nullptr) < 0) return -1;
  int64_t decoded = -1;
  AVCodecContext* codec = nullptr;
  bool reused = false;
  AVPacket* pkt = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  do {
    if (probe && avformat_find_stream_info(fmt, nullptr) < 0) break;
    const AVCodec* dec = nullptr;
    const int si = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &dec, 0);
    if (si < 0 || dec == nullptr) break;
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
      if (static_cast<int>(i) != si) fmt->streams[i]->discard = AVDISCARD_ALL;
    }
    const std::string key = kept != nullptr ? StreamKey(fmt->streams[si]->codecpar) : "";
    if (kept != nullptr && kept->codec != nullptr && kept->key == key) {
      codec = kept->codec;
      avcodec_flush_buffers(codec);
      reused = true;
    } else {
      if (kept != nullptr) avcodec_free_context(&kept->codec);
      codec = avcodec_alloc_context3(dec);
      if (avcodec_parameters_to_context(codec, fmt->streams[si]->codecpar) < 0) break;
      codec->thread_count = codec_threads;
      codec->thread_type = codec_threads > 1 ? (FF_THREAD_FRAME | FF_THREAD_SLICE) : 0;
      codec->pkt_timebase = fmt->streams[si]->time_base;
      if (avcodec_open2(codec, dec, nullptr) < 0) break;
      if (kept != nullptr) {
        kept->codec = codec;
        kept->key = key;
        reused = true;  // kept: not freed below
      }
    }
    if (av_seek_frame(fmt, si, clip.pts.front(), AVSEEK_FLAG_BACKWARD) < 0) break;
    const int64_t last = clip.pts.back();
    int64_t n = 0;
    bool done = false, eof = false, failed = false;
    while (!done && !failed) {
      if (!eof) {
        const int e = av_read_frame(fmt, pkt);
        if (e == AVERROR_EOF) {
          eof = true;
          avcodec_send_packet(codec, nullptr);
        } else if (e < 0) {
          failed = true;
          break;
        } else if (pkt->stream_index != si) {
          av_packet_unref(pkt);
          continue;
        } else {
          const int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
          bool wanted = false;
          for (int64_t p : clip.pts) wanted = wanted || p == ts;
          codec->skip_frame = !skip_nonref || wanted ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
          avcodec_send_packet(codec, pkt);
          av_packet_unref(pkt);
        }
      }
      for (;;) {
        const int e = avcodec_receive_frame(codec, frame);
        if (e == AVERROR(EAGAIN)) break;
        if (e == AVERROR_EOF) {
          done = true;
          break;
        }
        if (e < 0) {
          failed = true;
          break;
        }
        ++n;
        const int64_t p = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
        av_frame_unref(frame);
        if (p >= last) {
          done = true;
          break;
        }
      }
      if (eof && !done) done = true;
    }
    if (!failed) decoded = n;
  } while (false);
  av_frame_free(&frame);
  av_packet_free(&pkt);
  if (!reused) avcodec_free_context(&codec);
  avformat_close_input(&fmt);
  return decoded;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plan_path;
  int threads = 1, codec_threads = 1;
  bool skip_nonref = true, probe = true, reuse = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--plan" && i + 1 < argc) {
      plan_path = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--codec-threads" && i + 1 < argc) {
      codec_threads = std::atoi(argv[++i]);
    } else if (a == "--no-skip") {
      skip_nonref = false;
    } else if (a == "--no-probe") {
      probe = false;
    } else if (a == "--reuse") {
      reuse = true;
    } else {
      std::fprintf(stderr,
                   "usage: video_ceiling --plan PLAN --threads N [--codec-threads C] [--no-skip]\n");
      return 2;
    }
  }
  if (plan_path.empty() || threads < 1 || codec_threads < 1) {
    std::fprintf(stderr, "video_ceiling: give --plan FILE, --threads >= 1, --codec-threads >= 1\n");
    return 2;
  }
  std::vector<Clip> clips;
  std::ifstream in(plan_path);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    Clip c;
    c.path = line.substr(0, tab);
    std::istringstream ps(line.substr(tab + 1));
    for (int64_t p; ps >> p;) c.pts.push_back(p);
    if (!c.pts.empty()) clips.push_back(std::move(c));
  }
  if (clips.empty()) {
    std::fprintf(stderr, "video_ceiling: no clips in %s\n", plan_path.c_str());
    return 2;
  }
  av_log_set_level(AV_LOG_FATAL);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> frames{0}, errors{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      KeptDecoder kept;
      for (size_t i; (i = next.fetch_add(1)) < clips.size();) {
        const int64_t n = DecodeClip(clips[i], codec_threads, skip_nonref, probe,
                                     reuse ? &kept : nullptr);
        if (n < 0) {
          errors.fetch_add(1);
        } else {
          frames.fetch_add(n);
        }
      }
      avcodec_free_context(&kept.codec);
    });
  }
  for (std::thread& t : pool) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"side\": \"ffmpeg_ceiling\", \"clips\": %zu, \"seconds\": %.4f, "
              "\"clips_per_s\": %.2f, \"frames_decoded\": %lld, \"errors\": %lld, "
              "\"threads\": %d, \"codec_threads\": %d, \"skip_nonref\": %s}\n",
              clips.size(), s, s > 0 ? clips.size() / s : 0.0,
              static_cast<long long>(frames.load()), static_cast<long long>(errors.load()),
              threads, codec_threads, skip_nonref ? "true" : "false");
  return errors.load() > 0 ? 1 : 0;
}
