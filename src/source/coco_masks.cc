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

namespace {

// One edge of the upsampled outline as pycocotools walks it (coco_masks.h):
// after the swap that makes the walked axis increase, point t (0..n) is
// (xs + t, trunc(ys + s t + .5)) on a flat edge (dx >= dy) and
// (trunc(xs + s t + .5), ys + t) on a steep one. The walk emits the points
// from the edge's start vertex to its end: t = 0..n, or n..0 when flipped.
struct Edge {
  int64_t xs, ys, n;
  bool flat, flip;
  double s;

  Edge(int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
    const int64_t dx = x1 > x0 ? x1 - x0 : x0 - x1, dy = y1 > y0 ? y1 - y0 : y0 - y1;
    flat = dx >= dy;
    flip = (flat && x0 > x1) || (!flat && y0 > y1);
    if (flip) {
      std::swap(x0, x1);
      std::swap(y0, y1);
    }
    xs = x0;
    ys = y0;
    n = flat ? dx : dy;
    // A repeated vertex (n = 0) is one point; pycocotools divides 0 by 0
    // there, and that point's y cannot make a mark (its column is the
    // vertex's), so s = 0.
    s = n == 0 ? 0
               : static_cast<double>(flat ? y1 - y0 : x1 - x0) / static_cast<double>(n);
  }
  int64_t U(int64_t t) const {
    return flat ? xs + t : static_cast<int64_t>(static_cast<double>(xs) + s * t + .5);
  }
  int64_t V(int64_t t) const {
    return flat ? static_cast<int64_t>(static_cast<double>(ys) + s * t + .5) : ys + t;
  }
  int64_t First() const { return flip ? n : 0; }  // the t emitted first
  int64_t Last() const { return flip ? 0 : n; }
};

// The smallest t in [lo, hi] with pred(t), for pred false then true over
// the range and true at hi. The search gallops from `guess`, so a guess
// that is off by a step or two costs O(1).
template <typename Pred>
int64_t FirstTrue(int64_t lo, int64_t hi, int64_t guess, Pred pred) {
  guess = std::clamp(guess, lo, hi);
  int64_t a, b;  // every t < a is false, pred(b) is true
  if (pred(guess)) {
    b = guess;
    a = lo;
    for (int64_t step = 1; b > lo; step *= 2) {
      const int64_t next = std::max(lo, b - step);
      if (!pred(next)) {
        a = next + 1;
        break;
      }
      b = next;
    }
  } else {
    a = guess + 1;
    b = std::min(hi, a);
    for (int64_t step = 1; !pred(b); step *= 2) {
      a = b + 1;
      b = std::min(hi, b + step);
    }
  }
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (pred(m)) {
      b = m;
    } else {
      a = m + 1;
    }
  }
  return b;
}

}  // namespace

