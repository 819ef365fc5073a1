// Copyright 2026 The stoker Authors.
#include "convert/convert.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <unordered_set>

#include "base/atomic_file.h"
#include "base/json.h"
#include "codec/decoder.h"
#include "codec/encoder.h"
#include "ops/geometry.h"
#include "ops/resample.h"
#include "source/image_folder.h"
#include "stoker/mutex.h"
#include "stoker/thread_annotations.h"

namespace stoker {
namespace {

// One sample in flight: filled by a worker, written and released by the
// writing thread.
struct Slot {
  // ready and status: guarded by ConvertToShards' `sync.mu` (a local, which
  // an annotation here cannot name); the rest belongs to whoever owns the slot.
  bool ready = false;
  Status status;
  SampleScratch scratch;
  SampleData data;
  std::vector<uint8_t> encoded;  // re-encoded image (when `reencoded`)
  bool reencoded = false;
  const char* ext = "jpg";
  std::string name;
};

// Per-worker tools (not thread-safe, so one set per thread).
struct Worker {
  ImageDecoder decoder;
  Resampler resampler;
  AxisCoeffs h, v;
  RgbImage resized;
};

// Fills `slot` from the sample read into it.
Status Prepare(const ConvertOptions& o, Worker* w, Slot* slot) {
  const SampleData& d = slot->data;
  slot->reencoded = false;
  RgbView view;
  DecodedRegion decoded;
  if (d.pixels == nullptr) {
    const char* ext = ImageFileExtension(d.bytes, d.size);
    if (ext == nullptr) {
      return InvalidArgumentError("not a JPEG, PNG, WebP, TIFF, BMP or PNM image");
    }
    slot->ext = ext;
    if (o.resize <= 0) return Status::OK();
    ImageHeader header;
    STOKER_RETURN_IF_ERROR(w->decoder.Open(d.bytes, d.size, &header));
    if (std::min(header.width, header.height) <= o.resize) return Status::OK();
    STOKER_RETURN_IF_ERROR(w->decoder.Decode(DecodeRequest{}, &decoded));
    view = decoded.pixels;
  } else {
    view = RgbView{d.pixels, d.pixel_width, d.pixel_height, d.pixel_stride};
  }
  if (o.resize > 0 && std::min(view.width, view.height) > o.resize) {
    int ow, oh;
    ShorterSideSize(view.width, view.height, o.resize, &ow, &oh);
    ComputeAxisCoeffs(0, view.width, 0, view.width, ow, 0, ow, false, &w->h, /*fixed_taps=*/true);
    ComputeAxisCoeffs(0, view.height, 0, view.height, oh, 0, oh, false, &w->v);
    w->resampler.RunToImage(view, 0, 0, w->h, w->v, &w->resized);
    view = w->resized.view();
  }
  STOKER_RETURN_IF_ERROR(EncodeJpeg(view, o.quality, o.subsampling, &slot->encoded));
  slot->reencoded = true;
  slot->ext = "jpg";
  return Status::OK();
}

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Names that are not UTF-8 (a Latin-1 folder name) as surrogate escapes:
// valid JSON that Python reads as os.fsdecode's str and Shards reads back as
// the bytes (base/json.h).
std::string ClassesJson(const std::vector<std::string>& classes) {
  std::string text = "[";
  for (size_t i = 0; i < classes.size(); ++i) text += (i ? ", " : "") + JsonQuoteBytes(classes[i]);
  return text + "]\n";
}


// The bytes of `path`, or "" when it cannot be read.
std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

std::string ClassesJsonPath(const std::string& dir) {
  return (dir.empty() ? std::string(".") : dir) + "/" + kClassesJsonName;
}

std::string ShardKeyFromName(const std::string& name_in) {
  // A note after the path ("a.png (mask m/a.png)", "x.jpg (image id 7)") is
  // not part of it.
  std::string name = name_in;
  const size_t note = name.find(" (");
  if (note != std::string::npos && !name.empty() && name.back() == ')') name.resize(note);
  std::string base = name.substr(name.find_last_of('/') == std::string::npos
                                     ? 0
                                     : name.find_last_of('/') + 1);
  if (HasImageExtension(base)) base.erase(base.find_last_of('.'));
  for (char& c : base) {
    if (!KeyChar(c)) c = '_';
  }
  if (base.empty()) base = "_";
  return base;
}

namespace {

// Records: the member extension of a field other than the primary image and
// label, "NAME.<kind's extension>", which Shards(fields={NAME: "NAME.npy"}) and
// webdataset's decoders read back.
StatusOr<std::string> RecordMemberExtension(const FieldSpec& f) {
  for (char c : f.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return InvalidArgumentError("field '" + f.name + "': only letters, digits, '_' and '-' "
                                  "make a member extension");
    }
  }
  switch (f.kind) {
    case FieldKind::kArray: return f.name + ".npy";
    case FieldKind::kText: return f.name + ".txt";
    case FieldKind::kJson:
    case FieldKind::kScalar: return f.name + ".json";
    case FieldKind::kBytes: return f.name + ".bin";
    case FieldKind::kLabel: return f.name + ".cls";
    case FieldKind::kImage:
      // A mask image: its encoded bytes as they are, NAME.<ext of its content>.
      if (f.target == TargetRole::kMask) return f.name;
      break;
  }
  return UnimplementedError("field '" + f.name + "': a second image field is not written "
                            "(one image per sample)");
}

// The bytes of one field's member: a .npy file (format 1.0, C order) for
// arrays, decimal text for labels, a JSON number for scalars, the value's
// bytes for text, json and bytes.
void RecordMemberBytes(const FieldSpec& f, const FieldValue& v, std::vector<uint8_t>* out) {
  out->clear();
  auto append = [&](const std::string& t) { out->insert(out->end(), t.begin(), t.end()); };
  switch (f.kind) {
    case FieldKind::kLabel: append(std::to_string(v.i)); return;
    case FieldKind::kScalar: {
      if (v.dtype != ElemType::kFloat64) {
        append(std::to_string(v.i));
        return;
      }
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v.f);
      append(buf);
      return;
    }
    case FieldKind::kArray: {
      const size_t item = ElemSize(v.dtype);
      const std::string type = ElemTypeName(v.dtype);
      const char kind = type == "bool" ? 'b' : type[0] == 'u' ? 'u' : type[0] == 'i' ? 'i' : 'f';
      std::string shape = "(";
      for (int d = 0; d < v.ndim; ++d) {
        shape += std::to_string(v.dims[static_cast<size_t>(d)]) + (v.ndim == 1 ? "," : "");
        if (d + 1 < v.ndim) shape += ", ";
      }
      shape += ")";
      std::string header = std::string("{'descr': '") + (item == 1 ? '|' : '<') + kind +
                           std::to_string(item) + "', 'fortran_order': False, 'shape': " +
                           shape + ", }";
      // magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
      const size_t unpadded = 10 + header.size() + 1;
      header.append((64 - unpadded % 64) % 64, ' ');
      header += '\n';
      const uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
      out->insert(out->end(), magic, magic + 8);
      out->push_back(static_cast<uint8_t>(header.size() & 0xff));
      out->push_back(static_cast<uint8_t>(header.size() >> 8));
      append(header);
      break;
    }
    default:
      break;
  }
  out->insert(out->end(), v.data, v.data + v.size);
}

}  // namespace

