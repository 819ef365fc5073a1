// Copyright 2026 The stoker Authors.
//
// `stoker convert`: a source (image folder, .npy, HDF5) into tar shards.

#include <unistd.h>

#include "cli_checks.h"
#include "cli_support.h"
#include "command.h"

#include <chrono>
#include <cstring>
#include <cstdio>
#include <string>

#include "source_path.h"
#include "stoker/convert.h"
#include "stoker/json.h"
#include "stoker/sources.h"

namespace stoker {

namespace {

struct ConvertCommand : Command {
  using Command::Command;
  int Run() override;
  std::string src, dest, labels, layout, images = "images", prefix = "shard", shard_size = "1GB", compress = "none";
  std::vector<std::string> fields;  // --field NAME=EXT[;EXT...] (tar shards: records)
  std::string masks, image_suffix, mask_suffix, coco, coco_masks;  // targets' sources
  std::string coco_labels = "category_id", coco_crowd = "drop";
  bool drop_empty = false;
  int64_t samples_per_shard = 0;
  int resize = 0, quality = 90, subsampling = 444, threads = 0;
  bool overwrite = false, json = false, progress = true;
};

// "1GB" (10^9), "512MiB" (2^29), "100k", "12345" (bytes).
StatusOr<int64_t> ParseSize(const std::string& text) {
  size_t i = 0;
  double v = 0;
  try {
    v = std::stod(text, &i);
  } catch (...) {
    return InvalidArgumentError("bad size '" + text + "'");
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB") mult = 1e3;
  else if (unit == "M" || unit == "MB") mult = 1e6;
  else if (unit == "G" || unit == "GB") mult = 1e9;
  else if (unit == "KIB") mult = 1024.0;
  else if (unit == "MIB") mult = 1048576.0;
  else if (unit == "GIB") mult = 1073741824.0;
  if (mult == 0 || v < 0) return InvalidArgumentError("bad size '" + text + "'");
  return static_cast<int64_t>(v * mult);
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) b /= 1000, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

}  // namespace

std::unique_ptr<Command> AddConvertCommand(CLI::App* app) {
  auto c = std::make_unique<ConvertCommand>(app->add_subcommand(
      "convert",
      "Write a source (an image folder, a .npy array with --labels, or HDF5 datasets) as tar "
      "shards in the "
      "WebDataset layout: per sample KEY.jpg or KEY.png (the original bytes, or re-encoded "
      "JPEG when resized) and KEY.cls (the label). Shards appear under their final names "
      "only when complete; an interrupted run leaves a temporary file, which the next run "
      "removes. Prints what it wrote."));
  CLI::App* s = c->sub();
  s->add_option("SRC", c->src, "image folder (SRC/<class>/<image>), images .npy, or .h5/.hdf5")
      ->required();
  s->add_option("DEST", c->dest, "output directory (created if missing)")->required();
  s->add_option("--prefix", c->prefix, "shard names: DEST/PREFIX-000000.tar ...")
      ->capture_default_str();
  s->add_option("--shard-size", c->shard_size,
                "start a new shard before one exceeds this much tar data (before "
                "compression): 1GB = 10^9 bytes, 1GiB = 2^30, 0 = no limit")
      ->capture_default_str();
  s->add_option("--samples-per-shard", c->samples_per_shard,
                "at most N samples per shard (0 = no limit; with --shard-size, the first "
                "limit reached wins)")
      ->check(kNonNegative);
  s->add_option("--resize", c->resize,
                "pre-resize: images whose shorter side is longer than N get shorter side N "
                "(torchvision's Resize(N), Pillow's antialiased bilinear) and are re-encoded "
                "as JPEG; smaller ones keep their bytes. 0 = keep every image as it is")
      ->check(kNonNegative)->capture_default_str();
  s->add_option("--quality", c->quality, "JPEG quality of re-encoded images")
      ->check(CLI::Range(1, 100))->capture_default_str();
  s->add_option("--subsampling", c->subsampling, "chroma subsampling of re-encoded images")
      ->check(CLI::IsMember({444, 422, 420}))->capture_default_str();
  s->add_option("--compress", c->compress, "none (.tar), gzip (.tar.gz) or zstd (.tar.zst)")
      ->check(CLI::IsMember({"none", "gzip", "zstd"}))->capture_default_str();
  s->add_option("--threads", c->threads, "read/decode/resize/encode threads (0: one per core)")
      ->check(kNonNegative)->capture_default_str();
  s->add_option("--labels", c->labels,
                ".npy source: 1-D labels .npy (omitted: no .cls members); HDF5 source: the "
                "labels dataset (default \"labels\"; \"\" for none)");
  s->add_option("--images", c->images, "HDF5 source: the images dataset")->capture_default_str();
  s->add_option("--field", c->fields,
                "a record field (repeat it): tar shards source NAME=EXT[;EXT...] (--field "
                "image=jpg --field caption=txt); .h5/.hdf5 source NAME=DATASET (DATASET:json "
                "for a json field of strings); a directory SRC NAME=FILE.npy (aligned arrays, "
                "relative to SRC). Each field is written as KEY.NAME.<ext of its kind> "
                "(the image as KEY.<format>, the label as KEY.cls)");
  s->add_option("--masks", c->masks,
                "image directory source: pair its images with the masks in MASKS by file stem "
                "(SegmentationFolder); each mask is written as KEY.mask.<its format>");
  s->add_option("--image-suffix", c->image_suffix,
                "with --masks: the end of an image's stem that is not its key (Cityscapes: "
                "_leftImg8bit)");
  s->add_option("--mask-suffix", c->mask_suffix,
                "with --masks: the end of a mask's stem that is not its key (Cityscapes: "
                "_gtFine_labelIds)");
  s->add_option("--coco", c->coco,
                "image directory source: COCO instances annotations (.json) over its images; "
                "written as KEY.<image>, KEY.boxes.npy (xywh), KEY.labels.npy, "
                "KEY.iscrowd.npy, KEY.area.npy");
  s->add_option("--coco-masks", c->coco_masks,
                "with --coco: none, semantic (KEY.mask.npy) or instances (KEY.masks.npy)")
      ->check(CLI::IsMember({"none", "semantic", "instances"}));
  s->add_option("--coco-labels", c->coco_labels,
                "with --coco: category_id (the ids as written, torchvision's; the default), "
                "1..K or 0..K-1 (sorted ids numbered from 1 or 0)")
      ->check(CLI::IsMember({"category_id", "1..K", "0..K-1"}));
  s->add_option("--coco-crowd", c->coco_crowd,
                "with --coco: drop (leave crowd annotations out, torchvision's; the default) "
                "or keep (flagged in KEY.iscrowd.npy)")
      ->check(CLI::IsMember({"drop", "keep"}));
  s->add_flag("--drop-empty", c->drop_empty, "with --coco: leave out images without annotations");
  s->add_option("--layout", c->layout, ".npy source: NHWC or NCHW (default: from the shape)")
      ->check(OneOf(kLayoutChoices));
  s->add_flag("--overwrite", c->overwrite,
              "replace shards with this prefix already in DEST (without it, convert refuses)");
  s->add_flag("--json", c->json, "print one JSON object instead of the summary line");
  s->add_flag("!--no-progress", c->progress, "no progress bar (it is shown only on a terminal)");
  return c;
}

namespace {
bool LabelsGiven(const ConvertCommand& c) { return c.sub()->count("--labels") > 0; }
}  // namespace

int ConvertCommand::Run() {
  const ConvertCommand& c = *this;
  auto fail = [&c](const Status& s) { return ReportError("convert", s, c.json); };
  ConvertOptions o;
  auto size = ParseSize(c.shard_size);
  if (!size.ok()) return fail(size.status());
  auto compression = ParseCompression(c.compress);
  if (!compression.ok()) return fail(compression.status());
  o.shards.dir = c.dest;
  o.shards.prefix = c.prefix;
  o.shards.compression = compression.value();
  o.shards.max_shard_bytes = size.value();
  o.shards.max_shard_samples = c.samples_per_shard;
  o.shards.overwrite = c.overwrite;
  o.resize = c.resize;
  o.quality = c.quality;
  o.subsampling = c.subsampling;
  o.threads = c.threads;
  SourcePathOptions so;
  so.labels = c.labels;
  so.labels_given = LabelsGiven(c);
  so.images = c.images;
  so.layout = c.layout;
  so.fields = c.fields;
  so.masks = c.masks;
  so.image_suffix = c.image_suffix;
  so.mask_suffix = c.mask_suffix;
  so.coco = c.coco;
  so.coco_masks = c.coco_masks;
  so.coco_labels = c.coco_labels;
  so.coco_crowd = c.coco_crowd;
  so.drop_empty = c.drop_empty;
  auto source = OpenSourceFromPath(c.src, so);
  if (!source.ok()) return fail(source.status());
  const bool bar = c.progress && ::isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  double last = -1;
  if (bar) {
    o.progress = [&](int64_t done, int64_t total, int64_t bytes) {
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (done != total && t - last < 0.1) return;
      last = t;
      const int width = 30;
      const int fill = total > 0 ? static_cast<int>(width * done / total) : width;
      const double rate = t > 0 ? done / t : 0;
      std::string b(static_cast<size_t>(fill), '#');
      b.resize(width, '.');
      std::fprintf(stderr, "\r[%s] %lld/%lld  %3d%%  %.0f samples/s  %s  ETA %.0f s   ",
                   b.c_str(), static_cast<long long>(done), static_cast<long long>(total),
                   total > 0 ? static_cast<int>(100 * done / total) : 100, rate,
                   HumanBytes(static_cast<double>(bytes)).c_str(),
                   rate > 0 ? (total - done) / rate : 0.0);
    };
  }
  auto r = ConvertToShards(source.value().get(), o);
  if (bar) std::fprintf(stderr, "\n");  // ends the bar's line
  if (!r.ok()) return fail(r.status());
  const ConvertResult& res = r.value();
  const double rate = res.seconds > 0 ? res.samples / res.seconds : 0;
  if (c.json) {
    std::string out = "{\"tool\": \"convert\", \"source\": " + JsonQuote(source.value()->Describe()) +
                      ", \"dest\": " + JsonQuote(c.dest) +
                      ", \"shards\": " + std::to_string(res.shards.size()) +
                      ", \"samples\": " + std::to_string(res.samples) +
                      ", \"reencoded\": " + std::to_string(res.reencoded) +
                      ", \"input_bytes\": " + std::to_string(res.input_bytes) +
                      ", \"output_bytes\": " + std::to_string(res.output_bytes) +
                      ", \"seconds\": " + std::to_string(res.seconds) +
                      ", \"samples_per_sec\": " + std::to_string(rate) + ", \"paths\": [";
    for (size_t i = 0; i < res.shards.size(); ++i) {
      out += (i ? ", " : "") + JsonQuote(res.shards[i].path);
    }
    std::printf("%s]}\n", out.c_str());
    return 0;
  }
  std::string names = "(none)";
  if (!res.shards.empty()) {
    names = res.shards.front().path;
    if (res.shards.size() > 1) names += " .. " + res.shards.back().path;
  }
  std::printf("wrote %zu shard(s), %lld samples (%lld re-encoded), %s in %.2f s (%.0f "
              "samples/s): %s\n",
              res.shards.size(), static_cast<long long>(res.samples),
              static_cast<long long>(res.reencoded),
              HumanBytes(static_cast<double>(res.output_bytes)).c_str(), res.seconds, rate,
              names.c_str());
  return 0;
}

}  // namespace stoker
