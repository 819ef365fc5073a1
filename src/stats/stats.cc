// Copyright 2026 The stoker Authors.
#include "stats/stats.h"
#include "stats/hypothesis.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "base/json.h"
#include "base/process.h"
#include "codec/decoder.h"
#include "ops/geometry.h"
#include "ops/resample.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {
namespace {

using Json = nlohmann::ordered_json;

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  bool operator<(const Hash128& o) const { return std::tie(hi, lo) < std::tie(o.hi, o.lo); }
  bool operator==(const Hash128& o) const { return hi == o.hi && lo == o.lo; }
};

struct HashRecord {
  Hash128 hash;
  int64_t position = 0;
  std::string name;  // only for streams, whose names are not kept
};

struct ErrorRecord {
  int64_t position = 0;
  SampleError error;
};

// One worker's share; summed at the end (all sums are integers or counts,
// so the total does not depend on which worker saw which sample).
struct Partial {
  int64_t images = 0, unlabelled = 0, pixels = 0;
  std::map<int64_t, int64_t> labels;
  Histogram widths, heights, aspects;
  std::map<std::string, int64_t> formats, modes;
  unsigned __int128 sum[3] = {0, 0, 0}, sumsq[3] = {0, 0, 0};
  std::vector<HashRecord> hashes;
  std::vector<ErrorRecord> errors;
};

struct Worker {
  explicit Worker(const DecoderOptions& o) : decoder(o) {}
  ImageDecoder decoder;
  Resampler resampler;
  AxisCoeffs h, v;
  RgbImage resized;
  SampleScratch scratch;
};

uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t Be32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

std::string JpegMode(int ncomp, const int* hs, const int* vs, int adobe_transform) {
  if (ncomp == 1) return "JPEG grey";
  if (ncomp == 4) return adobe_transform == 2 ? "JPEG YCCK" : "JPEG CMYK";
  if (ncomp != 3) return "JPEG " + std::to_string(ncomp) + " components";
  if (adobe_transform == 0) return "JPEG RGB";
  if (hs[1] != hs[2] || vs[1] != vs[2] || hs[0] % hs[1] || vs[0] % vs[1]) return "JPEG YCbCr other";
  const int h = hs[0] / hs[1], v = vs[0] / vs[1];
  if (h == 1 && v == 1) return "JPEG 4:4:4";
  if (h == 2 && v == 2) return "JPEG 4:2:0";
  if (h == 2 && v == 1) return "JPEG 4:2:2";
  if (h == 1 && v == 2) return "JPEG 4:4:0";
  if (h == 4 && v == 1) return "JPEG 4:1:1";
  return "JPEG YCbCr other";
}

bool InspectJpeg(const uint8_t* d, size_t n, std::string* mode) {
  size_t i = 2;
  int adobe = -1;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return false;
    const uint8_t m = d[i + 1];
    if (m == 0xFF) { ++i; continue; }  // fill byte
    if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) { i += 2; continue; }
    if (m == 0xD9 || m == 0xDA) return false;  // no frame header before the scan
    const size_t len = Be16(d + i + 2);
    if (len < 2 || i + 2 + len > n) return false;
    const uint8_t* seg = d + i + 4;
    if (m == 0xEE && len >= 14 && std::equal(seg, seg + 5, "Adobe")) adobe = seg[11];
    const bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
    if (sof) {
      if (len < 8) return false;
      const int ncomp = seg[5];
      if (ncomp < 1 || len < 8 + 3 * static_cast<size_t>(ncomp)) return false;
      int hs[4] = {1, 1, 1, 1}, vs[4] = {1, 1, 1, 1};
      for (int c = 0; c < std::min(ncomp, 4); ++c) {
        hs[c] = std::max(1, seg[7 + 3 * c] >> 4);
        vs[c] = std::max(1, seg[7 + 3 * c] & 15);
      }
      // Adobe's transform may follow the frame header only in odd files;
      // look ahead for it among the next segments before the scan.
      for (size_t j = i + 2 + len; adobe < 0 && j + 4 <= n && d[j] == 0xFF;) {
        const uint8_t mj = d[j + 1];
        if (mj == 0xDA || mj == 0xD9) break;
        const size_t lj = Be16(d + j + 2);
        if (lj < 2 || j + 2 + lj > n) break;
        if (mj == 0xEE && lj >= 14 && std::equal(d + j + 4, d + j + 9, "Adobe")) adobe = d[j + 15];
        j += 2 + lj;
      }
      // 3 components named 'R', 'G', 'B' without Adobe's marker: RGB (libjpeg's rule).
      if (ncomp == 3 && adobe < 0 && seg[6] == 'R' && seg[9] == 'G' && seg[12] == 'B') adobe = 0;
      *mode = JpegMode(ncomp, hs, vs, adobe < 0 ? 1 : adobe);
      return true;
    }
    i += 2 + len;
  }
  return false;
}

