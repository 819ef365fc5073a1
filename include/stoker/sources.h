// Copyright 2026 The stoker Authors.
//
// The concrete sources: how to open each kind of data as a Source for
// Loader::Create. Each is a public abstract class with a static Open()
// factory (its implementation lives inside the library):
//
//   auto folder = ImageFolder::Open("data/train").value();          // image files
//   auto arrays = NpySource::Open("x.npy", "y.npy").value();        // memory-mapped .npy
//   auto h5 = Hdf5Source::Open("data.h5", "images", "labels").value();
//   ShardOptions o; o.patterns = {"data/train-{000000..000146}.tar"};
//   auto shards = OpenShards(o).value();                            // WebDataset tar shards
//
// Ownership: the factories return shared pointers; the Loader keeps its source
// alive for its own lifetime, so the caller may drop its reference.
// Thread-safety: every source is immutable after Open(); reads (ReadIndex,
// an EpochReader's Read) are thread-safe; StartEpoch is called from one thread
// at a time (source.h).
// Errors: Open returns NotFound when the path does not exist, InvalidArgument
// naming the file and the reason for malformed or unusable data, Unimplemented
// for valid data stoker does not serve. Read errors name the sample.
#ifndef STOKER_SOURCES_H_
#define STOKER_SOURCES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/source.h"
#include "stoker/status.h"
#include "stoker/stream.h"  // StreamOptions, ShardCacheCounters, BuiltWithCurl

namespace stoker {

// A directory with one sub-directory per class, like
// torchvision.datasets.ImageFolder. Classes are the sub-directories sorted by
// name (byte order) and get label ids 0, 1, ...; inside each class the tree is
// walked recursively (symbolic links followed, loops detected), directories in
// sorted order and files sorted by name, keeping torchvision's IMG_EXTENSIONS
// (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp) in any case. This is torchvision's order, so index i names the same
// file in both. Open fails with NotFound when the root does not exist and
// InvalidArgument when it has no class directories or a class has no images.
class ImageFolder : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<ImageFolder>> Open(const std::string& root);

  virtual const std::string& root() const = 0;
  // Path of sample `index` (root joined with its relative path).
  virtual std::string Path(int64_t index) const = 0;
  virtual int64_t Label(int64_t index) const = 0;
};

// A .npy array of images, memory-mapped, plus optional .npy labels.
//  - images: uint8, C order, 4-D [N, H, W, C] or [N, C, H, W] with C 3 (RGB)
//    or 1 (grey, replicated to RGB). The layout is read from the shape (C last
//    is NHWC, else C second is NCHW; ambiguous shapes read as NHWC) unless
//    `layout` is "NHWC" or "NCHW". NHWC RGB samples are handed out zero-copy
//    (pointers into the mapping, valid while the source lives).
//  - labels (`labels_path` may be empty: every label -1): a 1-D array of N
//    values of any numeric dtype (integers, bools, floats holding integral
//    values), either byte order, read once into int64.
class NpySource : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<NpySource>> Open(const std::string& images_path,
                                                   const std::string& labels_path,
                                                   const std::string& layout = "");
  // Records (stoker/record.h): several aligned .npy arrays, one array field
  // each, in the order given ({name, path}). Each array is C order, native
  // byte order, of any numpy dtype (bool, int8..int64, uint8..uint64,
  // float16/32/64) and shape [N, ...]; sample i of field f is row i of its
  // array, a [...]-shaped array, handed out zero-copy (a pointer into the
  // mapping) and copied once into the batch. Every array must have the same
  // N (InvalidArgument naming both fields otherwise). height(), width() and
  // channels() are 0.
  static StatusOr<std::shared_ptr<NpySource>> OpenFields(
      const std::vector<std::pair<std::string, std::string>>& fields);

  virtual int height() const = 0;
  virtual int width() const = 0;
  virtual int channels() const = 0;
  virtual bool nchw() const = 0;
  // Every sample is height() x width() (0 for records).
  bool FixedImageSize(int* height, int* width) const override {
    if (this->height() <= 0 || this->width() <= 0) return false;
    *height = this->height();
    *width = this->width();
    return true;
  }
  // True when samples are served without a copy (NHWC with 3 channels).
  bool zero_copy() const { return !nchw() && channels() == 3; }
};

