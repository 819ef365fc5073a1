// Copyright 2026 The stoker Authors.
#include "testing/test_images.h"

#include <jpeglib.h>
#include <png.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "base/rng.h"

namespace stoker::testing {

std::vector<uint8_t> MakePixels(int width, int height, uint64_t seed) {
  std::vector<uint8_t> px(static_cast<size_t>(width) * height * 3);
  Rng rng(seed);
  const double fx = 0.02 + 0.05 * rng.Uniform(), fy = 0.02 + 0.05 * rng.Uniform();
  const double phase[3] = {rng.Uniform() * 6.28, rng.Uniform() * 6.28, rng.Uniform() * 6.28};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        double v = 128 + 70 * std::sin(x * fx * (c + 1) + phase[c]) * std::cos(y * fy + c) +
                   30 * std::sin((x + y) * 0.3 + c) + (rng.Next() % 21) - 10.0;
        px[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
    }
  }
  return px;
}

std::vector<uint8_t> EncodeJpeg(const std::vector<uint8_t>& rgb, int width, int height,
                                const JpegSpec& spec) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  jpeg_mem_dest(&c, &out, &out_size);
  c.image_width = width;
  c.image_height = height;
  int comps = 3;
  if (spec.color == JpegSpec::kGray) {
    comps = 1;
    c.in_color_space = JCS_GRAYSCALE;
  } else if (spec.color == JpegSpec::kCmyk) {
    comps = 4;
    c.in_color_space = JCS_CMYK;
  } else {
    c.in_color_space = JCS_RGB;
  }
  c.input_components = comps;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, spec.quality, TRUE);
  if (spec.color == JpegSpec::kCmyk) {
    jpeg_set_colorspace(&c, JCS_CMYK);
    c.write_Adobe_marker = spec.adobe_marker ? TRUE : FALSE;
  }
  if (spec.color == JpegSpec::kRgb) {
    c.comp_info[0].h_samp_factor = spec.subsampling == 444 ? 1 : 2;
    c.comp_info[0].v_samp_factor = spec.subsampling == 420 ? 2 : 1;
  }
  if (spec.progressive) jpeg_simple_progression(&c);
  std::vector<jpeg_scan_info> scans;
  if (spec.one_coefficient_per_scan) {
    jpeg_scan_info dc{};
    dc.comps_in_scan = c.num_components;
    for (int i = 0; i < c.num_components; ++i) dc.component_index[i] = i;
    scans.push_back(dc);
    for (int i = 0; i < c.num_components; ++i) {
      for (int k = 1; k < 64; ++k) {
        jpeg_scan_info s{};
        s.comps_in_scan = 1;
        s.component_index[0] = i;
        s.Ss = k;
        s.Se = k;
        scans.push_back(s);
      }
    }
    c.scan_info = scans.data();
    c.num_scans = static_cast<int>(scans.size());
  }
  if (spec.arithmetic) c.arith_code = TRUE;
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(width) * comps);
  while (c.next_scanline < c.image_height) {
    const uint8_t* src = rgb.data() + static_cast<size_t>(c.next_scanline) * width * 3;
    for (int x = 0; x < width; ++x) {
      if (comps == 1) {
        row[x] = src[3 * x];
      } else if (comps == 3) {
        row[3 * x] = src[3 * x];
        row[3 * x + 1] = src[3 * x + 1];
        row[3 * x + 2] = src[3 * x + 2];
      } else {
        // Adobe writes inverted CMYK: store 255 - value when the marker is on.
        uint8_t v[4] = {static_cast<uint8_t>(255 - src[3 * x]),
                        static_cast<uint8_t>(255 - src[3 * x + 1]),
                        static_cast<uint8_t>(255 - src[3 * x + 2]),
                        static_cast<uint8_t>((x * 7 + c.next_scanline * 3) % 64)};
        for (int k = 0; k < 4; ++k) {
          row[4 * x + k] = spec.adobe_marker ? static_cast<uint8_t>(255 - v[k]) : v[k];
        }
      }
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> bytes(out, out + out_size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

namespace {

void PngWrite(png_structp png, png_bytep data, png_size_t n) {
  auto* v = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  v->insert(v->end(), data, data + n);
}
void PngFlush(png_structp) {}

}  // namespace

std::vector<uint8_t> EncodePng(const std::vector<uint8_t>& rgb, int width, int height,
                               const PngSpec& spec, std::vector<uint8_t>* expected) {
  const int ct = spec.color_type, depth = spec.bit_depth;
  const int maxv = (1 << depth) - 1;
  expected->assign(static_cast<size_t>(width) * height * 3, 0);
  // Palette: 16 colours at most; a pixel uses index (r / 16) % entries.
  const int entries = ct == 3 ? std::min(16, 1 << depth) : 0;
  std::vector<png_color> palette(entries);
  for (int i = 0; i < entries; ++i) {
    palette[i] = png_color{static_cast<png_byte>(i * 37 % 256),
                           static_cast<png_byte>(i * 91 % 256),
                           static_cast<png_byte>(255 - i * 13)};
  }
  const int channels = ct == 0 ? 1 : ct == 2 ? 3 : ct == 3 ? 1 : ct == 4 ? 2 : 4;
  const int bits_per_px = channels * depth;
  const size_t rowbytes = (static_cast<size_t>(width) * bits_per_px + 7) / 8;
  std::vector<std::vector<uint8_t>> rows(height, std::vector<uint8_t>(rowbytes, 0));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      uint8_t* e = &(*expected)[(static_cast<size_t>(y) * width + x) * 3];
      uint32_t samples[4];
      int ns = 0;
      if (ct == 3) {
        const int idx = (p[0] / 16) % entries;
        samples[ns++] = idx;
        e[0] = palette[idx].red;
        e[1] = palette[idx].green;
        e[2] = palette[idx].blue;
      } else {
        const int nc = (ct == 0 || ct == 4) ? 1 : 3;
        for (int c = 0; c < nc; ++c) {
          uint32_t v;
          if (depth == 16) {
            v = p[c] * 257u + (x + y) % 200;  // low byte varies; high byte is p[c] (or +1)
            if (v > 65535) v = 65535;
          } else {
            v = p[c] * maxv / 255;
          }
          samples[ns++] = v;
          // Expected 8-bit value: 16-bit keeps the high byte; low depths scale up.
          uint8_t ev = depth == 16 ? static_cast<uint8_t>(v >> 8)
                                   : static_cast<uint8_t>(v * 255 / maxv);
          if (nc == 1) e[0] = e[1] = e[2] = ev;
          else e[c] = ev;
        }
        if (ct == 4 || ct == 6) samples[ns++] = depth == 16 ? 40000u : (maxv * 2) / 3;
      }
      for (int s = 0; s < ns; ++s) {
        const size_t bit = static_cast<size_t>(x) * bits_per_px + s * depth;
        if (depth == 16) {
          rows[y][bit / 8] = static_cast<uint8_t>(samples[s] >> 8);
          rows[y][bit / 8 + 1] = static_cast<uint8_t>(samples[s] & 0xFF);
        } else if (depth == 8) {
          rows[y][bit / 8] = static_cast<uint8_t>(samples[s]);
        } else {
          const int shift = 8 - depth - static_cast<int>(bit % 8);
          rows[y][bit / 8] |= static_cast<uint8_t>(samples[s] << shift);
        }
      }
    }
  }
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("EncodePng failed");
  }
  png_set_write_fn(png, &out, &PngWrite, &PngFlush);
  png_set_IHDR(png, info, width, height, depth, ct,
               spec.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (ct == 3) {
    png_set_PLTE(png, info, palette.data(), entries);
    if (spec.trns) {
      std::vector<png_byte> alpha(entries);
      for (int i = 0; i < entries; ++i) alpha[i] = static_cast<png_byte>(i * 17 % 256);
      png_set_tRNS(png, info, alpha.data(), entries, nullptr);
    }
  }
  png_write_info(png, info);
  std::vector<png_bytep> ptrs(height);
  for (int y = 0; y < height; ++y) ptrs[y] = rows[y].data();
  png_write_image(png, ptrs.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/stoker_test_XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

void MakeDirs(const std::string& path) { std::filesystem::create_directories(path); }

}  // namespace stoker::testing