bool InspectPng(const uint8_t* d, size_t n, std::string* mode) {
  if (n < 8 + 8 + 13 || Be32(d + 8) < 13 || !std::equal(d + 12, d + 16, "IHDR")) return false;
  const int depth = d[24], type = d[25];
  const char* name = nullptr;
  switch (type) {
    case 0: name = "grey"; break;
    case 2: name = "RGB"; break;
    case 3: name = "palette"; break;
    case 4: name = "grey+alpha"; break;
    case 6: name = "RGBA"; break;
    default: return false;
  }
  *mode = std::string("PNG ") + name + " " + std::to_string(depth) + "-bit";
  return true;
}

// The largest DCT denominator that keeps the shorter side >= resolution.
int ScaleDenom(int width, int height, int resolution) {
  if (resolution <= 0) return 1;
  const int shorter = std::min(width, height);
  for (int d : {8, 4, 2}) {
    if ((shorter + d - 1) / d >= resolution) return d;
  }
  return 1;
}

void Accumulate(const RgbView& v, Partial* p) {
  uint64_t s[3] = {0, 0, 0}, q[3] = {0, 0, 0};
  for (int y = 0; y < v.height; ++y) {
    const uint8_t* row = v.row(y);
    uint64_t rs[3] = {0, 0, 0};  // a row may be up to max_pixels wide
    uint64_t rq[3] = {0, 0, 0};
    for (int x = 0; x < v.width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const uint32_t b = row[3 * x + c];
        rs[c] += b;
        rq[c] += b * b;
      }
    }
    for (int c = 0; c < 3; ++c) s[c] += rs[c], q[c] += rq[c];
  }
  for (int c = 0; c < 3; ++c) p->sum[c] += s[c], p->sumsq[c] += q[c];
  p->pixels += static_cast<int64_t>(v.width) * v.height;
}

