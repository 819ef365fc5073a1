// Copyright 2026 The stoker Authors.
#include "ops/targets.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace stoker {

int TargetGeometry::out_width() const {
  return steps.empty() ? src_width : steps.back().out_width;
}

int TargetGeometry::out_height() const {
  return steps.empty() ? src_height : steps.back().out_height;
}

namespace {

PixelPlane PlaneOf(MaskImage* m) {
  return PixelPlane{m->pixels.data(), m->width, m->height,
                    static_cast<std::ptrdiff_t>(m->width) * m->bpp, m->bpp};
}

void Shape(MaskImage* m, int w, int h, int bpp) {
  m->width = w;
  m->height = h;
  m->bpp = bpp;
  const size_t need = static_cast<size_t>(w) * h * bpp;
  if (m->pixels.size() < need) m->pixels.resize(need);
}

inline const uint8_t* RowAt(const PixelPlane& p, int y) { return p.data + y * p.stride; }

// The crop `st.crop` of `src` into `dst`, its outside `fill` (constant) or
// folded as the image's padding is; the part inside copied row by row.
void CropMask(const GeometryStep& st, const PixelPlane& src, const uint8_t* fill,
              MaskImage* dst) {
  const Rect& c = st.crop;
  const int bpp = src.bpp;
  Shape(dst, c.width, c.height, bpp);
  std::vector<int> xs(static_cast<size_t>(c.width));
  for (int x = 0; x < c.width; ++x) {
    xs[x] = PaddedCoord(c.x + x, src.width, st.pad1[0], st.pad1[2], st.pad_mode);
  }
  // Columns [x0, x1) of the crop lie inside the source.
  const int x0 = std::clamp(-c.x, 0, c.width), x1 = std::clamp(src.width - c.x, x0, c.width);
  for (int y = 0; y < c.height; ++y) {
    const int sy = PaddedCoord(c.y + y, src.height, st.pad1[1], st.pad1[3], st.pad_mode);
    uint8_t* out = dst->pixels.data() + static_cast<size_t>(y) * c.width * bpp;
    const uint8_t* row = sy < 0 ? nullptr : RowAt(src, sy);
    for (int x = 0; x < c.width; ++x) {
      if (row != nullptr && x == x0 && x1 > x0) {
        std::memcpy(out + x * bpp, row + (c.x + x) * bpp, static_cast<size_t>(x1 - x0) * bpp);
        x = x1 - 1;
        continue;
      }
      const uint8_t* in = (row == nullptr || xs[x] < 0) ? fill : row + xs[x] * bpp;
      std::memcpy(out + x * bpp, in, bpp);
    }
  }
}

void FlipMask(bool horizontal, const PixelPlane& src, MaskImage* dst) {
  const int w = src.width, h = src.height, bpp = src.bpp;
  Shape(dst, w, h, bpp);
  for (int y = 0; y < h; ++y) {
    const uint8_t* in = RowAt(src, horizontal ? y : h - 1 - y);
    uint8_t* out = dst->pixels.data() + static_cast<size_t>(y) * w * bpp;
    if (!horizontal) {
      std::memcpy(out, in, static_cast<size_t>(w) * bpp);
      continue;
    }
    if (bpp == 1) {  // a byte per pixel (the usual label map): no call per pixel
      std::reverse_copy(in, in + w, out);
      continue;
    }
    for (int x = 0; x < w; ++x) std::memcpy(out + x * 2, in + (w - 1 - x) * 2, 2);
  }
}

void CopyPlane(const PixelPlane& src, MaskImage* dst) {
  Shape(dst, src.width, src.height, src.bpp);
  const size_t row = static_cast<size_t>(src.width) * src.bpp;
  for (int y = 0; y < src.height; ++y) {
    std::memcpy(dst->pixels.data() + y * row, RowAt(src, y), row);
  }
}

// An axis-aligned box, xyxy.
struct Box {
  double x1, y1, x2, y2;
};

void Clamp(Box* b, double w, double h) {
  b->x1 = std::clamp(b->x1, 0.0, w);
  b->x2 = std::clamp(b->x2, 0.0, w);
  b->y1 = std::clamp(b->y1, 0.0, h);
  b->y2 = std::clamp(b->y2, 0.0, h);
}

// One step on a box; `clamp`: as torchvision v2 clamps after crops and warps.
void StepBox(const GeometryStep& st, bool clamp, Box* b) {
  switch (st.kind) {
    case GeometryStep::kCrop:
      b->x1 -= st.crop.x;
      b->x2 -= st.crop.x;
      b->y1 -= st.crop.y;
      b->y2 -= st.crop.y;
      if (clamp) Clamp(b, st.out_width, st.out_height);
      return;
    case GeometryStep::kResize: {
      const double sx = static_cast<double>(st.out_width) / st.in_width;
      const double sy = static_cast<double>(st.out_height) / st.in_height;
      b->x1 *= sx;
      b->x2 *= sx;
      b->y1 *= sy;
      b->y2 *= sy;
      return;
    }
    case GeometryStep::kHFlip: {
      const double x1 = st.in_width - b->x2, x2 = st.in_width - b->x1;
      b->x1 = x1;
      b->x2 = x2;
      return;
    }
    case GeometryStep::kVFlip: {
      const double y1 = st.in_height - b->y2, y2 = st.in_height - b->y1;
      b->y1 = y1;
      b->y2 = y2;
      return;
    }
    case GeometryStep::kWarp: {
      if (st.warp.kind == WarpStep::kIdentity) return;
      const double xs[4] = {b->x1, b->x2, b->x2, b->x1};
      const double ys[4] = {b->y1, b->y1, b->y2, b->y2};
      Box e{INFINITY, INFINITY, -INFINITY, -INFINITY};
      for (int k = 0; k < 4; ++k) {
        double x = xs[k], y = ys[k];
        if (!WarpPoint(st.warp, st.in_width, st.in_height, &x, &y)) {
          *b = Box{0, 0, 0, 0};  // a singular map: nothing of the box is left
          return;
        }
        e.x1 = std::min(e.x1, x);
        e.y1 = std::min(e.y1, y);
        e.x2 = std::max(e.x2, x);
        e.y2 = std::max(e.y2, y);
      }
      *b = e;
      if (clamp) Clamp(b, st.out_width, st.out_height);
      return;
    }
  }
}

// torchvision v2's RandomIoUCrop test: the centre of `b` strictly inside `r`.
bool CentreInside(const Box& b, const Rect& r) {
  const double cx = 0.5 * (b.x1 + b.x2), cy = 0.5 * (b.y1 + b.y2);
  return r.x < cx && cx < r.right() && r.y < cy && cy < r.bottom();
}

Box FromFormat(BoxFormat f, const double* v) {
  switch (f) {
    case BoxFormat::kXYWH:
      return Box{v[0], v[1], v[0] + v[2], v[1] + v[3]};
    case BoxFormat::kCXCYWH:
      return Box{v[0] - v[2] / 2, v[1] - v[3] / 2, v[0] + v[2] / 2, v[1] + v[3] / 2};
    case BoxFormat::kXYXY:
      break;
  }
  return Box{v[0], v[1], v[2], v[3]};
}

}  // namespace

