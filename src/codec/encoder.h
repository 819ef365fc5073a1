// Copyright 2026 The stoker Authors.
//
// JPEG encoding with libjpeg-turbo: baseline, JFIF, standard Huffman tables,
// the accurate integer DCT (islow), chroma subsampling 4:4:4, 4:2:2 or 4:2:0.
// Used by `stoker convert --resize` (re-encoding resized images) and by the
// synthetic data generator.
//
// Thread-safety: a pure function; call it from any thread.
// Errors: InvalidArgument for unusable arguments (sides outside [1, 65500],
// quality outside [1, 100], another subsampling), Internal when libjpeg
// fails (it reports nothing else for in-memory output).
#ifndef STOKER_CODEC_ENCODER_H_
#define STOKER_CODEC_ENCODER_H_

#include <cstdint>
#include <vector>

#include "codec/image.h"
#include "stoker/status.h"

namespace stoker {

// Encodes the RGB pixels of `src` and replaces `*out` with the JPEG bytes.
Status EncodeJpeg(const RgbView& src, int quality, int subsampling, std::vector<uint8_t>* out);

}  // namespace stoker

#endif  // STOKER_CODEC_ENCODER_H_