// Reads the statistics of one sample into `p`; an error names no sample
// (the caller adds the name).
Status Analyze(const SampleData& d, int resolution, bool want_hash, Worker* w, Partial* p,
               Hash128* hash) {
  RgbView view;
  int width, height;
  std::string format, mode;
  if (d.pixels != nullptr) {
    format = "raw";
    mode = "raw RGB";
    width = d.pixel_width;
    height = d.pixel_height;
    view = RgbView{d.pixels, width, height, d.pixel_stride};
    if (want_hash) {
      XXH3_state_t* st = XXH3_createState();
      XXH3_128bits_reset(st);
      const int32_t dims[2] = {width, height};
      XXH3_128bits_update(st, dims, sizeof dims);
      for (int y = 0; y < height; ++y) XXH3_128bits_update(st, view.row(y), size_t{3} * width);
      const XXH128_hash_t h = XXH3_128bits_digest(st);
      XXH3_freeState(st);
      *hash = {h.low64, h.high64};
    }
  } else {
    const bool inspected = InspectImage(d.bytes, d.size, &format, &mode);
    if (want_hash) {
      const XXH128_hash_t h = XXH3_128bits(d.bytes, d.size);
      *hash = {h.low64, h.high64};
    }
    ImageHeader header;
    STOKER_RETURN_IF_ERROR(w->decoder.Open(d.bytes, d.size, &header));
    if (!inspected) {
      // The decoder reads it but the header inspection does not know it (a
      // format added to the decoder later, or an odd header): counted by the
      // decoder's format alone.
      format = header.format == ImageFormat::kJpeg  ? "JPEG"
               : header.format == ImageFormat::kPng ? "PNG"
                                                    : "other";
      mode = format + " (mode unknown)";
    }
    width = header.width;
    height = header.height;
    DecodeRequest req;
    req.scale_denom = ScaleDenom(width, height, resolution);
    DecodedRegion region;
    STOKER_RETURN_IF_ERROR(w->decoder.Decode(req, &region));
    view = region.pixels;
  }
  if (width <= 0 || height <= 0) return DataLossError("empty image");
  if (resolution > 0 && std::min(width, height) > resolution) {
    int ow, oh;
    ShorterSideSize(width, height, resolution, &ow, &oh);
    ComputeAxisCoeffs(0, view.width, 0, view.width, ow, 0, ow, false, &w->h, /*fixed_taps=*/true);
    ComputeAxisCoeffs(0, view.height, 0, view.height, oh, 0, oh, false, &w->v);
    w->resampler.RunToImage(view, 0, 0, w->h, w->v, &w->resized);
    view = w->resized.view();
  }
  Accumulate(view, p);
  ++p->widths[width];
  ++p->heights[height];
  ++p->aspects[std::llround(1000.0 * width / height)];
  ++p->formats[format];
  ++p->modes[mode];
  ++p->images;
  if (d.label >= 0) {
    ++p->labels[d.label];
  } else {
    ++p->unlabelled;
  }
  return Status::OK();
}

template <typename Map>
void AddInto(const Map& from, Map* to) {
  for (const auto& [k, v] : from) (*to)[k] += v;
}

double Mean(unsigned __int128 sum, int64_t n) {
  return static_cast<double>(static_cast<long double>(sum) / (255.0L * n));
}

// Population std, from exact integers: sqrt(n * sumsq - sum^2) / (255 n).
double Std(unsigned __int128 sum, unsigned __int128 sumsq, int64_t n) {
  const unsigned __int128 nn = static_cast<unsigned __int128>(n);
  const unsigned __int128 a = nn * sumsq, b = sum * sum;
  const long double var = a > b ? static_cast<long double>(a - b) : 0.0L;
  return static_cast<double>(std::sqrt(var) / (255.0L * n));
}

}  // namespace