bool MaskRowsNeeded(const TargetGeometry& g, int* y0, int* y1) {
  if (g.steps.empty() || g.steps.front().kind != GeometryStep::kCrop) return false;
  const Rect& c = g.steps.front().crop;
  if (c.x < 0 || c.y < 0 || c.right() > g.src_width || c.bottom() > g.src_height ||
      c.height >= g.src_height) {
    return false;
  }
  *y0 = c.y;
  *y1 = c.bottom();
  return true;
}

Status TransformMaskView(const TargetGeometry& g, int64_t fill, const PixelPlane& src,
                         MaskImage* a, MaskImage* b, PixelPlane* result, int first_row,
                         int mask_height) {
  const int height = first_row >= 0 ? mask_height : src.height;
  if (src.width != g.src_width || height != g.src_height) {
    return InvalidArgumentError("mask is " + std::to_string(height) + "x" +
                                std::to_string(src.width) + " (HxW), its image " +
                                std::to_string(g.src_height) + "x" +
                                std::to_string(g.src_width));
  }
  int y0 = 0, y1 = 0;
  if (first_row >= 0 && (first_row > 0 || src.height < height) &&
      (!MaskRowsNeeded(g, &y0, &y1) || y0 < first_row || y1 > first_row + src.height)) {
    return InternalError("a band of mask rows that the first step does not fit in");
  }
  uint8_t fill_bytes[2];
  if (src.bpp == 2) {
    const uint16_t f16 = static_cast<uint16_t>(fill);
    std::memcpy(fill_bytes, &f16, 2);
  } else {
    fill_bytes[0] = static_cast<uint8_t>(fill);
  }
  MaskImage* bufs[2] = {a, b};
  PixelPlane cur = src;
  int in = -1;  // which buffer `cur` views (-1: src); a crop inside it is a view
  auto out = [&]() { return bufs[in == 0 ? 1 : 0]; };
  auto take = [&](MaskImage* m) {
    in = m == bufs[0] ? 0 : 1;
    cur = PlaneOf(m);
  };
  bool first = true;
  for (const GeometryStep& st : g.steps) {
    switch (st.kind) {
      case GeometryStep::kCrop: {
        Rect c = st.crop;
        if (first && first_row > 0) c.y -= first_row;  // the band's coordinates
        if (c.x >= 0 && c.y >= 0 && c.right() <= cur.width && c.bottom() <= cur.height) {
          cur.data += c.y * cur.stride + c.x * cur.bpp;
          cur.width = c.width;
          cur.height = c.height;
          break;
        }
        MaskImage* o = out();
        CropMask(st, cur, fill_bytes, o);
        take(o);
        break;
      }
      case GeometryStep::kResize: {
        MaskImage* o = out();
        Shape(o, st.out_width, st.out_height, cur.bpp);
        ResizeNearest(cur, PlaneOf(o));
        take(o);
        break;
      }
      case GeometryStep::kHFlip:
      case GeometryStep::kVFlip: {
        MaskImage* o = out();
        FlipMask(st.kind == GeometryStep::kHFlip, cur, o);
        take(o);
        break;
      }
      case GeometryStep::kWarp: {
        if (in < 0 || cur.data != bufs[in]->pixels.data() ||
            cur.stride != static_cast<std::ptrdiff_t>(cur.width) * cur.bpp) {
          MaskImage* o = out();  // a whole buffer of its own, written in place
          CopyPlane(cur, o);
          take(o);
        }
        MaskImage* scratch = out();
        Shape(scratch, cur.width, cur.height, cur.bpp);
        ApplyWarpStep(st.warp, kPilNearest, fill_bytes, cur, PlaneOf(scratch));
        break;
      }
    }
    first = false;
  }
  *result = cur;
  return Status::OK();
}