// Samples from datasets of an HDF5 file. The images dataset is either raw
// pixels (uint8 [N, H, W, 3], read by hyperslab; decoding skipped) or encoded
// images (1-D [N] of variable-length uint8: encoded image bytes). The labels
// dataset (empty name: every label -1) is 1-D [N] of integers or integral
// floats, read once at Open. Debian's libhdf5 is serial: every HDF5 call made
// by stoker takes one process-wide mutex (reads are serialised, decoding stays
// parallel); no HDF5 handle is held until the first read, and a forked child
// opens its own. Read errors are IoError/DataLoss naming the sample.
class Hdf5Source : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<Hdf5Source>> Open(const std::string& path,
                                                    const std::string& images = "images",
                                                    const std::string& labels = "labels");
  // Records (stoker/record.h): several aligned datasets of the file, one field
  // each, in the order given ({field name, dataset path}). Each dataset is
  // [N, ...] with one N (InvalidArgument naming both datasets and lengths
  // otherwise). Kinds from the dataset's type:
  //  - any integer, float (16/32/64 bits) or h5py bool (an int8 enum
  //    FALSE/TRUE) dataset: an array field of the per-sample shape [...];
  //  - 1-D variable-length uint8: a bytes field;
  //  - strings (variable or fixed length, h5py.string_dtype): a text field
  //    (UTF-8 checked by the engine);
  //  - a field "image" of uint8 [N, H, W, 3] (raw pixels) or 1-D
  //    variable-length uint8 (encoded images) is the primary image, a field
  //    "label" of 1-D integers the primary label (read once here).
  // The fields named in `json` are json fields instead of text (their
  // dataset must hold strings; each is checked to parse, per sample, by the
  // engine): per-sample metadata. Attributes (HDF5 attrs) are not read.
  // A sample's fields are read under one acquisition of the HDF5 mutex, by
  // hyperslab into the worker's scratch. `max_sample_bytes` bounds a
  // sample's bytes, checked before anything is read: the fixed-size fields'
  // from the datasets' shapes and dtypes at Open (InvalidArgument naming the
  // field, its dataset and its bytes: a few MB of compressed chunks can
  // declare gigabytes per sample), a variable-length one's from its length
  // before it is read (the sample's DataLoss, skippable).
  static StatusOr<std::shared_ptr<Hdf5Source>> OpenFields(
      const std::string& path, const std::vector<std::pair<std::string, std::string>>& fields,
      const std::vector<std::string>& json = {}, int64_t max_sample_bytes = int64_t{256} << 20);

  // True for a raw-pixel dataset, false for encoded bytes.
  virtual bool raw() const = 0;
  virtual int height() const = 0;
  virtual int width() const = 0;
  // Raw pixel arrays: every sample is height() x width().
  bool FixedImageSize(int* height, int* width) const override {
    if (!raw() || this->height() <= 0 || this->width() <= 0) return false;
    *height = this->height();
    *width = this->width();
    return true;
  }
  // Whether an HDF5 file handle is open now (it is opened on the first read).
  virtual bool is_open() const = 0;
};

// Segmentation pairs: images_dir and masks_dir walked recursively (as
// ImageFolder walks a class: symbolic links followed, image extensions in any
// case), each image paired with the mask of the same key: its path relative
// to its folder without the extension (and without `image_suffix` /
// `mask_suffix` at the end of the stem, when given: Cityscapes'
// "_leftImg8bit" / "_gtFine_labelIds"; with a suffix, only files whose stem
// ends with it are taken on that side). Samples in key order (byte order).
// Fields: "image" (the primary image, RGB) and "mask" (an image field decoded
// as stored, target kMask: one channel, uint8 or uint16; palette PNGs, as
// VOC's, give their palette indices; an RGB mask is an error of its sample
// naming the file). Open fails (InvalidArgument) when a key has no partner on
// either side, naming the first ones and the count of each, when two files
// of one folder share a key, or when there are no pairs.
struct SegmentationFolderOptions {
  std::string image_suffix;
  std::string mask_suffix;
  // The masks' declared element type: "uint8" (the default: VOC, ADE20K and
  // Cityscapes masks are 8-bit, and a declared type lets masks of a fixed
  // output size stack into one [B, H, W] tensor), "uint16", or "" (each as
  // its file holds: masks come as a list). A mask of another depth than the
  // declared one is an error of its sample naming both. Open fails
  // (InvalidArgument) for any other value.
  std::string mask_dtype = "uint8";
  // A text file of keys, one per line (VOC's ImageSets/Segmentation/train.txt;
  // blank lines and surrounding spaces ignored): only these samples, in the
  // file's order (torchvision's VOCSegmentation order), the other files of
  // both folders left alone. Empty: every file, paired, in key order. A
  // listed key without an image or a mask, or listed twice, fails Open
  // (InvalidArgument naming the file and the first keys); so does a file that
  // cannot be read or lists no key.
  std::string split;
};

