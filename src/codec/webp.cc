// Copyright 2026 The stoker Authors.
//
// WebP through libwebp: lossy, lossless and with alpha (dropped, as
// Pillow's convert("RGB") drops it; the colour channels are not blended).
// An animated file gives its first frame as libwebpdemux's WebPAnimDecoder
// composes it, which is what Pillow (built on the same decoder) shows.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <string>

#include "codec/formats.h"

namespace stoker::codec_internal {
namespace {

const char* Vp8Reason(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "data is truncated";
  }
  return "unknown error";
}

Status Features(const uint8_t* data, size_t size, WebPBitstreamFeatures* f) {
  const VP8StatusCode code = WebPGetFeatures(data, size, f);
  if (code != VP8_STATUS_OK) {
    return DataLossError(std::string("WebP: cannot read the headers: ") + Vp8Reason(code));
  }
  return Status::OK();
}

}  // namespace

bool IsWebp(const uint8_t* data, size_t size) {
  return size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0;
}

Status WebpInfo(const uint8_t* data, size_t size, int* width, int* height) {
  WebPBitstreamFeatures f;
  STOKER_RETURN_IF_ERROR(Features(data, size, &f));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(f.width, f.height, 0));
  *width = f.width;
  *height = f.height;
  return Status::OK();
}

Status DecodeWebp(const uint8_t* data, size_t size, int64_t max_pixels, RgbImage* out) {
  WebPBitstreamFeatures f;
  STOKER_RETURN_IF_ERROR(Features(data, size, &f));
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(f.width, f.height, max_pixels));
  const int w = f.width, h = f.height;
  if (!f.has_animation) {
    out->Resize(w, h);
    const size_t bytes = static_cast<size_t>(out->stride()) * h;
    if (WebPDecodeRGBInto(data, size, out->data(), bytes, static_cast<int>(out->stride())) ==
        nullptr) {
      // Find out why: a full decode into libwebp's own buffer says.
      WebPDecoderConfig config;
      if (!WebPInitDecoderConfig(&config)) return InternalError("WebP: bad libwebp version");
      config.output.colorspace = MODE_RGB;
      config.output.is_external_memory = 1;
      config.output.u.RGBA.rgba = out->data();
      config.output.u.RGBA.stride = static_cast<int>(out->stride());
      config.output.u.RGBA.size = bytes;
      const VP8StatusCode code = WebPDecode(data, size, &config);
      WebPFreeDecBuffer(&config.output);
      return DataLossError(std::string("WebP: ") +
                           Vp8Reason(code == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : code));
    }
    return Status::OK();
  }
  // Animated: the first frame, composed on the canvas.
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) return InternalError("WebP: bad libwebp version");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  WebPData webp_data{data, size};
  WebPAnimDecoder* dec = WebPAnimDecoderNew(&webp_data, &options);
  if (dec == nullptr) return DataLossError("WebP: cannot parse the animation");
  WebPAnimInfo info;
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  Status status;
  if (!WebPAnimDecoderGetInfo(dec, &info)) {
    status = DataLossError("WebP: cannot read the animation's headers");
  } else if (info.canvas_width != static_cast<uint32_t>(w) ||
             info.canvas_height != static_cast<uint32_t>(h)) {
    status = DataLossError("WebP: canvas size disagrees with the headers");
  } else if (!WebPAnimDecoderGetNext(dec, &rgba, &timestamp) || rgba == nullptr) {
    status = DataLossError("WebP: cannot decode the first frame");
  } else {
    out->Resize(w, h);
    for (int y = 0; y < h; ++y) {
      const uint8_t* in = rgba + static_cast<size_t>(y) * w * 4;
      uint8_t* o = out->row(y);
      for (int x = 0; x < w; ++x) {
        o[3 * x] = in[4 * x];
        o[3 * x + 1] = in[4 * x + 1];
        o[3 * x + 2] = in[4 * x + 2];
      }
    }
  }
  WebPAnimDecoderDelete(dec);
  return status;
}

}  // namespace stoker::codec_internal
