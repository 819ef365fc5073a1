// Copyright 2026 The stoker Authors.
#include "source/npy.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "io/file.h"

namespace stoker {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr int kMaxDims = 32;                 // numpy's NPY_MAXDIMS
constexpr uint64_t kMaxBytes = uint64_t{1} << 62;

// A cursor over the header's dict literal. Every read is bounds-checked.
class DictParser {
 public:
  DictParser(const char* p, size_t n) : p_(p), end_(p + n) {}

  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return p_ == end_;
  }
  // A quoted string without escapes ('...' or "...").
  bool String(std::string* out) {
    SkipSpace();
    if (p_ >= end_ || (*p_ != '\'' && *p_ != '"')) return false;
    const char q = *p_++;
    const char* start = p_;
    while (p_ < end_ && *p_ != q) {
      if (*p_ == '\\') return false;
      ++p_;
    }
    if (p_ >= end_) return false;
    out->assign(start, p_);
    ++p_;
    return true;
  }
  bool Word(const char* w) {
    SkipSpace();
    const size_t n = std::strlen(w);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, w, n) != 0) return false;
    p_ += n;
    return true;
  }
  // A non-negative decimal integer (Python 2 files may end it with 'L').
  bool Int(int64_t* out) {
    SkipSpace();
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return false;
    uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      v = v * 10 + static_cast<uint64_t>(*p_ - '0');
      if (v > kMaxBytes) return false;
      ++p_;
    }
    if (p_ < end_ && *p_ == 'L') ++p_;
    *out = static_cast<int64_t>(v);
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

Status Bad(const std::string& why) { return InvalidArgumentError("invalid .npy header: " + why); }

Status ParseDescr(const std::string& d, NpyHeader* h) {
  if (d.size() < 3) return Bad("unsupported dtype '" + d + "'");
  h->byte_order = d[0] == '=' ? '<' : d[0];  // '=': native, little-endian here
  if (h->byte_order != '<' && h->byte_order != '>' && h->byte_order != '|') {
    return Bad("unsupported dtype '" + d + "'");
  }
  h->kind = d[1];
  if (h->kind != 'b' && h->kind != 'i' && h->kind != 'u' && h->kind != 'f') {
    return Bad("unsupported dtype '" + d + "' (numeric dtypes only)");
  }
  int size = 0;
  for (size_t i = 2; i < d.size(); ++i) {
    if (d[i] < '0' || d[i] > '9' || size > 100) return Bad("unsupported dtype '" + d + "'");
    size = size * 10 + (d[i] - '0');
  }
  const bool ok = h->kind == 'b' ? size == 1
                  : h->kind == 'f' ? (size == 2 || size == 4 || size == 8)
                                   : (size == 1 || size == 2 || size == 4 || size == 8);
  if (!ok) return Bad("unsupported dtype '" + d + "'");
  h->item_size = size;
  return Status::OK();
}

}  // namespace

Status ParseNpyHeader(const uint8_t* data, size_t size, NpyHeader* h) {
  *h = NpyHeader{};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0) return Bad("not a .npy file (no magic)");
  const int major = data[6];
  size_t len = 0, prefix = 0;
  if (major == 1) {
    len = data[8] | (size_t{data[9]} << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return Bad("truncated");
    len = data[8] | (size_t{data[9]} << 8) | (size_t{data[10]} << 16) | (size_t{data[11]} << 24);
    prefix = 12;
  } else {
    return Bad("unsupported format version " + std::to_string(major));
  }
  if (len > size - prefix) return Bad("header length " + std::to_string(len) + " past the end");
  const char* text = reinterpret_cast<const char*>(data + prefix);
  if (len == 0 || text[len - 1] != '\n') return Bad("header does not end with a newline");

  DictParser p(text, len);
  if (!p.Eat('{')) return Bad("header is not a dict");
  bool has_descr = false, has_order = false, has_shape = false;
  while (!p.Eat('}')) {
    std::string key;
    if (!p.String(&key) || !p.Eat(':')) return Bad("expected 'key': value");
    if (key == "descr" && !has_descr) {
      std::string d;
      if (!p.String(&d)) return Bad("descr is not a simple dtype string");
      STOKER_RETURN_IF_ERROR(ParseDescr(d, h));
      has_descr = true;
    } else if (key == "fortran_order" && !has_order) {
      if (p.Word("True")) h->fortran_order = true;
      else if (p.Word("False")) h->fortran_order = false;
      else return Bad("fortran_order is not True or False");
      has_order = true;
    } else if (key == "shape" && !has_shape) {
      if (!p.Eat('(')) return Bad("shape is not a tuple");
      while (!p.Eat(')')) {
        int64_t v;
        if (!p.Int(&v)) return Bad("shape holds something other than non-negative integers");
        if (h->shape.size() == kMaxDims) return Bad("more than 32 dimensions");
        h->shape.push_back(v);
        if (!p.Eat(',')) {
          if (!p.Eat(')')) return Bad("shape tuple not closed");
          break;
        }
      }
      has_shape = true;
    } else {
      return Bad("unexpected or repeated key '" + key + "'");
    }
    if (!p.Eat(',')) {
      if (!p.Eat('}')) return Bad("dict not closed");
      break;
    }
  }
  if (!p.AtEnd()) return Bad("text after the dict");
  if (!has_descr || !has_order || !has_shape) {
    return Bad("missing key (needs descr, fortran_order and shape)");
  }
  uint64_t bytes = static_cast<uint64_t>(h->item_size);
  for (int64_t d : h->shape) {
    if (d != 0 && bytes > kMaxBytes / static_cast<uint64_t>(d)) return Bad("array too large");
    bytes *= static_cast<uint64_t>(d);
  }
  h->data_offset = prefix + len;
  h->data_bytes = bytes;
  if (bytes > size - h->data_offset) {
    return Bad("the shape needs " + std::to_string(bytes) + " data bytes, the file has " +
               std::to_string(size - h->data_offset) + " (truncated?)");
  }
  return Status::OK();
}