class SegmentationFolder : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<SegmentationFolder>> Open(
      const std::string& images_dir, const std::string& masks_dir,
      const SegmentationFolderOptions& options = {});
  virtual std::string ImagePath(int64_t index) const = 0;
  virtual std::string MaskPath(int64_t index) const = 0;
};

// COCO instances annotations (the "images", "annotations", "categories" of a
// JSON file such as instances_train2017.json) over the image files in
// images_dir (joined with each image's file_name). Samples are the images in
// order of their id (torchvision's CocoDetection order), each with the
// annotations listing its image_id in file order. Fields:
//  - "image": the primary image (RGB);
//  - "boxes": float32 [N, 4], the annotations' "bbox" as stored (xywh,
//    pixels), target kBoxes, format kXYWH;
//  - "labels": int64 [N], target kPerBox following "boxes": by default the
//    annotation's category_id as the file writes it (torchvision's detection
//    references: label 0 is the models' background, so a category id 0 is
//    refused; num_classes() = largest id + 1), or (CocoOptions::labels) the
//    category's rank in sorted id order from 1 (0 stays background) or from
//    0; category_ids()[k] and category_labels()[k] pair ids and labels;
//  - "iscrowd": int64 [N] and "area": float32 [N], kPerBox following "boxes";
//  - with masks kSemantic, "mask": uint8 [H, W] (uint16 when the values or
//    ignore_index need it), target kMask: 0 background, the label (label + 1
//    for labels from 0) where one non-crowd annotation covers the pixel,
//    ignore_index where a crowd annotation or more than one annotation
//    covers it (torchvision's segmentation reference, crowds ignored too);
//  - with masks kInstances, "masks": uint8 [N, H, W] of 0/1, one per box,
//    kPerBox following "boxes" (moved like a mask, padding 0, by geometric
//    transforms: ops/targets.h).
// Crowd annotations (iscrowd != 0) are left out of the per-box fields by
// default, as torchvision's detection references do (they still mark the
// semantic mask's ignored pixels); CocoOptions::drop_crowd = false keeps
// them, in file order, flagged by "iscrowd".
// Segmentations are polygons (rasterised as pycocotools does:
// source/coco_masks.h) or RLE, uncompressed or compressed; read only when
// masks are asked for. Images without annotations are samples with N = 0
// unless drop_empty. Open fails (InvalidArgument naming the image or
// annotation id) on: an image without file_name or id, a duplicate image id,
// an annotation of an unknown image or category, a bbox that is not 4
// numbers or has a negative width or height, and (with masks) a
// segmentation that does not fit its image. A missing image file is an error
// of its sample when read (IoError naming the path), so on_error="skip"
// counts and skips it; Open does not stat every file.
struct CocoOptions {
  bool drop_empty = false;
  // The "labels" values: kCategoryId (the default, torchvision's), kFrom1
  // (1..K in sorted id order), kFrom0 (0..K-1).
  enum class Labels { kCategoryId, kFrom1, kFrom0 };
  Labels labels = Labels::kCategoryId;
  bool drop_crowd = true;
  enum class Masks { kNone, kSemantic, kInstances };
  Masks masks = Masks::kNone;
  int64_t ignore_index = 255;
  // The most points one polygon of a segmentation may have (with masks):
  // Open refuses an annotation past it, naming it. Rasterising costs, per
  // edge, the pixel columns it crosses, so points bound the work. COCO's
  // own polygons have at most a few hundred.
  int64_t max_polygon_points = 100000;
};