double DatasetStats::ImbalanceRatio() const {
  if (classes.empty()) return 0;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (const ClassStat& c : classes) lo = std::min(lo, c.count), hi = std::max(hi, c.count);
  if (lo == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(hi) / static_cast<double>(lo);
}

int64_t DatasetStats::RedundantCopies() const {
  int64_t n = 0;
  for (const auto& g : duplicates) n += static_cast<int64_t>(g.size()) - 1;
  return n;
}

bool InspectImage(const uint8_t* data, size_t size, std::string* format, std::string* mode) {
  if (data == nullptr) return false;
  switch (SniffImageFormat(data, size)) {
    case ImageFormat::kJpeg:
      if (!InspectJpeg(data, size, mode)) return false;
      *format = "JPEG";
      return true;
    case ImageFormat::kPng:
      if (!InspectPng(data, size, mode)) return false;
      *format = "PNG";
      return true;
    default:
      return false;
  }
}

StatusOr<DatasetStats> ComputeStats(Source* source, const StatsOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.resolution < 0) return InvalidArgumentError("resolution must be >= 0");
  if (source->schema().image() < 0) {
    return UnimplementedError("stats: " + source->Describe() +
                              " has no image field; statistics of other fields are not "
                              "computed yet");
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<EpochReader> reader, source->StartEpoch(EpochSpec{}));
  const int64_t n = reader->size();
  const bool keep_names = !reader->random_access();
  int threads = options.threads > 0 ? options.threads : AvailableCores();
  threads = std::max(1, threads);
  DecoderOptions dopt;
  dopt.max_pixels = options.max_pixels;

  std::vector<Partial> partials(static_cast<size_t>(threads));
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> ended{false};
  struct Running {
    explicit Running(int n) : threads(n) {}
    Mutex mu;
    CondVar cv;  // a worker finished
    int threads STOKER_GUARDED_BY(mu);  // still working
  } running(threads);

  auto work = [&](Partial* p) {
    Worker w(dopt);
    SampleData d;
    for (;;) {
      if (ended.load(std::memory_order_acquire)) break;
      const int64_t pos = next.fetch_add(1);
      if (n >= 0 && pos >= n) break;
      bool end = false;
      Status s = reader->Read(pos, &w.scratch, &d, &end);
      if (s.ok() && end) {
        ended.store(true, std::memory_order_release);
        break;
      }
      Hash128 hash;
      if (s.ok()) s = Analyze(d, options.resolution, options.duplicates, &w, p, &hash);
      if (s.ok() && options.duplicates) {
        p->hashes.push_back({hash, pos, keep_names ? reader->Name(pos) : std::string()});
      } else if (!s.ok()) {
        p->errors.push_back({pos, {reader->Name(pos), s.message()}});
      }
      done.fetch_add(1, std::memory_order_relaxed);
    }
    MutexLock lock(&running.mu);
    --running.threads;
    running.cv.SignalAll();
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, &partials[static_cast<size_t>(t)]);
  {
    MutexLock lock(&running.mu);
    while (running.threads > 0) {
      running.cv.WaitFor(&running.mu, std::chrono::milliseconds(100));
      if (options.progress) {
        lock.Unlock();
        options.progress(done.load(std::memory_order_relaxed), n);
        lock.Lock();
      }
    }
  }
  for (auto& t : pool) t.join();
  // The polls above can miss the end (the workers may finish between two of
  // them): the last call always reports every sample done.
  if (options.progress) options.progress(done.load(std::memory_order_relaxed), n);

  // Merge.
  Partial all;
  std::vector<HashRecord> hashes;
  std::vector<ErrorRecord> errors;
  for (Partial& p : partials) {
    all.images += p.images;
    all.unlabelled += p.unlabelled;
    all.pixels += p.pixels;
    AddInto(p.labels, &all.labels);
    AddInto(p.widths, &all.widths);
    AddInto(p.heights, &all.heights);
    AddInto(p.aspects, &all.aspects);
    AddInto(p.formats, &all.formats);
    AddInto(p.modes, &all.modes);
    for (int c = 0; c < 3; ++c) all.sum[c] += p.sum[c], all.sumsq[c] += p.sumsq[c];
    for (HashRecord& h : p.hashes) hashes.push_back(std::move(h));
    for (ErrorRecord& e : p.errors) errors.push_back(std::move(e));
  }
  DatasetStats r;
  r.source = source->Describe();
  r.resolution = options.resolution;
  r.duplicates_checked = options.duplicates;
  r.images = all.images;
  r.samples = all.images + static_cast<int64_t>(errors.size());
  r.unlabelled = all.unlabelled;
  r.widths = std::move(all.widths);
  r.heights = std::move(all.heights);
  r.aspects = std::move(all.aspects);
  r.formats = std::move(all.formats);
  r.modes = std::move(all.modes);
  r.pixels = all.pixels;
  if (all.pixels > 0) {
    for (int c = 0; c < 3; ++c) {
      r.mean[static_cast<size_t>(c)] = Mean(all.sum[c], all.pixels);
      r.stddev[static_cast<size_t>(c)] = Std(all.sum[c], all.sumsq[c], all.pixels);
    }
  }
  const std::vector<std::string> names = source->classes();
  int64_t max_label = static_cast<int64_t>(names.size()) - 1;
  if (!all.labels.empty()) max_label = std::max(max_label, all.labels.rbegin()->first);
  for (int64_t l = 0; l <= max_label; ++l) {
    auto it = all.labels.find(l);
    const int64_t count = it == all.labels.end() ? 0 : it->second;
    // Unnamed labels the source never produced are not classes.
    if (count == 0 && l >= static_cast<int64_t>(names.size())) continue;
    r.classes.push_back({l, l < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(l)]
                                                                   : std::to_string(l),
                         count});
  }
  std::sort(errors.begin(), errors.end(),
            [](const ErrorRecord& a, const ErrorRecord& b) { return a.position < b.position; });
  for (ErrorRecord& e : errors) r.errors.push_back(std::move(e.error));
  std::sort(hashes.begin(), hashes.end(), [](const HashRecord& a, const HashRecord& b) {
    return a.hash == b.hash ? a.position < b.position : a.hash < b.hash;
  });
  std::vector<std::pair<int64_t, std::vector<std::string>>> groups;
  for (size_t i = 0; i < hashes.size();) {
    size_t j = i + 1;
    while (j < hashes.size() && hashes[j].hash == hashes[i].hash) ++j;
    if (j - i > 1) {
      std::vector<std::string> g;
      for (size_t k = i; k < j; ++k) {
        g.push_back(keep_names ? hashes[k].name : reader->Name(hashes[k].position));
      }
      groups.emplace_back(hashes[i].position, std::move(g));
    }
    i = j;
  }
  std::sort(groups.begin(), groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& g : groups) r.duplicates.push_back(std::move(g.second));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// ---- JSON -----------------------------------------------------------------