StatusOr<ConvertResult> ConvertToShards(Source* source, const ConvertOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.resize < 0) return InvalidArgumentError("resize must be >= 0");
  if (options.quality < 1 || options.quality > 100) {
    return InvalidArgumentError("quality must be in [1, 100]");
  }
  if (options.subsampling != 444 && options.subsampling != 422 && options.subsampling != 420) {
    return InvalidArgumentError("subsampling must be 444, 422 or 420");
  }
  const Schema schema = source->schema();
  const bool record = !schema.IsImageLabel();
  const int image_field = schema.image();
  const int label_field = schema.label();
  std::vector<std::string> field_exts(schema.fields.size());  // "" : not a member of its own
  if (options.resize > 0) {
    for (const FieldSpec& f : schema.fields) {
      if (f.target != TargetRole::kNone) {
        return InvalidArgumentError("convert: " + source->Describe() + ": field '" + f.name +
                                    "' is a " + TargetRoleName(f.target) + " target, which "
                                    "would not follow a resized image: convert without resize");
      }
    }
  }
  if (record) {
    for (size_t k = 0; k < schema.fields.size(); ++k) {
      if (static_cast<int>(k) == image_field || static_cast<int>(k) == label_field) continue;
      auto ext = RecordMemberExtension(schema.fields[k]);
      if (!ext.ok()) return ext.status().WithContext("convert: " + source->Describe());
      field_exts[k] = ext.value();
    }
  }
  // Class names go to classes.json beside the shards. One already there
  // (another split converted into the same directory) must name the same
  // classes unless overwriting.
  const std::vector<std::string> classes = source->classes();
  const std::string classes_path = ClassesJsonPath(options.shards.dir);
  const std::string classes_text = classes.empty() ? std::string() : ClassesJson(classes);
  if (!classes.empty() && !options.shards.overwrite) {
    const std::string old = ReadWhole(classes_path);
    if (!old.empty() && old != classes_text) {
      return InvalidArgumentError(classes_path +
                                  " exists and names other classes; pass --overwrite to replace "
                                  "it, or convert into another directory");
    }
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<EpochReader> reader, source->StartEpoch(EpochSpec{}));
  const int64_t n = reader->size();
  if (n < 0) return UnimplementedError("convert needs a source of known length");
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<ShardWriter> writer, ShardWriter::Create(options.shards));

  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, threads);
  const int64_t window = 4 * static_cast<int64_t>(threads);
  std::vector<Slot> slots(static_cast<size_t>(window));
  struct Sync {
    Mutex mu;
    CondVar cv;  // a slot became ready, the writer took one, or cancel
    int64_t written STOKER_GUARDED_BY(mu) = 0;  // samples handed to the writer
    bool cancel STOKER_GUARDED_BY(mu) = false;
  } sync;
  std::atomic<int64_t> next{0};

  auto work = [&] {
    Worker w;
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      Slot& slot = slots[static_cast<size_t>(i % window)];
      {
        MutexLock lock(&sync.mu);
        while (!sync.cancel && i >= sync.written + window) sync.cv.Wait(&sync.mu);
        if (sync.cancel) return;
      }
      // The slot is ours until we mark it ready.
      bool end = false;
      Status s = reader->Read(i, &slot.scratch, &slot.data, &end);
      if (s.ok() && end) s = InternalError("the source ended early");
      if (s.ok() && (!record || image_field >= 0)) s = Prepare(options, &w, &slot);
      if (!s.ok()) s = Status(s.code(), reader->Name(i) + ": " + s.message());
      {
        MutexLock lock(&sync.mu);
        slot.status = std::move(s);
        slot.ready = true;
      }
      sync.cv.SignalAll();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  auto stop = [&] {
    {
      MutexLock lock(&sync.mu);
      sync.cancel = true;
    }
    sync.cv.SignalAll();
    for (auto& t : pool) t.join();
  };

  ConvertResult result;
  std::unordered_set<std::string> keys;
  int64_t tar_bytes = 0;
  std::string label_text;
  std::vector<std::vector<uint8_t>> field_bytes;  // records: each field's member, reused
  std::vector<std::string> image_exts(schema.fields.size());  // a mask image's member name
  Status status;
  for (int64_t i = 0; i < n; ++i) {
    Slot& slot = slots[static_cast<size_t>(i % window)];
    {
      MutexLock lock(&sync.mu);
      while (!slot.ready) sync.cv.Wait(&sync.mu);
    }
    if (!slot.status.ok()) {
      status = slot.status;
      break;
    }
    std::string key = ShardKeyFromName(reader->Name(i));
    while (!keys.insert(key).second) key += "_" + std::to_string(i);
    const SampleData& d = slot.data;
    std::vector<ShardMember> members;
    if (record && image_field < 0) {
      // A record without an image: only its fields.
    } else if (slot.reencoded) {
      members.push_back({slot.ext, slot.encoded.data(), slot.encoded.size()});
      ++result.reencoded;
    } else {
      members.push_back({slot.ext, d.bytes, d.size});
    }
    if (d.pixels == nullptr) result.input_bytes += static_cast<int64_t>(d.size);
    if (d.label >= 0) {
      label_text = std::to_string(d.label);
      members.push_back({"cls", reinterpret_cast<const uint8_t*>(label_text.data()),
                         label_text.size()});
    }
    if (record) {
      field_bytes.resize(schema.fields.size());
      for (size_t k = 0; k < schema.fields.size() && k < static_cast<size_t>(d.num_fields);
           ++k) {
        if (field_exts[k].empty()) continue;
        const FieldValue& v = d.fields[k];
        if (schema.fields[k].kind == FieldKind::kImage) {  // a mask's encoded bytes
          const char* ext = ImageFileExtension(v.data, v.size);
          if (ext == nullptr) {
            status = InvalidArgumentError(reader->Name(i) + ": field '" + schema.fields[k].name +
                                          "': not a JPEG, PNG, WebP, TIFF, BMP or PNM image");
            break;
          }
          image_exts[k] = field_exts[k] + "." + ext;
          members.push_back({image_exts[k], v.data, v.size});
          continue;
        }
        RecordMemberBytes(schema.fields[k], v, &field_bytes[k]);
        members.push_back({field_exts[k], field_bytes[k].data(), field_bytes[k].size()});
      }
      if (!status.ok()) break;
    }
    status = writer->Add(key, members);
    if (!status.ok()) break;
    for (const ShardMember& m : members) tar_bytes += 512 + (m.size + 511) / 512 * 512;
    ++result.samples;
    {
      MutexLock lock(&sync.mu);
      slot.ready = false;
      sync.written = i + 1;
    }
    sync.cv.SignalAll();
    if (options.progress) options.progress(i + 1, n, tar_bytes);
  }
  stop();
  if (!status.ok()) return status;  // the writer's destructor deletes the partial shard
  STOKER_RETURN_IF_ERROR(writer->Finish());
  if (!classes.empty()) {
    const Status written = AtomicWriteFile(classes_path, classes_text, /*sync=*/true);
    if (!written.ok()) return written.WithContext("cannot write the class names");
  }
  result.shards = writer->shards();
  for (const ShardInfo& s : result.shards) result.output_bytes += s.file_bytes;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace stoker