Status TransformMask(const TargetGeometry& g, int64_t fill, MaskImage* mask, MaskImage* scratch) {
  MaskImage other;
  PixelPlane result;
  STOKER_RETURN_IF_ERROR(TransformMaskView(g, fill, PlaneOf(mask), scratch, &other, &result));
  MaskImage done;
  CopyPlane(result, &done);
  *mask = std::move(done);
  return Status::OK();
}

Status TransformMaskPlanes(const TargetGeometry& g, int64_t fill, const uint8_t* planes, int n,
                           int width, int height, int bpp, const uint8_t* keep, MaskImage* a,
                           MaskImage* b, uint8_t* out) {
  const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(width) * bpp;
  const size_t plane_bytes = static_cast<size_t>(stride) * height;
  for (int i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    const PixelPlane src{const_cast<uint8_t*>(planes) + plane_bytes * i, width, height, stride,
                         bpp};
    PixelPlane res;
    STOKER_RETURN_IF_ERROR(TransformMaskView(g, fill, src, a, b, &res));
    const size_t row = static_cast<size_t>(res.width) * bpp;
    for (int y = 0; y < res.height; ++y) {
      std::memcpy(out, res.data + y * res.stride, row);
      out += row;
    }
  }
  return Status::OK();
}

void TransformBoxes(const TargetGeometry& g, BoxFormat format, const double* in, int n,
                    const BoxRules& rules, std::vector<float>* out, std::vector<uint8_t>* keep) {
  out->clear();
  keep->assign(static_cast<size_t>(n), 0);
  const double w = g.out_width(), h = g.out_height();
  for (int i = 0; i < n; ++i) {
    Box c = FromFormat(format, in + 4 * i);
    Box u = c;  // never clamped: the area the box would have
    bool dropped = false;
    for (const GeometryStep& st : g.steps) {
      dropped |= st.drop_outside_centres && !CentreInside(c, st.crop);
      StepBox(st, /*clamp=*/true, &c);
      StepBox(st, /*clamp=*/false, &u);
    }
    Clamp(&c, w, h);
    const double cw = c.x2 - c.x1, ch = c.y2 - c.y1;
    bool ok = !dropped && cw > 0 && ch > 0 && cw >= rules.min_size && ch >= rules.min_size;
    if (ok && rules.min_area_fraction > 0) {
      const double full = (u.x2 - u.x1) * (u.y2 - u.y1);
      ok = full > 0 && cw * ch >= rules.min_area_fraction * full;
    }
    if (!ok) continue;
    (*keep)[static_cast<size_t>(i)] = 1;
    out->push_back(static_cast<float>(c.x1));
    out->push_back(static_cast<float>(c.y1));
    out->push_back(static_cast<float>(c.x2));
    out->push_back(static_cast<float>(c.y2));
  }
}