namespace {

uint64_t LoadUnsigned(const uint8_t* p, int n, bool big_endian) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    const int k = big_endian ? i : n - 1 - i;
    v = (v << 8) | p[k];
  }
  return v;
}

}  // namespace

Status ParseNpyLabels(const uint8_t* data, size_t size, std::vector<int64_t>* out) {
  NpyHeader h;
  STOKER_RETURN_IF_ERROR(ParseNpyHeader(data, size, &h));
  if (h.shape.size() != 1) {
    return InvalidArgumentError("labels must be a 1-D array, got " +
                                std::to_string(h.shape.size()) + " dimensions");
  }
  if (h.kind == 'f' && h.item_size == 2) {
    return InvalidArgumentError("labels must be integers, bools, float32 or float64, got "
                                "float16");
  }
  const int64_t count = h.shape[0];
  const bool big = h.byte_order == '>';
  out->assign(static_cast<size_t>(count), 0);
  const uint8_t* p = data + h.data_offset;
  for (int64_t i = 0; i < count; ++i, p += h.item_size) {
    const uint64_t raw = LoadUnsigned(p, h.item_size, big);
    int64_t v = 0;
    switch (h.kind) {
      case 'b':
        v = raw != 0;
        break;
      case 'u':
        if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return InvalidArgumentError("label " + std::to_string(i) + " (" +
                                      std::to_string(raw) + ") does not fit in int64");
        }
        v = static_cast<int64_t>(raw);
        break;
      case 'i': {
        const int bits = h.item_size * 8;
        v = bits == 64 ? static_cast<int64_t>(raw)
                       : static_cast<int64_t>(raw << (64 - bits)) >> (64 - bits);
        break;
      }
      case 'f': {
        double d;
        if (h.item_size == 4) {
          float f;
          const uint32_t r32 = static_cast<uint32_t>(raw);
          std::memcpy(&f, &r32, 4);
          d = f;
        } else {
          std::memcpy(&d, &raw, 8);
        }
        if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) {
          return InvalidArgumentError("label " + std::to_string(i) + " is not an integral value");
        }
        v = static_cast<int64_t>(d);
        break;
      }
    }
    (*out)[static_cast<size_t>(i)] = v;
  }
  return Status::OK();
}

StatusOr<std::vector<int64_t>> ReadNpyLabels(const std::string& path) {
  std::vector<uint8_t> bytes;
  size_t n = 0;
  STOKER_RETURN_IF_ERROR(ReadFileInto(path, &bytes, &n));
  std::vector<int64_t> out;
  Status s = ParseNpyLabels(bytes.data(), n, &out);
  if (!s.ok()) return Status(s.code(), path + ": " + s.message());
  return out;
}

