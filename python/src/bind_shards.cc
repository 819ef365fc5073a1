// Copyright 2026 The stoker Authors.
//
// Binding for tar shards: _C.open_shards(...) returns a Source (see
// python/stoker/_shards.py for the user-facing stoker.Shards). Opening
// (pattern expansion, indexing) releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tuple>
#include <utility>

#include "stoker/sources.h"
#include "errors.h"
#include "target_args.h"

namespace py = pybind11;

namespace stoker::python {

void RegisterShards(py::module_& m) {
  m.def("built_with_curl", &BuiltWithCurl,
        "Whether this build reads http(s):// and s3:// shards (CMake STOKER_WITH_CURL: "
        "libcurl); without it such URLs raise, naming the reason.");
  m.def(
      "open_shards",
      [](const std::vector<std::string>& patterns, const std::string& image,
         const std::string& label, const std::string& mode, int shuffle_buffer,
         int concurrent_shards, const std::string& cache_dir, int max_attempts, int backoff_ms,
         int64_t cache_bytes, bool verify, const std::string& ca_file,
         const std::string& endpoint_url, int64_t length,
         const std::vector<std::tuple<std::string, std::string, std::string,
                                      std::vector<int64_t>, std::string,
                                      py::dict>>& fields) {
        ShardOptions o;
        o.patterns = patterns;
        for (const auto& f : fields) {
          ShardField field;
          field.name = std::get<0>(f);
          field.exts = SplitExtensions(std::get<1>(f));
          if (!std::get<2>(f).empty()) {  // a declared dtype and shape
            std::string name = std::get<2>(f);
            if (name.front() == '>') {  // big-endian elements (raw members)
              field.big_endian = true;
              name.erase(0, 1);
            }
            auto dtype = ParseElemType(name);
            if (!dtype.ok()) {
              throw py::value_error("Shards: fields['" + field.name + "']: dtype '" +
                                    std::get<2>(f) + "' is not read (" +
                                    dtype.status().message() + ")");
            }
            field.declared = true;
            field.dtype = dtype.value();
            field.shape = std::get<3>(f);
          }
          const std::string& image_mode = std::get<4>(f);
          if (!image_mode.empty()) {
            if (image_mode != "native" && image_mode != "rgb") {
              throw py::value_error("Shards: fields['" + field.name + "']: mode must be "
                                    "'native' or 'rgb', got '" + image_mode + "'");
            }
            field.mode_set = true;
            field.mode = image_mode == "native" ? ImageMode::kNative : ImageMode::kRGB;
          }
          // Targets: fields[name]'s target keys, parsed as Loader(targets=) parses a
          // declaration (target_args.h).
          if (!std::get<5>(f).empty()) {
            const TargetDecl d = ParseTargetDecl("Shards: fields['" + field.name + "']",
                                                 std::get<5>(f), /*box_rules=*/false);
            field.target = d.role;
            field.box_format = d.box_format;
            field.follows = d.follows;
            field.ignore_index = d.ignore_index;
          }
          o.spec.fields.push_back(std::move(field));
        }
        o.spec.image_exts = SplitExtensions(image);
        o.spec.label_ext = label;
        if (mode == "auto") o.mode = ShardMode::kAuto;
        else if (mode == "stream") o.mode = ShardMode::kStream;
        else if (mode == "indexed") o.mode = ShardMode::kIndexed;
        else throw py::value_error("mode must be 'auto', 'stream' or 'indexed', got '" + mode + "'");
        o.shuffle_buffer = shuffle_buffer;
        o.concurrent_shards = concurrent_shards;
        o.cache_dir = cache_dir;
        o.stream.max_attempts = max_attempts;
        o.stream.backoff_ms = backoff_ms;
        o.stream.cache_bytes = cache_bytes;
        o.stream.verify = verify;
        o.stream.ca_file = ca_file;
        o.stream.s3_endpoint = endpoint_url;
        o.length = length;
        StatusOr<std::shared_ptr<Source>> source = WithoutGil([&] {
          return OpenShards(o);
        });
        if (!source.ok()) Throw(source.status());
        return std::move(source).value();
      },
      py::arg("patterns"), py::arg("image"), py::arg("label"), py::arg("mode"),
      py::arg("shuffle_buffer"), py::arg("concurrent_shards"), py::arg("cache_dir"),
      py::arg("max_attempts"), py::arg("backoff_ms"), py::arg("cache_bytes"), py::arg("verify"),
      py::arg("ca_file"), py::arg("endpoint_url"), py::arg("length") = 0,
      py::arg("fields") =
          std::vector<std::tuple<std::string, std::string, std::string, std::vector<int64_t>,
                                 std::string, std::map<std::string, std::string>>>());
}

}  // namespace stoker::python