namespace {

Json HistogramJson(const Histogram& h) {
  Json a = Json::array();
  for (const auto& [v, c] : h) a.push_back({v, c});
  return a;
}

Json NumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// Counts in a report are integers in [0, 2^53] (exact in every JSON reader),
// and so is any sum of them: a report of 10^30 or -5 images is refused, not
// turned into "critical inf".
constexpr int64_t kMaxCount = int64_t{1} << 53;

Status ReadCount(const Json& v, const std::string& what, int64_t* out) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > kMaxCount) ||
      v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxCount) {
    return InvalidArgumentError("not a stoker stats report: " + what + " is " + v.dump() +
                                ", not a count (an integer from 0 to 2^53)");
  }
  *out = v.get<int64_t>();
  return Status::OK();
}

Status ReadHistogram(const Json& j, const char* key, Histogram* h) {
  if (!j.contains(key) || !j[key].is_array()) {
    return InvalidArgumentError(std::string("not a stoker stats report: no \"") + key + "\"");
  }
  int64_t total = 0;
  for (const Json& pair : j[key]) {
    if (!pair.is_array() || pair.size() != 2) {
      return InvalidArgumentError(std::string("\"") + key + "\": entries must be [value, count]");
    }
    int64_t value = 0, count = 0;
    STOKER_RETURN_IF_ERROR(ReadCount(pair[0], std::string("a value in \"") + key + "\"", &value));
    STOKER_RETURN_IF_ERROR(ReadCount(pair[1], std::string("a count in \"") + key + "\"", &count));
    total += count;
    if (total > kMaxCount) {
      return InvalidArgumentError(std::string("not a stoker stats report: the counts in \"") +
                                  key + "\" add up to more than 2^53");
    }
    (*h)[value] += count;
  }
  return Status::OK();
}

Status ReadCountMap(const Json& j, const char* key, std::map<std::string, int64_t>* out) {
  const Json& m = j.at(key);
  if (!m.is_object()) {
    return InvalidArgumentError(std::string("not a stoker stats report: \"") + key +
                                "\" is not an object");
  }
  for (const auto& [name, v] : m.items()) {
    STOKER_RETURN_IF_ERROR(ReadCount(v, std::string("\"") + key + "\"[" + name + "]",
                                     &(*out)[name]));
  }
  return Status::OK();
}

