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

// Lossy (VP8) data codes every 16 x 16 macroblock's prediction modes in its
// first partition with fixed key-frame probabilities: at least 1.6 bits per
// macroblock, so half a bit is a safe floor, and libwebp fails a first
// partition that ends early. A lossless (VP8L) image can cost zero bits per
// pixel (single-symbol codes) and has no such floor; max_pixels bounds it.
Status CheckLossyHolds(const WebPBitstreamFeatures& f, size_t size) {
  if (f.format != 1) return Status::OK();
  const uint64_t macroblocks =
      static_cast<uint64_t>((f.width + 15) / 16) * static_cast<uint64_t>((f.height + 15) / 16);
  return CheckFileCanHold("WebP", f.width, f.height, (macroblocks + 15) / 16, size,
                          "lossy data (half a bit per 16x16 macroblock)");
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
    STOKER_RETURN_IF_ERROR(CheckLossyHolds(f, size));
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
  // Animated: the first frame as WebPAnimDecoder composes it (what Pillow
  // shows): a key frame on a canvas of transparent black, drawn with no
  // blending, so the canvas outside the frame is (0, 0, 0) once alpha is
  // dropped. Decoded here straight into the RGB image: WebPAnimDecoder would
  // hold two RGBA canvases besides (8 more bytes per canvas pixel, zeroed and
  // copied), which a 90-byte file with a 16383 x 16383 canvas turned into
  // 3 GB.
  WebPData webp_data{data, size};
  WebPDemuxer* demux = WebPDemux(&webp_data);
  if (demux == nullptr) return DataLossError("WebP: cannot parse the animation");
  WebPIterator frame;
  std::memset(&frame, 0, sizeof(frame));
  Status status;
  if (WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH) != static_cast<uint32_t>(w) ||
      WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT) != static_cast<uint32_t>(h)) {
    status = DataLossError("WebP: canvas size disagrees with the headers");
  } else if (!WebPDemuxGetFrame(demux, 1, &frame) || frame.width <= 0 || frame.height <= 0 ||
             frame.x_offset < 0 || frame.y_offset < 0 || frame.x_offset + frame.width > w ||
             frame.y_offset + frame.height > h) {
    status = DataLossError("WebP: cannot decode the first frame");
  } else {
    WebPBitstreamFeatures ff;
    status = Features(frame.fragment.bytes, frame.fragment.size, &ff);
    if (status.ok()) status = CheckLossyHolds(ff, frame.fragment.size);
    if (status.ok()) {
      out->Resize(w, h);
      std::memset(out->data(), 0, static_cast<size_t>(out->stride()) * h);
      WebPDecoderConfig config;
      if (!WebPInitDecoderConfig(&config)) {
        status = InternalError("WebP: bad libwebp version");
      } else {
        // libwebp checks the frame's bitstream against this buffer.
        const size_t stride = static_cast<size_t>(out->stride());
        config.output.colorspace = MODE_RGB;
        config.output.is_external_memory = 1;
        config.output.u.RGBA.rgba =
            out->row(frame.y_offset) + static_cast<size_t>(frame.x_offset) * 3;
        config.output.u.RGBA.stride = static_cast<int>(stride);
        config.output.u.RGBA.size =
            stride * static_cast<size_t>(frame.height - 1) + static_cast<size_t>(frame.width) * 3;
        const VP8StatusCode code = WebPDecode(frame.fragment.bytes, frame.fragment.size, &config);
        WebPFreeDecBuffer(&config.output);
        if (code != VP8_STATUS_OK) {
          status = DataLossError(std::string("WebP: cannot decode the first frame: ") +
                                 Vp8Reason(code));
        }
      }
    }
  }
  WebPDemuxReleaseIterator(&frame);
  WebPDemuxDelete(demux);
  return status;
}

Status DecodeWebpNative(const uint8_t* data, size_t size, int64_t max_pixels, NativeImage* out,
                        bool* handled) {
  *handled = false;
  WebPBitstreamFeatures f;
  STOKER_RETURN_IF_ERROR(Features(data, size, &f));
  if (f.has_animation || !f.has_alpha) return Status::OK();  // RGB (DecodeWebp)
  STOKER_RETURN_IF_ERROR(CheckPixelLimit(f.width, f.height, max_pixels));
  STOKER_RETURN_IF_ERROR(CheckLossyHolds(f, size));
  *handled = true;
  out->Resize(f.width, f.height, 4, 1);
  const int stride = static_cast<int>(out->row_bytes());
  if (WebPDecodeRGBAInto(data, size, out->pixels.data(), out->bytes(), stride) == nullptr) {
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) return InternalError("WebP: bad libwebp version");
    config.output.colorspace = MODE_RGBA;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = out->pixels.data();
    config.output.u.RGBA.stride = stride;
    config.output.u.RGBA.size = out->bytes();
    const VP8StatusCode code = WebPDecode(data, size, &config);
    WebPFreeDecBuffer(&config.output);
    return DataLossError(std::string("WebP: ") +
                         Vp8Reason(code == VP8_STATUS_OK ? VP8_STATUS_BITSTREAM_ERROR : code));
  }
  return Status::OK();
}

}  // namespace stoker::codec_internal
