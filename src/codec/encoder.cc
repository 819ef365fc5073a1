// Copyright 2026 The stoker Authors.
#include "codec/encoder.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>

#include <jpeglib.h>

namespace stoker {
namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  std::longjmp(err->jump, 1);
}

void JpegOutputMessage(j_common_ptr) {}  // warnings are not printed

// Kept free of C++ objects with destructors: libjpeg errors leave by longjmp.
bool Encode(const RgbView& src, int quality, int subsampling, unsigned char** buffer,
            unsigned long* size) {  // NOLINT: libjpeg's type
  jpeg_compress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = JpegErrorExit;
  err.pub.output_message = JpegOutputMessage;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, buffer, size);
  cinfo.image_width = static_cast<JDIMENSION>(src.width);
  cinfo.image_height = static_cast<JDIMENSION>(src.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.comp_info[0].h_samp_factor = subsampling == 444 ? 1 : 2;
  cinfo.comp_info[0].v_samp_factor = subsampling == 420 ? 2 : 1;
  for (int c = 1; c < 3; ++c) {
    cinfo.comp_info[c].h_samp_factor = 1;
    cinfo.comp_info[c].v_samp_factor = 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW rows[16];
    JDIMENSION n = 0;
    for (; n < 16 && cinfo.next_scanline + n < cinfo.image_height; ++n) {
      rows[n] = const_cast<JSAMPROW>(src.row(static_cast<int>(cinfo.next_scanline + n)));
    }
    jpeg_write_scanlines(&cinfo, rows, n);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

Status EncodeJpeg(const RgbView& src, int quality, int subsampling, std::vector<uint8_t>* out) {
  if (src.width < 1 || src.height < 1 || src.width > 65500 || src.height > 65500) {
    return InvalidArgumentError("JPEG encode: image sides must be in [1, 65500]");
  }
  if (quality < 1 || quality > 100) {
    return InvalidArgumentError("JPEG encode: quality must be in [1, 100], got " +
                                std::to_string(quality));
  }
  if (subsampling != 444 && subsampling != 422 && subsampling != 420) {
    return InvalidArgumentError("JPEG encode: subsampling must be 444, 422 or 420");
  }
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT: libjpeg's type
  const bool ok = Encode(src, quality, subsampling, &buffer, &size);
  if (ok && buffer != nullptr) out->assign(buffer, buffer + size);
  std::free(buffer);
  if (!ok) return InternalError("JPEG encode failed");
  return Status::OK();
}

}  // namespace stoker