void BoxesToXyxy(BoxFormat format, const double* in, int n, std::vector<double>* out) {
  out->clear();
  for (int i = 0; i < n; ++i) {
    const Box b = FromFormat(format, in + 4 * i);
    out->insert(out->end(), {b.x1, b.y1, b.x2, b.y2});
  }
}

void BoxesAfterSteps(const std::vector<GeometryStep>& steps, const std::vector<double>& xyxy,
                     std::vector<double>* out) {
  out->clear();
  for (size_t i = 0; i + 4 <= xyxy.size(); i += 4) {
    Box c{xyxy[i], xyxy[i + 1], xyxy[i + 2], xyxy[i + 3]};
    bool dropped = false;
    for (const GeometryStep& st : steps) {
      dropped |= st.drop_outside_centres && !CentreInside(c, st.crop);
      StepBox(st, /*clamp=*/true, &c);
    }
    if (dropped) continue;
    out->insert(out->end(), {c.x1, c.y1, c.x2, c.y2});
  }
}

void TransformKeypoints(const TargetGeometry& g, const double* in, int k, int cols,
                        std::vector<float>* out) {
  out->resize(static_cast<size_t>(k) * 3);
  const double w = g.out_width(), h = g.out_height();
  for (int i = 0; i < k; ++i) {
    double x = in[i * cols], y = in[i * cols + 1];
    double vis = cols >= 3 ? in[i * cols + 2] : 1.0;
    for (const GeometryStep& st : g.steps) {
      switch (st.kind) {
        case GeometryStep::kCrop:
          x -= st.crop.x;
          y -= st.crop.y;
          if (!(x >= 0 && x <= st.out_width && y >= 0 && y <= st.out_height)) vis = 0;
          break;
        case GeometryStep::kResize:
          x *= static_cast<double>(st.out_width) / st.in_width;
          y *= static_cast<double>(st.out_height) / st.in_height;
          break;
        case GeometryStep::kHFlip:
          x = st.in_width - x;
          break;
        case GeometryStep::kVFlip:
          y = st.in_height - y;
          break;
        case GeometryStep::kWarp:
          if (!WarpPoint(st.warp, st.in_width, st.in_height, &x, &y)) vis = 0;
          if (!(x >= 0 && x <= st.out_width && y >= 0 && y <= st.out_height)) vis = 0;
          break;
      }
    }
    if (!(x >= 0 && x <= w && y >= 0 && y <= h)) vis = 0;
    (*out)[static_cast<size_t>(i) * 3] = static_cast<float>(x);
    (*out)[static_cast<size_t>(i) * 3 + 1] = static_cast<float>(y);
    (*out)[static_cast<size_t>(i) * 3 + 2] = static_cast<float>(vis);
  }
}

}  // namespace stoker