StatusOr<std::shared_ptr<NpySource>> NpySource::Open(const std::string& images_path,
                                                     const std::string& labels_path,
                                                     const std::string& layout) {
  if (!layout.empty() && layout != "NHWC" && layout != "NCHW") {
    return InvalidArgumentError("layout must be \"NHWC\", \"NCHW\" or empty, got \"" + layout +
                                "\"");
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(images_path));
  NpyHeader h;
  Status s = ParseNpyHeader(file->data(), file->size(), &h);
  if (!s.ok()) return InvalidArgumentError(images_path + ": " + s.message());
  auto fail = [&](const std::string& why) {
    return InvalidArgumentError(images_path + ": " + why);
  };
  if (h.kind != 'u' || h.item_size != 1) return fail("images must be uint8");
  if (h.fortran_order) {
    // InvalidArgument like every other header problem (ValueError in Python).
    return fail("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  }
  if (h.shape.size() != 4) {
    return fail("images must be 4-D [N, H, W, C] or [N, C, H, W], got " +
                std::to_string(h.shape.size()) + " dimensions");
  }
  auto is_c = [](int64_t c) { return c == 1 || c == 3; };
  bool nchw;
  if (layout == "NHWC") nchw = false;
  else if (layout == "NCHW") nchw = true;
  else if (is_c(h.shape[3])) nchw = false;
  else if (is_c(h.shape[1])) nchw = true;
  else return fail("no channel dimension of 1 or 3 (last or second) in the shape");
  const int64_t c = nchw ? h.shape[1] : h.shape[3];
  const int64_t hh = nchw ? h.shape[2] : h.shape[1];
  const int64_t ww = nchw ? h.shape[3] : h.shape[2];
  if (!is_c(c)) return fail("the channel dimension must be 1 or 3, got " + std::to_string(c));
  constexpr int64_t kMaxSide = 1 << 20;
  if (hh < 1 || ww < 1 || hh > kMaxSide || ww > kMaxSide) {
    return fail("image sides must be in [1, 2^20], got " + std::to_string(hh) + "x" +
                std::to_string(ww));
  }
  std::shared_ptr<NpySourceImpl> src(new NpySourceImpl());
  src->n_ = h.shape[0];
  src->height_ = static_cast<int>(hh);
  src->width_ = static_cast<int>(ww);
  src->channels_ = static_cast<int>(c);
  src->nchw_ = nchw;
  src->sample_bytes_ = static_cast<size_t>(hh * ww * c);
  src->pixels_ = file->data() + h.data_offset;
  src->images_ = std::move(file);
  if (!labels_path.empty()) {
    STOKER_ASSIGN_OR_RETURN(src->labels_, ReadNpyLabels(labels_path));
    if (static_cast<int64_t>(src->labels_.size()) != src->n_) {
      return InvalidArgumentError(labels_path + ": " + std::to_string(src->labels_.size()) +
                                  " labels for " + std::to_string(src->n_) + " images in " +
                                  images_path);
    }
    src->labels_path_ = labels_path;
  }
  return std::shared_ptr<NpySource>(std::move(src));
}

std::string NpySourceImpl::Describe() const {
  return "Npy(" + images_->path() + ", " + std::to_string(n_) + " images " +
         std::to_string(height_) + "x" + std::to_string(width_) + "x" +
         std::to_string(channels_) + (nchw_ ? " NCHW" : " NHWC") +
         (labels_.empty() ? ", no labels)" : ", labels " + labels_path_ + ")");
}

std::string NpySourceImpl::NameOf(int64_t index) const {
  return images_->path() + "[" + std::to_string(index) + "]";
}

Status NpySourceImpl::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= n_) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  const uint8_t* src = pixels_ + static_cast<size_t>(index) * sample_bytes_;
  // A file truncated since it was mapped would raise SIGBUS on these pages.
  STOKER_RETURN_IF_ERROR(images_->CheckRange(static_cast<size_t>(src - images_->data()),
                                             sample_bytes_));
  out->id = index;
  out->label = labels_.empty() ? -1 : labels_[static_cast<size_t>(index)];
  out->bytes = nullptr;
  out->size = sample_bytes_;
  out->pixel_width = width_;
  out->pixel_height = height_;
  out->pixel_stride = static_cast<ptrdiff_t>(width_) * 3;
  if (zero_copy()) {
    out->pixels = src;
    return Status::OK();
  }
  // Planar or grey: interleave into the worker's scratch.
  const size_t plane = static_cast<size_t>(width_) * height_;
  if (scratch->bytes.size() < plane * 3) scratch->bytes.resize(plane * 3);
  uint8_t* dst = scratch->bytes.data();
  if (channels_ == 1) {
    for (size_t i = 0; i < plane; ++i) dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
  } else {
    const uint8_t* r = src;
    const uint8_t* g = src + plane;
    const uint8_t* b = src + 2 * plane;
    for (size_t i = 0; i < plane; ++i) {
      dst[3 * i] = r[i];
      dst[3 * i + 1] = g[i];
      dst[3 * i + 2] = b[i];
    }
  }
  out->pixels = dst;
  return Status::OK();
}

}  // namespace stoker