// Mean and std of pixels in [0, 1]: finite, in [0, 1].
Status ReadUnitTriple(const Json& j, const char* key, std::array<double, 3>* out) {
  *out = j.at(key).get<std::array<double, 3>>();
  for (double v : *out) {
    if (!std::isfinite(v) || v < 0 || v > 1) {
      return InvalidArgumentError(std::string("not a stoker stats report: \"") + key +
                                  "\" holds " + j.at(key).dump() +
                                  ", not three numbers in [0, 1]");
    }
  }
  return Status::OK();
}

}  // namespace

std::string StatsToJson(const DatasetStats& s) {
  // Names are bytes (file and folder names): those that are not UTF-8 are
  // written as \xNN text (EscapeNonUtf8), which JSON can hold.
  const auto text = [](const std::string& v) { return EscapeNonUtf8(v); };
  Json j;
  j["stoker_stats"] = 1;
  j["source"] = text(s.source);
  j["resolution"] = s.resolution;
  j["samples"] = s.samples;
  j["images"] = s.images;
  j["unreadable"] = s.errors.size();
  Json classes = Json::array();
  for (const ClassStat& c : s.classes) {
    classes.push_back({{"label", c.label}, {"name", text(c.name)}, {"count", c.count}});
  }
  j["classes"] = classes;
  j["unlabelled"] = s.unlabelled;
  j["imbalance_ratio"] = NumberOrNull(s.ImbalanceRatio());
  j["widths"] = HistogramJson(s.widths);
  j["heights"] = HistogramJson(s.heights);
  j["aspects_milli"] = HistogramJson(s.aspects);
  j["formats"] = s.formats;
  j["modes"] = s.modes;
  j["pixels"] = s.pixels;
  j["mean"] = s.mean;
  j["std"] = s.stddev;
  j["duplicates_checked"] = s.duplicates_checked;
  Json duplicates = Json::array();
  for (const std::vector<std::string>& group : s.duplicates) {
    Json g = Json::array();
    for (const std::string& name : group) g.push_back(text(name));
    duplicates.push_back(std::move(g));
  }
  j["duplicates"] = duplicates;
  j["redundant_copies"] = s.RedundantCopies();
  Json errors = Json::array();
  for (const SampleError& e : s.errors) {
    errors.push_back({{"name", text(e.name)}, {"error", text(e.message)}});
  }
  j["errors"] = errors;
  j["seconds"] = s.seconds;
  j["images_per_sec"] = s.seconds > 0 ? s.samples / s.seconds : 0.0;
  return j.dump();
}

