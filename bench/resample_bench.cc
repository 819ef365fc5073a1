// Copyright 2026 The stoker Authors.
//
// The resampler's two passes on their own (docs/performance.md): ns per
// output pixel of the horizontal pass (Resampler::PushRows) and the vertical
// pass (Resampler::Finish), bilinear with fixed taps as the loader runs them,
// on generated noise (every tap's weight matters).
//
//   build/resample_bench [--iters N]
//
// Cases: 1280x960 -> 640x480 (5 taps each way), 1024x1024 and 1536x1024 and
// 2048x1024 crops of a 2048x1024 image -> 512x512 (5, 7 and 9 horizontal
// taps), 640x480 -> 800x600 (an upscale, 3 taps). Prints the median and the
// minimum over the iterations. Internal: it drives ops/resample.h directly, so
// the same file builds against any commit's library for a before/after.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/resample.h"

namespace {

void Sink(void* ctx, int, const uint8_t* rgb, int w) {
  *static_cast<uint64_t*>(ctx) += rgb[w * 3 / 2];
}

struct Case {
  const char* name;
  int iw, ih, cx, cy, cw, ch, ow, oh;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace stoker;
  int iters = 50;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else {
      std::printf("usage: resample_bench [--iters N]   (default 50)\n"
                  "  ns per output pixel of the resampler's horizontal and vertical passes\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  if (iters < 1) {
    std::fprintf(stderr, "--iters must be >= 1\n");
    return 2;
  }
  const Case cases[] = {
      {"1280x960 -> 640x480", 1280, 960, 0, 0, 1280, 960, 640, 480},
      {"2048x1024, crop 1024x1024 -> 512x512", 2048, 1024, 512, 0, 1024, 1024, 512, 512},
      {"2048x1024, crop 1536x1024 -> 512x512", 2048, 1024, 256, 0, 1536, 1024, 512, 512},
      {"2048x1024, crop 2048x1024 -> 512x512", 2048, 1024, 0, 0, 2048, 1024, 512, 512},
      {"640x480 -> 800x600", 640, 480, 0, 0, 640, 480, 800, 600},
  };
  uint64_t check = 0;
  for (const Case& c : cases) {
    RgbImage img;
    img.Resize(c.iw, c.ih);
    uint64_t s = 12345;
    for (int y = 0; y < c.ih; ++y) {
      for (int x = 0; x < c.iw * 3; ++x) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        img.row(y)[x] = static_cast<uint8_t>(s >> 56);
      }
    }
    AxisCoeffs h, v;
    ComputeAxisCoeffs(c.cx, c.cx + c.cw, c.cx, c.cx + c.cw, c.ow, 0, c.ow, false, &h, true);
    ComputeAxisCoeffs(c.cy, c.cy + c.ch, c.cy, c.cy + c.ch, c.oh, 0, c.oh, false, &v);
    Resampler r;
    std::vector<double> th, tv;
    for (int it = 0; it < iters; ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      r.Begin(h, v);
      r.PushRows(img.view(), 0, 0, true);
      const auto t1 = std::chrono::steady_clock::now();
      r.Finish(&Sink, &check);
      const auto t2 = std::chrono::steady_clock::now();
      th.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      tv.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count());
    }
    std::sort(th.begin(), th.end());
    std::sort(tv.begin(), tv.end());
    const double px = static_cast<double>(c.ow) * c.oh;
    std::printf("%-38s taps %d/%d  horizontal %.3f ns/px (min %.3f)  vertical %.3f ns/px "
                "(min %.3f)\n",
                c.name, h.taps, v.taps, th[th.size() / 2] / px, th[0] / px,
                tv[tv.size() / 2] / px, tv[0] / px);
  }
  std::fprintf(stderr, "checksum %llu\n", static_cast<unsigned long long>(check));
  return 0;
}