// CocoOptions from the names Python and the CLI take: masks "none" (or
// empty), "semantic", "instances"; labels "category_id", "1..K", "0..K-1";
// crowd "drop", "keep". InvalidArgument naming the value and the choices.
Status ParseCocoOptions(const std::string& masks, const std::string& labels,
                        const std::string& crowd, CocoOptions* options);

class CocoSource : public RandomAccessSource {
 public:
  static StatusOr<std::shared_ptr<CocoSource>> Open(const std::string& images_dir,
                                                    const std::string& annotations_json,
                                                    const CocoOptions& options = {});
  // The categories in sorted id order: their COCO ids, their "labels"
  // values (CocoOptions::labels), and (classes()) their names.
  virtual std::vector<int64_t> category_ids() const = 0;
  virtual std::vector<int64_t> category_labels() const = 0;
  // The num_classes a model takes for these labels: the largest label + 1
  // (background included where 0 is reserved for it).
  virtual int64_t num_classes() const = 0;
  virtual int64_t image_id(int64_t index) const = 0;
  virtual std::string Path(int64_t index) const = 0;
};

// Whether this build reads HDF5 (CMake option STOKER_WITH_HDF5, default on). Without
// it, Hdf5Source::Open returns Unimplemented saying that stoker was built without HDF5.
bool BuiltWithHdf5();

// ---- Tar shards in the WebDataset convention, local or over HTTP ----
//
// Members that share a key (the member path up to the first dot of its
// basename: "a/n0144_10026.jpg" -> key "a/n0144_10026", extension "jpg") form
// one sample; its image is the member whose extension is in `image_exts` (the
// first listed wins), its label the integer text of the `label_ext` member.

// One field of a record read from shards (ShardOptions::spec.fields): its
// name and the member extensions that hold it, in order of preference (the
// first present wins; matched case-insensitively, as webdataset lowercases
// extensions). Its kind follows the extension (ShardFieldKind).
struct ShardField {
  std::string name;
  std::vector<std::string> exts;
  // Array (.npy) fields only: the dtype and per-sample shape every member
  // holds, when declared. The field is then fixed (stacked into one pooled
  // block per batch) and a member of another dtype or shape is an error of
  // its sample naming the field; undeclared, each member keeps its own
  // (a list per batch). A dimension of -1 varies from member to member: the
  // field is then variable (a list per batch, padded under collate="pad") and
  // a member of another dtype or number of dimensions is its sample's error.
  // Image fields may declare theirs too (uint8 or uint16, [H, W, C] with C
  // 1..4): every decoded member must then be exactly that, stacked into one
  // block; the primary (transformed) image may not declare one.
  // A member of any other extension that would be bytes (not an image, text,
  // json, label or .npy: "emb.f32", "bin") declared with a dtype and shape is
  // raw elements, C order: an array field whose member must hold exactly
  // dtype x shape bytes (one dimension of -1: a multiple, that dimension
  // then follows from the size), else an error of its sample naming the
  // field and both sizes. Little-endian unless `big_endian` (raw members
  // only: byte-swapped as read).
  bool declared = false;
  ElemType dtype = ElemType::kFloat32;
  std::vector<int64_t> shape;
  bool big_endian = false;
  // Image fields only: the decode mode, when set (mode_set); else the primary
  // image (the field "image", else the first image field) is kRGB (decoded,
  // made RGB and transformed) and every other image field kNative (decoded as
  // stored: grey/RGBA/16 bits, untransformed; see ImageDecoder::DecodeNative).
  // A non-primary field in kRGB is decoded to 8-bit RGB, untransformed.
  bool mode_set = false;
  ImageMode mode = ImageMode::kNative;
  // A target that follows the image (stoker/record.h): kMask on an image
  // field (decoded as stored to one channel, palette PNGs to their indices;
  // never the primary image) or a .npy field (uint8/uint16 [H, W] when
  // declared); kBoxes on a .npy or a .json field (float32 [N, 4] in
  // `box_format`: declared so when not declared; a JSON member is a list of
  // lists of 4 numbers, read as float32); kPerBox on a .npy field, its rows
  // following the kBoxes field `follows` names ("" : "boxes"); kKeypoints on
  // a .npy field. `ignore_index`: a mask's padding value.
  TargetRole target = TargetRole::kNone;
  BoxFormat box_format = BoxFormat::kXYXY;
  int64_t ignore_index = 255;
  std::string follows;
};