StatusOr<DatasetStats> StatsFromJson(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgumentError("not valid JSON");
  if (!j.contains("stoker_stats")) {
    return InvalidArgumentError("not a stoker stats report (no \"stoker_stats\" member)");
  }
  if (j["stoker_stats"] != 1) return InvalidArgumentError("unknown stoker stats report version");
  DatasetStats s;
  try {
    s.source = j.value("source", "");
    s.resolution = j.at("resolution").get<int>();
    STOKER_RETURN_IF_ERROR(ReadCount(j.at("samples"), "\"samples\"", &s.samples));
    STOKER_RETURN_IF_ERROR(ReadCount(j.at("images"), "\"images\"", &s.images));
    int64_t labelled = 0;
    for (const Json& c : j.at("classes")) {
      ClassStat cs{c.at("label").get<int64_t>(), c.at("name").get<std::string>(), 0};
      STOKER_RETURN_IF_ERROR(ReadCount(c.at("count"), "the count of class " + cs.name, &cs.count));
      labelled += cs.count;
      if (labelled > kMaxCount) {
        return InvalidArgumentError("not a stoker stats report: the class counts add up to "
                                    "more than 2^53");
      }
      s.classes.push_back(std::move(cs));
    }
    STOKER_RETURN_IF_ERROR(
        ReadCount(j.value("unlabelled", Json(0)), "\"unlabelled\"", &s.unlabelled));
    STOKER_RETURN_IF_ERROR(ReadHistogram(j, "widths", &s.widths));
    STOKER_RETURN_IF_ERROR(ReadHistogram(j, "heights", &s.heights));
    STOKER_RETURN_IF_ERROR(ReadHistogram(j, "aspects_milli", &s.aspects));
    STOKER_RETURN_IF_ERROR(ReadCountMap(j, "formats", &s.formats));
    STOKER_RETURN_IF_ERROR(ReadCountMap(j, "modes", &s.modes));
    STOKER_RETURN_IF_ERROR(ReadCount(j.at("pixels"), "\"pixels\"", &s.pixels));
    STOKER_RETURN_IF_ERROR(ReadUnitTriple(j, "mean", &s.mean));
    STOKER_RETURN_IF_ERROR(ReadUnitTriple(j, "std", &s.stddev));
    s.duplicates_checked = j.value("duplicates_checked", false);
    s.duplicates = j.value("duplicates", std::vector<std::vector<std::string>>{});
    for (const Json& e : j.value("errors", Json::array())) {
      s.errors.push_back({e.at("name").get<std::string>(), e.at("error").get<std::string>()});
    }
    s.seconds = j.value("seconds", 0.0);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("not a stoker stats report: ") + e.what());
  }
  return s;
}

// ---- Text -----------------------------------------------------------------

namespace {

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

int64_t Quantile(const Histogram& h, double q) {
  const int64_t n = HistogramTotal(h);
  if (n == 0) return 0;
  const int64_t want = std::min(n - 1, static_cast<int64_t>(q * static_cast<double>(n - 1) + 0.5));
  int64_t seen = 0;
  for (const auto& [v, c] : h) {
    seen += c;
    if (seen > want) return v;
  }
  return h.rbegin()->first;
}

// Counts of `h` in [edges[i], edges[i+1]) as text bars.
std::string Bars(const Histogram& h, const std::vector<int64_t>& edges,
                 const std::vector<std::string>& labels) {
  std::vector<int64_t> counts(labels.size(), 0);
  for (const auto& [v, c] : h) {
    size_t b = 0;
    while (b + 1 < labels.size() && v >= edges[b + 1]) ++b;
    counts[b] += c;
  }
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  std::string out;
  for (size_t b = 0; b < labels.size(); ++b) {
    const int len = most > 0 ? static_cast<int>((40 * counts[b] + most - 1) / most) : 0;
    out += Printf("    %-12s %9lld  %s\n", labels[b].c_str(), static_cast<long long>(counts[b]),
                  std::string(static_cast<size_t>(len), '#').c_str());
  }
  return out;
}

std::string Counts(const std::map<std::string, int64_t>& m) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [k, c] : m) v.emplace_back(-c, k);
  std::sort(v.begin(), v.end());
  std::string out;
  for (const auto& [c, k] : v) out += Printf("%s%s %lld", out.empty() ? "" : ", ", k.c_str(),
                                             static_cast<long long>(-c));
  return out.empty() ? "(none)" : out;
}

}  // namespace

