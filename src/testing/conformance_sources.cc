// Copyright 2026 The stoker Authors.
//
// The conformance suite's table of sources (testing/conformance.h): one
// function per source that writes the suite's dataset in its format and
// opens it through the public factory (stoker/sources.h).
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>

#include <numeric>

#include "stoker/mix.h"
#include "stoker/sources.h"
#include "stoker/video.h"
#include "testing/conformance.h"
#include "testing/http_server.h"
#include "testing/test_arrays.h"
#include "testing/test_images.h"
#include "testing/test_tars.h"

namespace stoker::testing {

using Data = ConformanceData;

std::vector<uint8_t> ConformancePixels(int i) {
  return MakePixels(Data::kWidth, Data::kHeight, 1000 + static_cast<uint64_t>(i));
}

std::vector<uint8_t> ConformanceJpeg(int i) {
  return EncodeJpeg(ConformancePixels(i), Data::kWidth, Data::kHeight);
}

namespace {

const std::vector<uint8_t> kNotAnImage = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g',
                                          'e'};

// Sample i's encoded bytes: its JPEG, or bytes no decoder takes.
std::vector<uint8_t> Encoded(const Data& data, int i) {
  return data.corrupt.count(i) ? kNotAnImage : ConformanceJpeg(i);
}

std::set<int64_t> Labels(const std::set<int>& samples) { return {samples.begin(), samples.end()}; }

// The sample numbers a source holds: all of them, or (a Mix's sources) a part.
using Samples = std::vector<int>;
Samples All() {
  Samples v(Data::kSamples);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// `data` for a source holding `samples`: only its own samples corrupt.
Data Part(const Data& data, const Samples& samples) {
  Data part;
  for (int i : samples) {
    if (data.corrupt.count(i)) part.corrupt.insert(i);
  }
  return part;
}

Status Check(bool ok, const std::string& what) {
  return ok ? Status::OK() : InternalError("conformance data: " + what + " failed");
}

// One class directory per sample ("c00" ... sorted = label order), each
// holding that sample's file.
StatusOr<MadeSource> MakeImageFolder(const std::string& dir, const Data& data) {
  for (int i = 0; i < Data::kSamples; ++i) {
    char cls[16];
    std::snprintf(cls, sizeof cls, "/c%02d", i);
    MakeDirs(dir + cls);
    WriteFile(dir + cls + "/img.jpg", Encoded(data, i));
  }
  STOKER_ASSIGN_OR_RETURN(auto folder, ImageFolder::Open(dir));
  return MadeSource{folder, Labels(data.corrupt), nullptr};
}

// images.npy uint8 [N, H, W, 3] and labels.npy int64 [N] of `samples`. A
// corrupt request cuts the images file inside its last sample after opening
// it (the mapped file shrinks under the source: DataLoss for that sample,
// not SIGBUS).
// With `aux`, a record source (NpySource::OpenFields) of "image", "label"
// and "aux" (aux.npy int32 [N, 2] holding {i, -i}).
StatusOr<MadeSource> NpyOf(const std::string& dir, const Data& data, const Samples& samples,
                           bool aux = false) {
  std::vector<uint8_t> pixels, labels, auxes;
  for (int i : samples) {
    const std::vector<uint8_t> p = ConformancePixels(i);
    pixels.insert(pixels.end(), p.begin(), p.end());
    for (int b = 0; b < 8; ++b) labels.push_back(static_cast<uint8_t>(b == 0 ? i : 0));
    const int32_t a[2] = {i, -i};
    auxes.insert(auxes.end(), reinterpret_cast<const uint8_t*>(a),
                 reinterpret_cast<const uint8_t*>(a) + sizeof a);
  }
  const int64_t n = static_cast<int64_t>(samples.size());
  const std::string images = dir + "/images.npy";
  const std::vector<uint8_t> file = NpyBytes("|u1", {n, Data::kHeight, Data::kWidth, 3}, pixels);
  WriteFile(images, file);
  WriteFile(dir + "/labels.npy", NpyBytes("<i8", {n}, labels));
  std::shared_ptr<NpySource> npy;
  if (aux) {
    WriteFile(dir + "/aux.npy", NpyBytes("<i4", {n, 2}, auxes));
    STOKER_ASSIGN_OR_RETURN(npy, NpySource::OpenFields({{"image", images},
                                                        {"label", dir + "/labels.npy"},
                                                        {"aux", dir + "/aux.npy"}}));
  } else {
    STOKER_ASSIGN_OR_RETURN(npy, NpySource::Open(images, dir + "/labels.npy"));
  }
  std::set<int64_t> corrupt;
  if (!data.corrupt.empty()) {
    STOKER_RETURN_IF_ERROR(Check(::truncate(images.c_str(), file.size() - 10) == 0, "truncate"));
    corrupt.insert(samples.back());
  }
  return MadeSource{npy, corrupt, nullptr};
}

StatusOr<MadeSource> MakeNpy(const std::string& dir, const Data& data) {
  return NpyOf(dir, data, All());
}

// Records (NpySource::OpenFields): image.npy uint8 [N, H, W, 3] (the primary
// image), label.npy int64 [N] (the primary label) and aux.npy int32 [N, 2]
// holding {i, -i} (an array field every batch move must carry with its
// sample). A corrupt request cuts image.npy inside its last sample.
StatusOr<MadeSource> MakeNpyRecords(const std::string& dir, const Data& data) {
  std::vector<uint8_t> pixels, labels, aux;
  for (int i = 0; i < Data::kSamples; ++i) {
    const std::vector<uint8_t> p = ConformancePixels(i);
    pixels.insert(pixels.end(), p.begin(), p.end());
    for (int b = 0; b < 8; ++b) labels.push_back(static_cast<uint8_t>(b == 0 ? i : 0));
    const int32_t a[2] = {i, -i};
    aux.insert(aux.end(), reinterpret_cast<const uint8_t*>(a),
               reinterpret_cast<const uint8_t*>(a) + sizeof a);
  }
  const std::string images = dir + "/image.npy";
  const std::vector<uint8_t> file =
      NpyBytes("|u1", {Data::kSamples, Data::kHeight, Data::kWidth, 3}, pixels);
  WriteFile(images, file);
  WriteFile(dir + "/label.npy", NpyBytes("<i8", {Data::kSamples}, labels));
  WriteFile(dir + "/aux.npy", NpyBytes("<i4", {Data::kSamples, 2}, aux));
  STOKER_ASSIGN_OR_RETURN(auto npy, NpySource::OpenFields({{"image", images},
                                                           {"label", dir + "/label.npy"},
                                                           {"aux", dir + "/aux.npy"}}));
  std::set<int64_t> corrupt;
  if (!data.corrupt.empty()) {
    STOKER_RETURN_IF_ERROR(Check(::truncate(images.c_str(), file.size() - 10) == 0, "truncate"));
    corrupt.insert(Data::kSamples - 1);
  }
  return MadeSource{npy, corrupt, nullptr};
}

// data.h5: "images" 1-D variable-length uint8 (encoded files), "labels"
// int64, of `samples`.
StatusOr<MadeSource> Hdf5Of(const std::string& dir, const Data& data, const Samples& samples) {
  std::vector<std::vector<uint8_t>> files;
  std::vector<hvl_t> rows;
  std::vector<int64_t> labels;
  for (int i : samples) files.push_back(Encoded(data, i));
  for (size_t k = 0; k < samples.size(); ++k) {
    rows.push_back(hvl_t{files[k].size(), files[k].data()});
    labels.push_back(samples[k]);
  }
  const std::string path = dir + "/data.h5";
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  STOKER_RETURN_IF_ERROR(Check(file >= 0, "H5Fcreate"));
  const hsize_t dims[1] = {samples.size()};
  const hid_t space = H5Screate_simple(1, dims, nullptr);
  const hid_t type = H5Tvlen_create(H5T_STD_U8LE);
  const hid_t mem = H5Tvlen_create(H5T_NATIVE_UINT8);
  const hid_t images = H5Dcreate2(file, "images", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const bool wrote_images = H5Dwrite(images, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0;
  const hid_t lds = H5Dcreate2(file, "labels", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
  const bool wrote_labels =
      H5Dwrite(lds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()) >= 0;
  H5Dclose(lds);
  H5Dclose(images);
  H5Tclose(mem);
  H5Tclose(type);
  H5Sclose(space);
  H5Fclose(file);
  STOKER_RETURN_IF_ERROR(Check(wrote_images && wrote_labels, "H5Dwrite"));
  STOKER_ASSIGN_OR_RETURN(auto h5, Hdf5Source::Open(path, "images", "labels"));
  return MadeSource{h5, Labels(data.corrupt), nullptr};
}

StatusOr<MadeSource> MakeHdf5(const std::string& dir, const Data& data) {
  return Hdf5Of(dir, data, All());
}

// Records (Hdf5Source::OpenFields): data.h5 with "images" 1-D
// variable-length uint8 (encoded files: the primary image), "labels" int64
// (the primary label) and "extra" int32 [N, 2] holding {i, -i} (field
// "aux").
StatusOr<MadeSource> Hdf5RecordsOf(const std::string& dir, const Data& data,
                                   const Samples& samples) {
  STOKER_ASSIGN_OR_RETURN(MadeSource plain, Hdf5Of(dir, data, samples));
  std::vector<int32_t> aux;
  for (int i : samples) {
    aux.push_back(i);
    aux.push_back(-i);
  }
  const std::string path = dir + "/data.h5";
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  STOKER_RETURN_IF_ERROR(Check(file >= 0, "H5Fopen"));
  const hsize_t dims[2] = {samples.size(), 2};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t ds =
      H5Dcreate2(file, "extra", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const bool wrote = H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, aux.data()) >= 0;
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
  STOKER_RETURN_IF_ERROR(Check(wrote, "H5Dwrite"));
  STOKER_ASSIGN_OR_RETURN(auto h5, Hdf5Source::OpenFields(path, {{"image", "images"},
                                                                 {"label", "labels"},
                                                                 {"aux", "extra"}}));
  return MadeSource{h5, plain.corrupt, nullptr};
}

StatusOr<MadeSource> MakeHdf5Records(const std::string& dir, const Data& data) {
  return Hdf5RecordsOf(dir, data, All());
}

// `shards` WebDataset shards "train-NN<ext>" of equal size holding `samples`
// in order: key "sNN", members sNN.jpg and sNN.cls (and, with `aux`, the
// record field sNN.aux.npy: int32 [2] holding {i, -i}).
void WriteShards(const std::string& dir, const Data& data, const std::string& ext,
                 TarFilter filter, const Samples& samples = All(), int shards = Data::kShards,
                 bool aux = false) {
  const size_t per = samples.size() / static_cast<size_t>(shards);
  for (int s = 0; s < shards; ++s) {
    std::vector<TarEntry> entries;
    for (size_t k = s * per; k < (s + 1) * per; ++k) {
      const int i = samples[k];
      char key[16];
      std::snprintf(key, sizeof key, "s%02d", i);
      entries.push_back({std::string(key) + ".jpg", Encoded(data, i)});
      entries.push_back({std::string(key) + ".cls", Text(std::to_string(i))});
      if (aux) {
        const int32_t a[2] = {i, -i};
        const auto* b = reinterpret_cast<const uint8_t*>(a);
        entries.push_back({std::string(key) + ".aux.npy",
                           NpyBytes("<i4", {2}, std::vector<uint8_t>(b, b + sizeof a))});
      }
    }
    char name[32];
    std::snprintf(name, sizeof name, "/train-%02d", s);
    WriteFile(dir + name + ext, MakeTar(entries, TarFormat::kPax, filter));
  }
}

std::string ShardPattern(const std::string& base, const std::string& ext,
                         int shards = Data::kShards) {
  char range[32];
  std::snprintf(range, sizeof range, "/train-{00..%02d}", shards - 1);
  return base + range + ext;
}

// Stream options the suite uses: a small shuffle buffer and two shards at
// once, so the test epochs really interleave and shuffle.
ShardOptions StreamOptions(const std::string& pattern, int64_t length) {
  ShardOptions o;
  o.patterns = {pattern};
  o.mode = ShardMode::kStream;
  o.shuffle_buffer = 8;
  o.concurrent_shards = 2;
  o.length = length;
  o.stream.max_attempts = 2;
  o.stream.backoff_ms = 1;
  return o;
}

// Records from shards (SampleSpec::fields): {"image": "jpg", "label": "cls",
// "aux": "aux.npy"} (aux an int32 [2] .npy member holding {i, -i}), indexed
// (.tar) or streamed (.tar.zst, length declared).
SampleSpec RecordSpec() {
  SampleSpec spec;
  spec.fields = {{"image", {"jpg"}}, {"label", {"cls"}}, {"aux", {"aux.npy"}}};
  return spec;
}

// With `aux`, records: RecordSpec() with "aux" declared int32 [2] (stacked,
// as a Mix with Npy and HDF5 records needs).
StatusOr<MadeSource> IndexedShardsOf(const std::string& dir, const Data& data,
                                     const Samples& samples, int shards, bool aux = false) {
  WriteShards(dir, data, ".tar", TarFilter::kNone, samples, shards, aux);
  ShardOptions o;
  o.patterns = {ShardPattern(dir, ".tar", shards)};
  o.mode = ShardMode::kIndexed;
  if (aux) {
    o.spec = RecordSpec();
    ShardField& f = o.spec.fields.back();
    f.declared = true;
    f.dtype = ElemType::kInt32;
    f.shape = {2};
  }
  STOKER_ASSIGN_OR_RETURN(auto source, OpenShards(o));
  return MadeSource{source, Labels(data.corrupt), nullptr};
}

StatusOr<MadeSource> MakeIndexedShards(const std::string& dir, const Data& data) {
  return IndexedShardsOf(dir, data, All(), Data::kShards);
}

// zstd-compressed local shards, streamed, with the epoch's length declared.
StatusOr<MadeSource> MakeStreamShards(const std::string& dir, const Data& data) {
  WriteShards(dir, data, ".tar.zst", TarFilter::kZstd);
  STOKER_ASSIGN_OR_RETURN(auto shards,
                          OpenShards(StreamOptions(ShardPattern(dir, ".tar.zst"), Data::kSamples)));
  return MadeSource{shards, Labels(data.corrupt), nullptr};
}

// Segmentation pairs (SegmentationFolder): img/sNN.jpg and ann/sNN.png, a grey
// mask of value i (the suite knows a label-less sample by its mask: see
// TakeBatches).
StatusOr<MadeSource> MakeSegmentationFolder(const std::string& dir, const Data& data) {
  MakeDirs(dir + "/img");
  MakeDirs(dir + "/ann");
  for (int i = 0; i < Data::kSamples; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "/s%02d", i);
    WriteFile(dir + "/img" + key + ".jpg", Encoded(data, i));
    PngSpec grey;
    grey.color_type = 0;
    std::vector<uint8_t> expected;
    WriteFile(dir + "/ann" + key + ".png",
              EncodePng(std::vector<uint8_t>(Data::kWidth * Data::kHeight * 3,
                                             static_cast<uint8_t>(i)),
                        Data::kWidth, Data::kHeight, grey, &expected));
  }
  STOKER_ASSIGN_OR_RETURN(auto folder, SegmentationFolder::Open(dir + "/img", dir + "/ann"));
  return MadeSource{folder, Labels(data.corrupt), nullptr};
}

// COCO (CocoSource): image i (id 10 + i: samples in id order are dataset
// order) with one annotation of category 100 + i (label i: labels numbered
// from 0 in sorted id order), and semantic
// masks. The box covers the whole image, so no crop of the suite's
// transforms removes it (and the label that identifies the sample).
StatusOr<MadeSource> MakeCoco(const std::string& dir, const Data& data) {
  MakeDirs(dir + "/img");
  std::string images, anns, cats;
  const std::string w = std::to_string(Data::kWidth), h = std::to_string(Data::kHeight);
  for (int i = 0; i < Data::kSamples; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "s%02d.jpg", i);
    WriteFile(dir + "/img/" + name, Encoded(data, i));
    const std::string id = std::to_string(10 + i);
    images += std::string(i ? "," : "") + "{\"id\": " + id + ", \"file_name\": \"" + name +
              "\", \"height\": " + std::to_string(Data::kHeight) + ", \"width\": " +
              std::to_string(Data::kWidth) + "}";
    anns += std::string(i ? "," : "") + "{\"id\": " + std::to_string(i) + ", \"image_id\": " + id +
            ", \"category_id\": " + std::to_string(100 + i) +
            ", \"bbox\": [0, 0, " + w + ", " + h + "], \"segmentation\": [[0, 0, " + w + ", 0, " +
            w + ", " + h + ", 0, " + h + "]]}";
    cats += std::string(i ? "," : "") + "{\"id\": " + std::to_string(100 + i) + "}";
  }
  WriteFile(dir + "/ann.json", Text("{\"images\": [" + images + "], \"annotations\": [" + anns +
                                    "], \"categories\": [" + cats + "]}"));
  CocoOptions o;
  o.masks = CocoOptions::Masks::kSemantic;
  o.labels = CocoOptions::Labels::kFrom0;
  STOKER_ASSIGN_OR_RETURN(auto coco, CocoSource::Open(dir + "/img", dir + "/ann.json", o));
  return MadeSource{coco, Labels(data.corrupt), nullptr};
}

StatusOr<MadeSource> MakeIndexedShardRecords(const std::string& dir, const Data& data) {
  WriteShards(dir, data, ".tar", TarFilter::kNone, All(), Data::kShards, /*aux=*/true);
  ShardOptions o;
  o.patterns = {ShardPattern(dir, ".tar")};
  o.mode = ShardMode::kIndexed;
  o.spec = RecordSpec();
  STOKER_ASSIGN_OR_RETURN(auto source, OpenShards(o));
  return MadeSource{source, Labels(data.corrupt), nullptr};
}

StatusOr<MadeSource> MakeStreamShardRecords(const std::string& dir, const Data& data) {
  WriteShards(dir, data, ".tar.zst", TarFilter::kZstd, All(), Data::kShards, /*aux=*/true);
  ShardOptions o = StreamOptions(ShardPattern(dir, ".tar.zst"), Data::kSamples);
  o.spec = RecordSpec();
  STOKER_ASSIGN_OR_RETURN(auto shards, OpenShards(o));
  return MadeSource{shards, Labels(data.corrupt), nullptr};
}

// The same without a declared length: size() is -1 (one rank only).
StatusOr<MadeSource> MakeUnsizedStreamShards(const std::string& dir, const Data& data) {
  WriteShards(dir, data, ".tar.gz", TarFilter::kGzip);
  STOKER_ASSIGN_OR_RETURN(auto shards, OpenShards(StreamOptions(ShardPattern(dir, ".tar.gz"), 0)));
  return MadeSource{shards, Labels(data.corrupt), nullptr};
}

// Uncompressed shards over HTTP from a loopback server (testing/http_server.h),
// streamed (remote shards always are), length declared.
StatusOr<MadeSource> MakeHttpShards(const std::string& dir, const Data& data) {
  WriteShards(dir, data, ".tar", TarFilter::kNone);
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<HttpServer> server, ServeFiles(dir));
  ShardOptions o = StreamOptions(ShardPattern(server->url(), ".tar"), Data::kSamples);
  o.mode = ShardMode::kAuto;
  STOKER_ASSIGN_OR_RETURN(auto shards, OpenShards(o));
  return MadeSource{shards, Labels(data.corrupt), server};
}

// A Mix (stoker/mix.h) of three sources of three kinds, source c holding the
// samples i with i % 3 == c: indexed shards, HDF5, Npy. Default options:
// every sample once per epoch, weights = sizes (equal), so the unshuffled
// schedule alternates 0, 1, 2, 0, ... and reads the dataset in order.
// `records`: the same three of records, each sample carrying "aux" int32 [2]
// = {i, -i} (declared in the shards, so the three schemas agree).
StatusOr<MadeSource> MixOf(const std::string& dir, const Data& data, bool records) {
  std::vector<Samples> parts(3);
  for (int i = 0; i < Data::kSamples; ++i) parts[static_cast<size_t>(i % 3)].push_back(i);
  std::vector<MadeSource> made;
  for (int c = 0; c < 3; ++c) {
    const std::string sub = dir + "/" + std::to_string(c);
    MakeDirs(sub);
    const Data part = Part(data, parts[static_cast<size_t>(c)]);
    STOKER_ASSIGN_OR_RETURN(
        MadeSource m, c == 0   ? IndexedShardsOf(sub, part, parts[0], 4, records)
                      : c == 1 ? (records ? Hdf5RecordsOf(sub, part, parts[1])
                                          : Hdf5Of(sub, part, parts[1]))
                               : NpyOf(sub, part, parts[2], records));
    made.push_back(std::move(m));
  }
  std::set<int64_t> corrupt;
  for (const MadeSource& m : made) corrupt.insert(m.corrupt.begin(), m.corrupt.end());
  STOKER_ASSIGN_OR_RETURN(auto mix,
                          MixSource::Open({made[0].source, made[1].source, made[2].source}));
  return MadeSource{mix, corrupt, nullptr};
}

StatusOr<MadeSource> MakeMix(const std::string& dir, const Data& data) {
  return MixOf(dir, data, false);
}

StatusOr<MadeSource> MakeMixRecords(const std::string& dir, const Data& data) {
  return MixOf(dir, data, true);
}

// The 48 clips' videos, made once per process by one ffmpeg run (the
// segment muxer cuts a 48 s testsrc at 3 fps, MPEG-4 with a keyframe every
// second, into 48 MP4 files of 3 frames): video i's bytes. Empty when
// ffmpeg is missing or failed.
const std::vector<std::vector<uint8_t>>& ConformanceVideos() {
  static std::vector<std::vector<uint8_t>> videos;
  static std::once_flag once;
  std::call_once(once, [] {
    char tmpl[] = "/tmp/stoker_conformance_video_XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    const std::string dir = tmpl;
    const std::string cmd =
        "ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=" + std::to_string(Data::kWidth) +
        "x" + std::to_string(Data::kHeight) + ":rate=3:duration=" +
        std::to_string(Data::kSamples) +
        " -c:v mpeg4 -g 3 -f segment -segment_time 1 -reset_timestamps 1 -segment_format mp4 '" +
        dir + "/v%02d.mp4'";
    std::vector<std::vector<uint8_t>> made;
    if (std::system(cmd.c_str()) == 0) {
      for (int i = 0; i < Data::kSamples; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "/v%02d.mp4", i);
        std::ifstream f(dir + name, std::ios::binary);
        made.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        if (made.back().empty()) break;
      }
    }
    std::system(("rm -rf '" + dir + "'").c_str());
    if (made.size() == static_cast<size_t>(Data::kSamples) && !made.back().empty()) {
      videos = std::move(made);
    }
  });
  return videos;
}

// VideoClips over indexed shards (video members sNN.mp4 + sNN.cls), one clip
// of 2 frames per video at a random start, with the suite's transforms run by
// the source (a clip has no image for the Loader's). A corrupt sample's
// member is bytes that are no video.
StatusOr<MadeSource> MakeVideoClips(const std::string& dir, const Data& data) {
  const std::vector<std::vector<uint8_t>>& videos = ConformanceVideos();
  STOKER_RETURN_IF_ERROR(Check(!videos.empty(), "ffmpeg making the videos"));
  const int per = Data::kSamples / Data::kShards;
  for (int s = 0; s < Data::kShards; ++s) {
    std::vector<TarEntry> entries;
    for (int i = s * per; i < (s + 1) * per; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "s%02d", i);
      entries.push_back({std::string(key) + ".mp4",
                         data.corrupt.count(i) ? kNotAnImage : videos[static_cast<size_t>(i)]});
      entries.push_back({std::string(key) + ".cls", Text(std::to_string(i))});
    }
    char name[32];
    std::snprintf(name, sizeof name, "/train-%02d.tar", s);
    WriteFile(dir + name, MakeTar(entries, TarFormat::kPax, TarFilter::kNone));
  }
  VideoClipsOptions o;
  o.shards = {ShardPattern(dir, ".tar")};
  o.clip_len = 2;
  o.transforms = {Transform::RandomResizedCrop(16, 16), Transform::RandomHorizontalFlip()};
  STOKER_ASSIGN_OR_RETURN(auto clips, VideoClips::Open(o));
  return MadeSource{clips, Labels(data.corrupt), nullptr};
}

}  // namespace

const std::vector<SourceFactory>& ConformanceSources() {
  static const std::vector<SourceFactory> sources = [] {
    std::vector<SourceFactory> v = {
      {"ImageFolder", MakeImageFolder},
      {"Npy", MakeNpy},
      {"NpyRecords", MakeNpyRecords},
      {"Hdf5", MakeHdf5},
      {"Hdf5Records", MakeHdf5Records},
      {"ShardsIndexed", MakeIndexedShards},
      {"ShardsStream", MakeStreamShards},
      {"ShardsStreamUnsized", MakeUnsizedStreamShards},
      {"ShardsHttp", MakeHttpShards},
      {"ShardsRecords", MakeIndexedShardRecords},
      {"SegmentationFolder", MakeSegmentationFolder},
      {"Coco", MakeCoco},
      {"ShardsRecordsStream", MakeStreamShardRecords},
      {"Mix", MakeMix},
      {"MixRecords", MakeMixRecords},
    };
    // Only in builds with FFmpeg (stoker/video.h); the videos come from the ffmpeg CLI.
    if (BuiltWithVideo()) v.push_back({"VideoClips", MakeVideoClips});
    return v;
  }();
  return sources;
}

}  // namespace stoker::testing