// The kind a member extension decodes to (the last dot-separated part of it
// decides: "depth.png" is an image): jpg, jpeg, png, webp, tif, tiff, bmp,
// ppm, pgm, pbm -> kImage; txt, text, caption -> kText; json -> kJson; npy ->
// kArray (dtype and shape from each member's header); cls, cls2, class,
// count, index, inx, id, label -> kLabel (integer text, as webdataset's
// decoders read them); anything else -> kBytes. A field whose extensions
// disagree on the kind is InvalidArgument naming it.
StatusOr<FieldKind> ShardFieldKind(const ShardField& field);

// The schema of a record spec: one FieldSpec per field, in order (arrays of
// per-sample dtype and shape; image modes as ShardField says). Errors name
// the field.
StatusOr<Schema> ShardSchema(const std::vector<ShardField>& fields);

struct SampleSpec {
  // Records: when non-empty, a sample is these named fields and image_exts
  // and label_ext are not read. A sample missing a field is an error of that
  // sample naming its key and the field.
  std::vector<ShardField> fields;
  std::vector<std::string> image_exts = {"jpg", "png", "jpeg", "webp", "tif", "tiff",
                                         "bmp", "ppm", "pgm", "pbm"};
  std::string label_ext = "cls";  // "" : every label -1
  // A negative label (".cls" of "-5") is an error unless this is set: it
  // would index outside any class table.
  bool allow_negative_labels = false;
  // Members (images, labels) larger than this are errors, not allocations
  // (max_sample_bytes, 256 MiB). Below it, memory follows the bytes present.
  int64_t max_member_bytes = int64_t{256} << 20;
  // A shard that ends at a member boundary without the end-of-archive
  // blocks (the zero blocks every tar writer appends; a copy cut between two
  // members leaves none) is an error after its last sample when set;
  // otherwise it ends as if complete and is counted in
  // Source::truncated_shards(). Shards sets it in indexed mode and, in
  // stream mode, under a declared length.
  bool require_end_of_archive = false;
};

// kIndexed: every shard indexed once and read by random access (default for
// local uncompressed .tar; behaves like an image folder: exact per-epoch
// permutation, size() known). kStream: shards read sequentially (default for
// .tar.gz/.tgz/.tar.zst and URLs); shuffled epochs permute the shard order,
// interleave `concurrent_shards` shards and pass samples through a shuffle
// buffer, all driven by (seed, epoch); size() is -1; sample ids are
// (shard index << 32) | ordinal in the shard.
enum class ShardMode { kAuto, kStream, kIndexed };

struct ShardOptions {
  // Brace ranges with zero padding ("{000..146}") and lists ("{a,b}"),
  // expanded left to right; then, for local paths, glob(3) wildcards (sorted
  // matches), and for s3:// URLs glob wildcards or a trailing '/' (every
  // object under the prefix), listed with ListObjectsV2. A pattern that
  // matches nothing is an error.
  std::vector<std::string> patterns;
  SampleSpec spec;
  ShardMode mode = ShardMode::kAuto;
  // Stream mode: samples held for shuffling (0: no buffer, shard order only).
  int shuffle_buffer = 1000;
  // Stream mode: shards open at once, interleaved round-robin.
  int concurrent_shards = 4;
  // Stream mode: the declared number of samples per epoch (0: unknown).
  // Needed for several ranks (every rank then yields the same number of
  // batches, its share of `length`; a rank whose shards run short reads them
  // again, and samples past its share are not read this epoch) and gives
  // the Loader a len().
  int64_t length = 0;
  // Remote shards (downloaded once, shared by the node's processes), and
  // indexes of read-only local shards. Overrides stream.cache_dir when set.
  std::string cache_dir;
  StreamOptions stream;
};

// A Source over the shards. Fails on bad options, patterns matching nothing
// and (indexed mode) shards that cannot be opened. In stream mode a damaged
// shard yields one error at the position where the damage was met and the
// stream goes on with the next shard.
StatusOr<std::shared_ptr<Source>> OpenShards(const ShardOptions& options);

// Parses "jpg;png;jpeg" into its parts (empty parts dropped).
std::vector<std::string> SplitExtensions(const std::string& list);

}  // namespace stoker

#endif  // STOKER_SOURCES_H_
