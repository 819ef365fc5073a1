// Copyright 2026 The stoker Authors.
#include "source/hdf5_source.h"

#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "stoker/loader.h"
#include "testing/epoch_images.h"
#include "testing/memory_source.h"
#include "testing/test_images.h"

namespace stoker {
namespace {

using testing::TempDir;

constexpr int kN = 6, kH = 30, kW = 40;

std::vector<uint8_t> Pixels(int i) { return testing::MakePixels(kW, kH, 40 + i); }

// Writes `name` = uint8 [kN, kH, kW, 3] (chunked one image per chunk).
void WriteRaw(hid_t file, const char* name) {
  const hsize_t dims[4] = {kN, kH, kW, 3};
  const hsize_t chunk[4] = {1, kH, kW, 3};
  hid_t space = H5Screate_simple(4, dims, nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 4, chunk);
  hid_t ds = H5Dcreate2(file, name, H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  std::vector<uint8_t> all;
  for (int i = 0; i < kN; ++i) {
    auto p = Pixels(i);
    all.insert(all.end(), p.begin(), p.end());
  }
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()), 0);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
}

std::vector<std::vector<uint8_t>> Jpegs() {
  std::vector<std::vector<uint8_t>> out;
  for (int i = 0; i < kN; ++i) out.push_back(testing::EncodeJpeg(Pixels(i), kW, kH));
  return out;
}

void WriteEncoded(hid_t file, const char* name) {
  const auto jpegs = Jpegs();
  std::vector<hvl_t> v(kN);
  for (int i = 0; i < kN; ++i) v[i] = hvl_t{jpegs[i].size(), const_cast<uint8_t*>(jpegs[i].data())};
  const hsize_t dims[1] = {kN};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t type = H5Tvlen_create(H5T_STD_U8LE);
  hid_t mem = H5Tvlen_create(H5T_NATIVE_UINT8);
  hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Dclose(ds);
  H5Tclose(mem);
  H5Tclose(type);
  H5Sclose(space);
}

template <typename T>
void Write1D(hid_t file, const char* name, hid_t file_type, hid_t mem_type, std::vector<T> v) {
  const hsize_t dims[1] = {v.size()};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t ds = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Dclose(ds);
  H5Sclose(space);
}

// data.h5: images (raw), encoded (vlen JPEG), labels (int16), flabels
// (float, integral), badlabels (short), halves (float 0.5), grey (uint8
// [N, H, W, 1]), wide (int16 pixels).
std::string MakeFile(const TempDir& dir) {
  const std::string path = dir.path() + "/data.h5";
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  WriteRaw(f, "images");
  WriteEncoded(f, "encoded");
  Write1D<int16_t>(f, "labels", H5T_STD_I16BE, H5T_NATIVE_INT16, {5, -1, 300, 0, 7, 2});
  Write1D<double>(f, "flabels", H5T_IEEE_F32LE, H5T_NATIVE_DOUBLE, {1, 2, 3, 4, 5, 6});
  Write1D<int32_t>(f, "badlabels", H5T_STD_I32LE, H5T_NATIVE_INT32, {1, 2});
  Write1D<double>(f, "halves", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {0.5, 1, 2, 3, 4, 5});
  const hsize_t gdims[4] = {kN, kH, kW, 1};
  hid_t gs = H5Screate_simple(4, gdims, nullptr);
  H5Dclose(H5Dcreate2(f, "grey", H5T_STD_U8LE, gs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Dclose(H5Dcreate2(f, "wide", H5T_STD_I16LE, gs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  H5Sclose(gs);
  H5Fclose(f);
  return path;
}

TEST(Hdf5SourceTest, RawPixelsAndLabelsOpenedLazily) {
  TempDir dir;
  const std::string path = MakeFile(dir);
  auto s = Hdf5Source::Open(path, "images", "labels");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Hdf5Source& src = *s.value();
  EXPECT_FALSE(src.is_open());  // no handle until the first read
  EXPECT_TRUE(src.raw());
  EXPECT_EQ(src.size(), kN);
  const std::vector<int64_t> labels = {5, -1, 300, 0, 7, 2};
  SampleScratch scratch;
  for (int i = 0; i < kN; ++i) {
    SampleData d;
    ASSERT_TRUE(src.ReadIndex(i, &scratch, &d).ok());
    EXPECT_EQ(d.label, labels[i]);
    EXPECT_EQ(d.pixel_width, kW);
    EXPECT_EQ(d.pixel_height, kH);
    EXPECT_EQ(std::vector<uint8_t>(d.pixels, d.pixels + kW * kH * 3), Pixels(i)) << i;
  }
  EXPECT_TRUE(src.is_open());
  EXPECT_EQ(src.NameOf(3), path + ":images[3]");
  auto f = Hdf5Source::Open(path, "encoded", "flabels");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_FALSE(f.value()->raw());
  SampleData d;
  ASSERT_TRUE(f.value()->ReadIndex(2, &scratch, &d).ok());
  EXPECT_EQ(d.label, 3);
  EXPECT_EQ(std::vector<uint8_t>(d.bytes, d.bytes + d.size), Jpegs()[2]);
  auto none = Hdf5Source::Open(path, "images", "");
  ASSERT_TRUE(none.value()->ReadIndex(0, &scratch, &d).ok());
  EXPECT_EQ(d.label, -1);
}

TEST(Hdf5SourceTest, LoaderMatchesInMemorySources) {
  TempDir dir;
  const std::string path = MakeFile(dir);
  std::vector<testing::MemorySample> raw(kN), enc(kN);
  const auto jpegs = Jpegs();
  for (int i = 0; i < kN; ++i) {
    raw[i].bytes = Pixels(i);
    raw[i].raw_width = kW;
    raw[i].raw_height = kH;
    enc[i].bytes = jpegs[i];
  }
  LoaderOptions o;
  o.batch_size = 4;
  o.threads = 3;
  o.shuffle = true;
  o.dtype = DType::kUint8;
  o.transforms = {Transform::RandomResizedCrop(20, 20), Transform::RandomHorizontalFlip()};
  auto run = [&](std::shared_ptr<Source> src) { return testing::EpochImages(src, o); };
  const auto want_raw = run(std::make_shared<testing::MemorySource>(std::move(raw)));
  const auto want_enc = run(std::make_shared<testing::MemorySource>(std::move(enc)));
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(run(Hdf5Source::Open(path, "images", "labels").value()), want_raw);
    EXPECT_EQ(run(Hdf5Source::Open(path, "encoded", "labels").value()), want_enc);
  }
}

TEST(Hdf5SourceTest, ForkedChildOpensItsOwnHandle) {
  TempDir dir;
  const std::string path = MakeFile(dir);
  auto src = Hdf5Source::Open(path, "encoded", "labels").value();
  SampleScratch scratch;
  SampleData d;
  ASSERT_TRUE(src->ReadIndex(0, &scratch, &d).ok());
  ASSERT_TRUE(src->is_open());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's handle does not count as open here; reading reopens.
    int code = src->is_open() ? 10 : 0;
    SampleData c;
    if (!src->ReadIndex(4, &scratch, &c).ok()) code |= 20;
    else if (std::vector<uint8_t>(c.bytes, c.bytes + c.size) != Jpegs()[4]) code |= 40;
    if (!src->is_open()) code |= 80;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(src->ReadIndex(5, &scratch, &d).ok());  // the parent's handle still works
  EXPECT_EQ(std::vector<uint8_t>(d.bytes, d.bytes + d.size), Jpegs()[5]);
}

TEST(Hdf5SourceTest, BadFilesAndDatasetsAreRefused) {
  TempDir dir;
  const std::string path = MakeFile(dir);
  auto msg = [&](const std::string& p, const std::string& images, const std::string& labels) {
    auto s = Hdf5Source::Open(p, images, labels);
    EXPECT_FALSE(s.ok()) << images << " " << labels;
    return s.status().ToString();
  };
  EXPECT_NE(msg(path, "nope", "").find("no such dataset"), std::string::npos);
  EXPECT_NE(msg(path, "images", "nope").find("no such dataset"), std::string::npos);
  EXPECT_NE(msg(path, "grey", "").find("[N, H, W, 3], got 1"), std::string::npos);
  EXPECT_NE(msg(path, "wide", "").find("uint8"), std::string::npos);
  EXPECT_NE(msg(path, "labels", "").find("images must be"), std::string::npos);
  EXPECT_NE(msg(path, "images", "badlabels").find("2 labels for 6 images"), std::string::npos);
  EXPECT_NE(msg(path, "images", "halves").find("integral"), std::string::npos);
  EXPECT_NE(msg(path, "images", "images").find("1-D"), std::string::npos);
  testing::WriteFile(dir.path() + "/x.h5", {1, 2, 3});
  EXPECT_NE(msg(dir.path() + "/x.h5", "images", "").find("not an HDF5 file"), std::string::npos);
  EXPECT_EQ(Hdf5Source::Open(dir.path() + "/missing.h5").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace stoker