std::vector<uint32_t> PolygonToRle(const std::vector<double>& xy, int h, int w) {
  const uint64_t area = static_cast<uint64_t>(h) * static_cast<uint64_t>(w);
  const size_t k = xy.size() / 2;
  if (k == 0) return {static_cast<uint32_t>(area)};
  // Upsampled vertices, the outline closed (coordinates within
  // kMaxPolygonCoordinate keep them far inside int64).
  std::vector<int64_t> x(k + 1), y(k + 1);
  for (size_t j = 0; j < k; ++j) {
    x[j] = static_cast<int64_t>(5 * xy[2 * j] + .5);
    y[j] = static_cast<int64_t>(5 * xy[2 * j + 1] + .5);
  }
  x[k] = x[0];
  y[k] = y[0];
  // A mark (a run boundary) flips inside/outside from its position on: a
  // pixel is inside when an odd number of marks lie at or before it, which
  // is what sorting the marks and merging zero-length runs gives. Marks are
  // kept as positions while they are few; past area / 4 of them (an outline
  // that crosses the columns many times) a byte per position takes over, so
  // memory stays within the image's size.
  std::vector<uint32_t> marks;
  std::vector<uint8_t> dense;
  auto mark = [&](int64_t u0, int64_t v0, int64_t u1, int64_t v1) {  // the pair (prev, cur)
    if (u1 == u0) return;
    const int64_t xd = u1 < u0 ? u1 : u1 - 1;
    // (xd + .5) / 5 - .5 must be a whole column in [0, w - 1].
    if (xd < 2 || (xd - 2) % 5 != 0 || (xd - 2) / 5 > w - 1) return;
    double yd = static_cast<double>(std::min(v0, v1));
    yd = (yd + .5) / 5 - .5;
    yd = std::ceil(std::clamp(yd, 0.0, static_cast<double>(h)));
    const uint64_t pos = static_cast<uint64_t>((xd - 2) / 5) * static_cast<uint64_t>(h) +
                         static_cast<uint64_t>(yd);
    if (pos >= area) return;  // the end of the last column: no pixel follows
    if (!dense.empty()) {
      dense[pos] ^= 1;
      return;
    }
    marks.push_back(static_cast<uint32_t>(pos));
    if (marks.size() > area / 4 + 64) {
      dense.assign(area, 0);
      for (uint32_t m : marks) dense[m] ^= 1;
      marks.clear();
      marks.shrink_to_fit();
    }
  };
  // Only pairs of points whose upsampled column changes at xd = 2, 7, ...,
  // 5 (w - 1) + 2 make marks, so each edge is visited at those crossings
  // alone: the cost is, per edge, the pixel columns it crosses, not its
  // length.
  const int64_t last_xd = 5 * static_cast<int64_t>(w - 1) + 2;
  bool have_prev = false;
  int64_t pu = 0, pv = 0;  // the last point emitted
  for (size_t j = 0; j < k; ++j) {
    const Edge e(x[j], y[j], x[j + 1], y[j + 1]);
    if (have_prev) mark(pu, pv, e.U(e.First()), e.V(e.First()));
    // Inside an edge u is monotone in t and consecutive points differ by at
    // most 1 in it: the crossing c -> c + 1 happens at one t, found from the
    // line (exact after a step or two of FirstTrue).
    const int64_t u0 = e.U(0), un = e.U(e.n);
    const bool up = un >= u0;
    const int64_t lo = std::min(u0, un), hi = std::max(u0, un);
    int64_t c = std::max<int64_t>(lo, 2);
    c += ((2 - c) % 5 + 5) % 5;  // the first c >= max(lo, 2) with c = 2 (mod 5)
    for (; c + 1 <= hi && c <= last_xd; c += 5) {
      int64_t t;
      if (e.flat) {
        t = c + 1 - e.xs;  // u(t - 1) = c, u(t) = c + 1
      } else {
        const double guess = (static_cast<double>(c) + .5 - static_cast<double>(e.xs)) / e.s;
        const int64_t g =
            static_cast<int64_t>(std::clamp(guess, 0.0, static_cast<double>(e.n)));
        t = up ? FirstTrue(1, e.n, g, [&](int64_t q) { return e.U(q) >= c + 1; })
               : FirstTrue(1, e.n, g, [&](int64_t q) { return e.U(q) <= c; });
      }
      // Emitted order: t - 1 then t, or t then t - 1 when flipped.
      if (e.flip) {
        mark(e.U(t), e.V(t), e.U(t - 1), e.V(t - 1));
      } else {
        mark(e.U(t - 1), e.V(t - 1), e.U(t), e.V(t));
      }
    }
    pu = e.U(e.Last());
    pv = e.V(e.Last());
    have_prev = true;
  }
  // The runs, starting with (possibly no) zeros: a run can only be empty
  // there (a mark at position 0).
  std::vector<uint32_t> counts;
  uint64_t prev = 0;
  auto boundary = [&](uint64_t pos) {
    counts.push_back(static_cast<uint32_t>(pos - prev));
    prev = pos;
  };
  if (!dense.empty()) {
    for (uint64_t p = 0; p < area; ++p) {
      if (dense[p] != 0) boundary(p);
    }
  } else {
    std::sort(marks.begin(), marks.end());
    for (size_t i = 0; i < marks.size();) {
      size_t j = i;
      while (j < marks.size() && marks[j] == marks[i]) ++j;
      if ((j - i) % 2 == 1) boundary(marks[i]);
      i = j;
    }
  }
  boundary(area);
  return counts;
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