std::string FormatStats(const DatasetStats& s, int max_listed) {
  std::string out = Printf("stoker stats  %s\n", s.source.c_str());
  out += Printf("samples %lld: %lld images, %zu unreadable; %s; %.2f s (%.0f images/s)\n",
                static_cast<long long>(s.samples), static_cast<long long>(s.images),
                s.errors.size(),
                s.duplicates_checked
                    ? Printf("%zu duplicate group(s), %lld redundant copies", s.duplicates.size(),
                             static_cast<long long>(s.RedundantCopies()))
                          .c_str()
                    : "duplicates not checked (--duplicates)",
                s.seconds, s.seconds > 0 ? s.samples / s.seconds : 0.0);
  if (!s.classes.empty()) {
    const double ratio = s.ImbalanceRatio();
    out += Printf("classes %zu, imbalance (max/min) %s%s\n", s.classes.size(),
                  std::isfinite(ratio) ? Printf("%.2f", ratio).c_str() : "inf (a class is empty)",
                  s.unlabelled ? Printf(", %lld unlabelled", static_cast<long long>(s.unlabelled))
                                     .c_str()
                               : "");
    std::vector<ClassStat> sorted = s.classes;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const ClassStat& a, const ClassStat& b) { return a.count > b.count; });
    const size_t k = static_cast<size_t>(std::max(1, max_listed / 2));
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (sorted.size() > 2 * k && i == k) {
        out += Printf("    ... %zu more ...\n", sorted.size() - 2 * k);
        i = sorted.size() - k;
      }
      out += Printf("    %-24s %9lld\n", sorted[i].name.c_str(),
                    static_cast<long long>(sorted[i].count));
    }
  } else {
    out += "classes: none (the source has no labels)\n";
  }
  if (s.images > 0) {
    out += Printf("width  min %lld, median %lld, max %lld;  "
                  "height min %lld, median %lld, max %lld\n",
                  static_cast<long long>(s.widths.begin()->first),
                  static_cast<long long>(Quantile(s.widths, 0.5)),
                  static_cast<long long>(s.widths.rbegin()->first),
                  static_cast<long long>(s.heights.begin()->first),
                  static_cast<long long>(Quantile(s.heights, 0.5)),
                  static_cast<long long>(s.heights.rbegin()->first));
    out += "  width:\n";
    const std::vector<int64_t> edges = {0, 64, 128, 256, 512, 1024, 2048};
    const std::vector<std::string> labels = {"< 64", "64-127", "128-255", "256-511",
                                             "512-1023", "1024-2047", ">= 2048"};
    out += Bars(s.widths, edges, labels);
    out += "  height:\n";
    out += Bars(s.heights, edges, labels);
    out += "  aspect (width / height):\n";
    out += Bars(s.aspects, {0, 500, 750, 900, 1100, 1340, 2000},
                {"< 0.5", "0.5-0.75", "0.75-0.9", "0.9-1.1", "1.1-1.34", "1.34-2", ">= 2"});
    out += "formats: " + Counts(s.formats) + "\n";
    out += "colour modes: " + Counts(s.modes) + "\n";
    out += Printf("mean %.6f %.6f %.6f   std %.6f %.6f %.6f   (RGB in [0, 1], %s, %lld pixels)\n",
                  s.mean[0], s.mean[1], s.mean[2], s.stddev[0], s.stddev[1], s.stddev[2],
                  s.resolution > 0 ? Printf("shorter side %d", s.resolution).c_str()
                                   : "full size",
                  static_cast<long long>(s.pixels));
    out += Printf("  Normalize(mean=[%.4f, %.4f, %.4f], std=[%.4f, %.4f, %.4f])\n", s.mean[0],
                  s.mean[1], s.mean[2], s.stddev[0], s.stddev[1], s.stddev[2]);
  }
  int listed = 0;
  if (!s.duplicates.empty()) out += "duplicates (identical bytes):\n";
  for (const auto& g : s.duplicates) {
    if (listed++ == max_listed) {
      out += Printf("    ... %zu more groups (see --json)\n", s.duplicates.size() - max_listed);
      break;
    }
    std::string line;
    for (const std::string& name : g) line += (line.empty() ? "" : " = ") + name;
    out += "    " + line + "\n";
  }
  listed = 0;
  if (!s.errors.empty()) out += Printf("unreadable (%zu):\n", s.errors.size());
  for (const SampleError& e : s.errors) {
    if (listed++ == max_listed) {
      out += Printf("    ... %zu more (see --json)\n", s.errors.size() - max_listed);
      break;
    }
    out += "    " + e.name + ": " + e.message + "\n";
  }
  return out;
}

}  // namespace stoker
