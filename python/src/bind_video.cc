// Copyright 2026 The stoker Authors.
//
// Binding for stoker.VideoClips (include/stoker/video.h). Opening (listing the
// folder) and reading a clip release the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "stoker/types.h"
#include "stoker/video.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterVideo(py::module_& m) {
  m.def("built_with_video", &BuiltWithVideo,
        "Whether this build reads video (CMake STOKER_WITH_VIDEO: FFmpeg's libraries found); "
        "without it stoker.VideoClips raises, naming the reason.");
  py::class_<VideoClips, Source, std::shared_ptr<VideoClips>>(m, "VideoClips", R"doc(
Clips of video files (MP4, MKV, WebM, ...) decoded with FFmpeg: a record source whose
batches are {"video": [B, T, 3, H, W] (layout "TCHW") or [B, 3, T, H, W] ("CTHW"),
"label": [B]} (and "time": float64 [B, T] with with_times=True).

root_or_files: a folder with one sub-directory per class (labels from the sorted class
  names, as ImageFolder; files with one of `extensions`), or a list of file paths
  (labels -1, or `labels`: one int per file).
shards: instead, local uncompressed .tar shards in the webdataset layout (a pattern or a
  list: braces and globs as Shards takes them): a sample's video is its first member with
  one of `extensions` (KEY.mp4, KEY.mkv, ...), read in place (no copy, no temporary file),
  its label the integer text of the `label` member (default "cls"; "" : -1); class names
  from a classes.json beside the shards; each shard's tar index is cached beside it (or in
  index_dir). video_path(v) is "SHARD: member NAME".
clip_len: frames per clip. frame_stride: every frame_stride-th frame (presentation
  order); or frame_rate: frames at this many per second, each the last frame presented at
  or before its time (variable frame rates are exact: frames are chosen by timestamp).
