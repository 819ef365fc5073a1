// Copyright 2026 The stoker Authors.
//
// The public Decoder (include/stoker/decode.h) over ImageDecoder::DecodeAll.
#include "stoker/decode.h"

#include "codec/decoder.h"

namespace stoker {

Decoder::Decoder(int64_t max_pixels)
    : impl_(std::make_unique<ImageDecoder>(DecoderOptions{max_pixels})) {}

Decoder::~Decoder() = default;

Status Decoder::Decode(const uint8_t* data, size_t size, DecodedImage* out) {
  DecodedRegion r;
  STOKER_RETURN_IF_ERROR(impl_->DecodeAll(data, size, &r));
  out->width = r.pixels.width;
  out->height = r.pixels.height;
  out->pixels = r.pixels.data;
  out->stride = r.pixels.stride;
  return Status::OK();
}

}  // namespace stoker
