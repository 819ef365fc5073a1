// Copyright 2026 The stoker Authors.
//
// Label-map PNGs (8-bit, one byte per pixel): libpng's row decode against
// codec/png_rows.h's, on the same files in the same process, rounds
// alternating (docs/performance.md).
//
//   build/png_rows_bench [--rounds N] [--band A:B] FILE.png...
//
// For each round, each decoder decodes every file: the whole image, then
// rows [A, B) (default 0:700, a crop's band: the rows above are inflated and
// dropped, the inflate stops after B - 1, and neither computes the Adler-32,
// as the loader does). Prints ms per file, each round, then the medians.
// The files are checked first: the two decoders must give the same bytes.
#include <png.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codec/png_rows.h"

namespace {

using Bytes = std::vector<uint8_t>;

struct Reader {
  const Bytes* data;
  size_t pos;
};

void Read(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (r->data->size() - r->pos < n) png_error(png, "truncated");
  std::memcpy(out, r->data->data() + r->pos, n);
  r->pos += n;
}

// libpng, as the loader used it: png_read_row into one scratch row above
// the band, PNG_IGNORE_ADLER32 when the band stops early.
bool Libpng(const Bytes& file, int y0, int y1, Bytes* out, Bytes* row, int* w, int* h) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  Reader r{&file, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &r, &Read);
  png_read_info(png, info);
  *w = static_cast<int>(png_get_image_width(png, info));
  *h = static_cast<int>(png_get_image_height(png, info));
  y1 = std::min(y1, *h);
  if (y1 < *h) png_set_option(png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
  png_read_update_info(png, info);
  const size_t n = png_get_rowbytes(png, info);
  out->resize(n * static_cast<size_t>(y1 - y0));
  row->resize(n);
  for (int y = 0; y < y1; ++y) {
    png_read_row(png, y < y0 ? row->data() : out->data() + n * static_cast<size_t>(y - y0),
                 nullptr);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

bool Ours(const Bytes& file, int w, int h, int y0, int y1, Bytes* out, Bytes* scratch) {
  y1 = std::min(y1, h);
  out->resize(static_cast<size_t>(w) * (y1 - y0));
  return stoker::DecodeBytePixelPngRows(file.data(), file.size(), w, h, y0, y1, out->data(),
                                        static_cast<size_t>(w), scratch)
      .ok();
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, band0 = 0, band1 = 700;
  std::vector<Bytes> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: png_rows_bench [--rounds N] [--band A:B] FILE.png...\n"
                  "  8-bit grey or palette PNGs (label maps); compares libpng's row decode\n"
                  "  with stoker's (codec/png_rows.h), whole and rows [A, B) (default 0:700)\n");
      return 0;
    }
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--band" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d:%d", &band0, &band1) != 2 || band0 < 0 || band1 <= band0) {
        std::fprintf(stderr, "--band wants A:B with 0 <= A < B, got %s\n", argv[i]);
        return 2;
      }
    } else {
      std::ifstream f(a, std::ios::binary);
      if (!f) {
        std::fprintf(stderr, "cannot read %s\n", a.c_str());
        return 2;
      }
      files.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
  }
  if (files.empty() || rounds < 1) {
    std::fprintf(stderr, "usage: png_rows_bench [--rounds N] [--band A:B] FILE.png...\n");
    return 2;
  }
  Bytes a, b, row, scratch;
  std::vector<int> ws, hs;
  for (const Bytes& f : files) {
    int w = 0, h = 0;
    if (!Libpng(f, 0, 1 << 30, &a, &row, &w, &h) || !Ours(f, w, h, 0, h, &b, &scratch) || a != b) {
      std::fprintf(stderr, "a file that is not an 8-bit one-byte-per-pixel PNG, or the "
                           "decoders disagree\n");
      return 1;
    }
    if (band0 >= h) {
      std::fprintf(stderr, "--band starts at row %d of a %d-row image\n", band0, h);
      return 2;
    }
    ws.push_back(w);
    hs.push_back(h);
  }
  std::vector<double> lw, ow, lb, ob;
  const double n = static_cast<double>(files.size());
  for (int r = 0; r < rounds; ++r) {
    int w = 0, h = 0;
    double t = Now();
    for (const Bytes& f : files) Libpng(f, 0, 1 << 30, &a, &row, &w, &h);
    lw.push_back((Now() - t) * 1e3 / n);
    t = Now();
    for (size_t i = 0; i < files.size(); ++i) Ours(files[i], ws[i], hs[i], 0, hs[i], &b, &scratch);
    ow.push_back((Now() - t) * 1e3 / n);
    t = Now();
    for (const Bytes& f : files) Libpng(f, band0, band1, &a, &row, &w, &h);
    lb.push_back((Now() - t) * 1e3 / n);
    t = Now();
    for (size_t i = 0; i < files.size(); ++i) {
      Ours(files[i], ws[i], hs[i], band0, band1, &b, &scratch);
    }
    ob.push_back((Now() - t) * 1e3 / n);
    std::printf("round %d: whole libpng %.3f ours %.3f ms/file; rows %d:%d libpng %.3f ours "
                "%.3f ms/file\n",
                r, lw.back(), ow.back(), band0, band1, lb.back(), ob.back());
  }
  std::printf("median of %d rounds, %zu files: whole %.3f -> %.3f ms (%.2fx), rows %d:%d "
              "%.3f -> %.3f ms (%.2fx)\n",
              rounds, files.size(), Median(lw), Median(ow), Median(lw) / Median(ow), band0, band1,
              Median(lb), Median(ob), Median(lb) / Median(ob));
  return 0;
}
