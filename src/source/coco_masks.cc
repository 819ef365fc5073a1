// Copyright 2026 The stoker Authors.
#include "source/coco_masks.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace stoker {

StatusOr<std::vector<uint32_t>> DecodeRleString(std::string_view s) {
  std::vector<uint32_t> counts;
  size_t p = 0;
  while (p < s.size()) {
    int64_t x = 0;
    int k = 0;
    bool more = true;
    while (more) {
      if (p >= s.size()) {
        return InvalidArgumentError("compressed RLE string ends inside a count");
      }
      const int c = static_cast<unsigned char>(s[p]) - 48;
      if (c < 0 || c > 63) {
        return InvalidArgumentError(std::string("compressed RLE string has the character '") +
                                    s[p] + "' (expected '0'..'o')");
      }
      if (k >= 12) return InvalidArgumentError("compressed RLE string has a count too long");
      x |= static_cast<int64_t>(c & 0x1f) << (5 * k);
      more = (c & 0x20) != 0;
      ++p;
      ++k;
      if (!more && (c & 0x10)) x |= ~int64_t{0} << (5 * k);  // sign-extend
    }
    if (counts.size() > 2) x += counts[counts.size() - 2];
    if (x < 0 || x > UINT32_MAX) {
      return InvalidArgumentError("compressed RLE string decodes to the count " +
                                  std::to_string(x));
    }
    counts.push_back(static_cast<uint32_t>(x));
  }
  return counts;
}

std::vector<uint32_t> PolygonToRle(const std::vector<double>& xy, int h, int w) {
  const double scale = 5;
  const size_t k = xy.size() / 2;
  if (k == 0) return {static_cast<uint32_t>(h) * static_cast<uint32_t>(w)};
  // Upsampled vertices, the outline closed.
  std::vector<int> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = static_cast<int>(scale * xy[2 * j] + .5);
    y[j] = static_cast<int>(scale * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  // Every point along each edge, one per step of its longer axis.
  std::vector<int> u, v;
  for (size_t j = 0; j < k; ++j) {
    int xs = x[j], xe = x[j + 1], ys = y[j], ye = y[j + 1];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    const double s = dx >= dy ? static_cast<double>(ye - ys) / dx : static_cast<double>(xe - xs) / dy;
    if (dx >= dy) {
      for (int d = 0; d <= dx; ++d) {
        const int t = flip ? dx - d : d;
        u.push_back(t + xs);
        v.push_back(static_cast<int>(ys + s * t + .5));
      }
    } else {
      for (int d = 0; d <= dy; ++d) {
        const int t = flip ? dy - d : d;
        v.push_back(t + ys);
        u.push_back(static_cast<int>(xs + s * t + .5));
      }
    }
  }
  // Where the outline changes column: the run boundaries, downsampled.
  std::vector<uint32_t> a;
  for (size_t j = 1; j < u.size(); ++j) {
    if (u[j] == u[j - 1]) continue;
    double xd = u[j] < u[j - 1] ? u[j] : u[j] - 1;
    xd = (xd + .5) / scale - .5;
    if (std::floor(xd) != xd || xd < 0 || xd > w - 1) continue;
    double yd = v[j] < v[j - 1] ? v[j] : v[j - 1];
    yd = (yd + .5) / scale - .5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > h) {
      yd = h;
    }
    yd = std::ceil(yd);
    a.push_back(static_cast<uint32_t>(static_cast<int>(xd) * h + static_cast<int>(yd)));
  }
  a.push_back(static_cast<uint32_t>(h) * static_cast<uint32_t>(w));
  std::sort(a.begin(), a.end());
  uint32_t prev = 0;
  for (uint32_t& t : a) {
    const uint32_t cur = t;
    t -= prev;
    prev = cur;
  }
  // Zero-length runs merge their neighbours.
  std::vector<uint32_t> b;
  size_t j = 0;
  b.push_back(a[j++]);
  while (j < a.size()) {
    if (a[j] > 0) {
      b.push_back(a[j++]);
    } else {
      ++j;
      if (j < a.size()) b.back() += a[j++];
    }
  }
  return b;
}

namespace {

Status CheckSum(const std::vector<uint32_t>& counts, int h, int w) {
  uint64_t sum = 0;
  for (uint32_t c : counts) sum += c;
  const uint64_t want = static_cast<uint64_t>(h) * static_cast<uint64_t>(w);
  if (sum != want) {
    return InvalidArgumentError("RLE counts sum to " + std::to_string(sum) + ", not height " +
                                std::to_string(h) + " x width " + std::to_string(w) + " = " +
                                std::to_string(want));
  }
  return Status::OK();
}

template <typename T, typename Op>
int64_t ForEachRun(const std::vector<uint32_t>& counts, int h, int w, T* mask, Op op) {
  uint64_t pos = 0;
  int64_t set = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const uint64_t end = pos + counts[r];
    if (r % 2 == 1) {
      for (uint64_t p = pos; p < end; ++p) {
        const uint64_t col = p / static_cast<uint64_t>(h), row = p % static_cast<uint64_t>(h);
        op(&mask[row * static_cast<uint64_t>(w) + col]);
      }
      set += static_cast<int64_t>(counts[r]);
    }
    pos = end;
  }
  return set;
}

}  // namespace

template <typename T>
StatusOr<int64_t> PaintRle(const std::vector<uint32_t>& counts, int h, int w, T value, T* mask) {
  STOKER_RETURN_IF_ERROR(CheckSum(counts, h, w));
  return ForEachRun(counts, h, w, mask, [value](T* px) { *px = value; });
}

template StatusOr<int64_t> PaintRle<uint8_t>(const std::vector<uint32_t>&, int, int, uint8_t,
                                             uint8_t*);
template StatusOr<int64_t> PaintRle<uint16_t>(const std::vector<uint32_t>&, int, int, uint16_t,
                                              uint16_t*);

void RleExtent::Merge(const RleExtent& e) {
  if (e.empty()) return;
  if (empty()) {
    *this = e;
    return;
  }
  x0 = std::min(x0, e.x0);
  y0 = std::min(y0, e.y0);
  x1 = std::max(x1, e.x1);
  y1 = std::max(y1, e.y1);
}

RleExtent ExtentOfRle(const std::vector<uint32_t>& counts, int h) {
  RleExtent out;
  if (h <= 0) return out;
  const uint64_t hh = static_cast<uint64_t>(h);
  uint64_t pos = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const uint64_t end = pos + counts[r];
    if (r % 2 == 1 && end > pos) {
      const uint64_t first = pos, last = end - 1;  // column-major: col = p / h
      RleExtent e;
      e.x0 = static_cast<int>(first / hh);
      e.x1 = static_cast<int>(last / hh) + 1;
      e.y0 = e.x1 - e.x0 == 1 ? static_cast<int>(first % hh) : 0;
      e.y1 = e.x1 - e.x0 == 1 ? static_cast<int>(last % hh) + 1 : h;
      out.Merge(e);
    }
    pos = end;
  }
  return out;
}

Status RleToMask(const std::vector<uint32_t>& counts, int h, int w, uint8_t* mask) {
  STOKER_RETURN_IF_ERROR(CheckSum(counts, h, w));
  ForEachRun(counts, h, w, mask, [](uint8_t* px) { *px = 1; });
  return Status::OK();
}

}  // namespace stoker