clips_per_video: samples per video per epoch (sample i is clip i % clips_per_video of
  video i // clips_per_video). sampling: "random" (each clip's start drawn from
  (seed, epoch, video, clip), identical for any thread count) or "uniform" (stoker's
  rule: clip c of k starts at frame floor(c * r / (k - 1)) of the r + 1 possible starts,
  the middle one for k = 1; the same every epoch) or "all" (torchvision's VideoClips:
  every clip of every video, clip c of a video starting at frame c * step, `step` being
  torchvision's frames_between_clips; under frame_rate, at frame c * step of the video
  resampled to that rate; a video shorter than one clip has none; the epoch is every
  clip, and opening reads every video's index to count them) or "torchvision_uniform"
  (torchvision's UniformClipSampler over "all"'s clips: of a video's n clips,
  clips_per_video = k of them, clip floor(j * (n - 1) / (k - 1)) for j < k, clip 0 for
  k = 1, repeating when n < k; a video without a whole clip gives none). A video shorter than a clip repeats its last
  frame (random, uniform).
transforms: run on every frame of a clip with one random draw (the same crop, flip and
  colour change for all its frames); they must end in a fixed size (e.g.
  RandomResizedCrop(224)). None or []: frames at each video's own size (a list per batch).
dtype: "uint8" (raw pixels), or "float32"/"float16"/"bfloat16" (with Normalize among the
  transforms, normalised). codec_threads: FFmpeg's decoding threads per clip (1: the
  Loader's threads are the parallelism). max_pixels: larger frames are refused.
index_dir: a folder for the per-video indexes (frame and keyframe timestamps), reused by
  later runs while each video is unchanged (size, mtime, inode, ctime and a hash of its
  first and last 64 KiB); None: built once per source, in memory.
Errors: a file FFmpeg cannot read (truncated, empty), one without a video stream, frames
  above max_pixels or a clip's frames missing fail that sample naming the file
  (StokerError), or are skipped and counted under Loader(on_error="skip").)doc")
      .def(py::init([](const py::object& root_or_files, int clip_len,
                       std::optional<int> frame_stride, std::optional<double> frame_rate,
                       int clips_per_video, const std::string& sampling,
                       std::optional<std::vector<Transform>> transforms, const std::string& dtype,
                       const std::string& layout, int codec_threads, int64_t max_pixels,
                       bool with_times, std::optional<std::vector<int64_t>> labels,
                       std::optional<std::vector<std::string>> extensions,
                       const py::object& index_dir, const py::object& shards,
                       const std::string& label, int step) {
             VideoClipsOptions o;
             if (!shards.is_none()) {
               if (!root_or_files.is_none()) {
                 throw py::value_error("VideoClips: give root_or_files or shards=, not both");
               }
               if (py::isinstance<py::str>(shards) || !py::isinstance<py::sequence>(shards)) {
                 o.shards.push_back(FsPath(shards));
               } else {
                 for (const py::handle& p : shards) {
                   o.shards.push_back(FsPath(py::reinterpret_borrow<py::object>(p)));
                 }
               }
               if (o.shards.empty()) throw py::value_error("VideoClips: shards= is empty");
               o.shard_label = label;
             } else if (root_or_files.is_none()) {
               throw py::value_error("VideoClips: give a root folder, a list of files, or shards=");
             } else if (py::isinstance<py::list>(root_or_files) || py::isinstance<py::tuple>(root_or_files)) {
               for (const py::handle& f : root_or_files) {
                 o.files.push_back(FsPath(py::reinterpret_borrow<py::object>(f)));
               }
               if (o.files.empty()) throw py::value_error("VideoClips: the list of files is empty");
             } else {
               o.root = FsPath(root_or_files);
             }
             if (labels.has_value()) {
               if (o.files.empty()) {
                 throw py::value_error("VideoClips: labels= goes with a list of files (a folder's "
                                       "labels are its class sub-directories)");
               }
               o.labels = *labels;
             }
             o.clip_len = clip_len;
             if (frame_stride.has_value()) o.frame_stride = *frame_stride;
             if (frame_rate.has_value()) {
               if (!(*frame_rate > 0)) {
                 throw py::value_error("VideoClips: frame_rate must be a positive number of frames "
                                       "per second, got " + std::to_string(*frame_rate));
               }
               o.frame_rate = *frame_rate;
             }
             if (sampling == "random") {
               o.sampling = VideoClipsOptions::Sampling::kRandom;
             } else if (sampling == "uniform") {
               o.sampling = VideoClipsOptions::Sampling::kUniform;
             } else if (sampling == "all") {
               o.sampling = VideoClipsOptions::Sampling::kAll;
             } else if (sampling == "torchvision_uniform") {
               o.sampling = VideoClipsOptions::Sampling::kTorchvisionUniform;
             } else {
               throw py::value_error("VideoClips: sampling must be \"random\", \"uniform\", "
                                     "\"all\" or \"torchvision_uniform\", got " +
                                     py::repr(py::str(sampling)).cast<std::string>());
             }
             o.clips_per_video = clips_per_video;
             o.step = step;
             if (transforms.has_value()) o.transforms = std::move(*transforms);
             StatusOr<DType> d = ParseDType(dtype);
             if (!d.ok()) throw py::value_error("VideoClips: dtype: " + d.status().message());
             o.dtype = d.value();
             o.layout = layout;
             o.codec_threads = codec_threads;
             o.max_pixels = max_pixels;
             o.with_times = with_times;
             if (extensions.has_value()) o.extensions = *extensions;
             if (!index_dir.is_none()) o.index_dir = FsPath(index_dir);
             StatusOr<std::shared_ptr<VideoClips>> s = WithoutGil([&] {
               return VideoClips::Open(o);
             });
             if (!s.ok()) Throw(s.status());
             return std::move(s).value();
           }),
           py::arg("root_or_files") = py::none(), py::kw_only(), py::arg("clip_len") = 16,
           py::arg("frame_stride") = py::none(), py::arg("frame_rate") = py::none(),
           py::arg("clips_per_video") = 1, py::arg("sampling") = "random",
           py::arg("transforms") = py::none(), py::arg("dtype") = "uint8",
           py::arg("layout") = "TCHW", py::arg("codec_threads") = 1,
           py::arg("max_pixels") = int64_t{1} << 28, py::arg("with_times") = false,
           py::arg("labels") = py::none(), py::arg("extensions") = py::none(),
           py::arg("index_dir") = py::none(), py::arg("shards") = py::none(),
           py::arg("label") = "cls", py::arg("step") = 1)
      .def_property_readonly("num_videos", &VideoClips::num_videos)
      .def("video_path", &VideoClips::VideoPath, py::arg("video"),
           "The path of video `video` (sample i's video is video_of(i)).")
      .def("video_of",
           [](const VideoClips& s, int64_t index) {
             if (index < 0 || index >= s.size()) throw py::index_error("VideoClips.video_of: index " + std::to_string(index) + " out of range");
             return s.VideoOf(index);
           },
           py::arg("index"), "The video sample `index` is a clip of.")
      .def("clip_of",
           [](const VideoClips& s, int64_t index) {
             if (index < 0 || index >= s.size()) throw py::index_error("VideoClips.clip_of: index " + std::to_string(index) + " out of range");
             return s.ClipOf(index);
           },
           py::arg("index"), "Which clip of its video sample `index` is.")
      .def("frames_of",
           [](const VideoClips& s, int64_t index, uint64_t seed, int64_t epoch) {
             StatusOr<VideoClips::ClipFrames> f = WithoutGil([&] {
               return s.FramesOf(index, seed, epoch);
             });
             if (!f.ok()) Throw(f.status());
             return py::make_tuple(f.value().pts, f.value().seconds);
           },
           py::arg("index"), py::arg("seed") = 0, py::arg("epoch") = 0,
           "(pts, seconds) of the frames of clip `index` as a Loader with this seed reads it "
           "in this epoch: each frame's presentation timestamp (stream time base) and time.")
      .def("counters",
           [](const VideoClips& s) {
             const VideoClips::Counters c = s.counters();
             py::dict d;
             d["indexes_built"] = c.indexes_built;
             d["indexes_loaded"] = c.indexes_loaded;
             d["clips"] = c.clips;
             d["frames_decoded"] = c.frames_decoded;
             d["seeks"] = c.seeks;
             return d;
           },
           "Over the source's life: video indexes built (demuxed) and loaded (index_dir), "
           "clips decoded, frames decoded "
           "(every frame the decoder produced, wanted or not) and seeks made.");
}

}  // namespace stoker::python
