// Copyright 2026 The stoker Authors.
#include "source/hdf5_source.h"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

namespace stoker {

// The serial HDF5 library is not thread-safe: every call goes through here.
bool BuiltWithHdf5() { return true; }

Mutex& Hdf5Mutex() {
  static Mutex mu;
  return mu;
}

namespace {

static_assert(sizeof(hid_t) == sizeof(int64_t), "hid_t is stored as int64_t");

// Silences HDF5's error-stack printing once (errors become Status values).
void QuietLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  static bool done = false;
  if (!done) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    done = true;
  }
}

// Closes an HDF5 id of any kind on scope exit.
class Id {
 public:
  explicit Id(hid_t id = -1) : id_(id) {}
  ~Id() { reset(); }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  hid_t release() {
    hid_t id = id_;
    id_ = -1;
    return id;
  }
  void reset(hid_t id = -1) {
    if (id_ >= 0) {
      switch (H5Iget_type(id_)) {
        case H5I_FILE: H5Fclose(id_); break;
        case H5I_DATASET: H5Dclose(id_); break;
        case H5I_DATASPACE: H5Sclose(id_); break;
        case H5I_DATATYPE: H5Tclose(id_); break;
        default: break;
      }
    }
    id_ = id;
  }

 private:
  hid_t id_;
};

std::vector<hsize_t> Dims(hid_t dataset) {
  Id space(H5Dget_space(dataset));
  if (!space.ok()) return {};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

Status ReadLabelsLocked(hid_t file, const std::string& path, const std::string& name,
                        std::vector<int64_t>* out) STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  const std::string where = path + ":" + name;
  Id ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!ds.ok()) return InvalidArgumentError(where + ": no such dataset");
  const std::vector<hsize_t> dims = Dims(ds.get());
  if (dims.size() != 1) return InvalidArgumentError(where + ": labels must be 1-D");
  Id type(H5Dget_type(ds.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  out->assign(dims[0], 0);
  if (dims[0] == 0) return Status::OK();
  if (cls == H5T_INTEGER) {
    if (H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->data()) < 0) {
      return IoError(where + ": cannot read the labels");
    }
    return Status::OK();
  }
  if (cls == H5T_FLOAT) {
    std::vector<double> v(dims[0]);
    if (H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) {
      return IoError(where + ": cannot read the labels");
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i]) || v[i] != std::floor(v[i]) || std::fabs(v[i]) > 9.2e18) {
        return InvalidArgumentError(where + ": label " + std::to_string(i) +
                                    " is not an integral value");
      }
      (*out)[i] = static_cast<int64_t>(v[i]);
    }
    return Status::OK();
  }
  return InvalidArgumentError(where + ": labels must be integers or floats");
}

}  // namespace

StatusOr<std::shared_ptr<Hdf5Source>> Hdf5Source::Open(const std::string& path,
                                                       const std::string& images,
                                                       const std::string& labels) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFoundError(path + ": no such file");
  // HDF5 opens with a blocking open(2): refuse FIFOs and devices first (issue 17, item 1).
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(path + ": not a regular file");
  std::shared_ptr<Hdf5SourceImpl> src(new Hdf5SourceImpl());
  src->path_ = path;
  src->images_name_ = images;
  src->labels_name_ = labels;
  MutexLock lock(&Hdf5Mutex());
  QuietLocked();
  if (H5Fis_hdf5(path.c_str()) <= 0) return InvalidArgumentError(path + ": not an HDF5 file");
  // Metadata pass: opened and closed here; reads open the file again lazily.
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.ok()) return IoError(path + ": cannot open the HDF5 file");
  const std::string where = path + ":" + images;
  Id ds(H5Dopen2(file.get(), images.c_str(), H5P_DEFAULT));
  if (!ds.ok()) return InvalidArgumentError(where + ": no such dataset");
  const std::vector<hsize_t> dims = Dims(ds.get());
  Id type(H5Dget_type(ds.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_INTEGER && dims.size() == 4) {
    if (H5Tget_size(type.get()) != 1 || H5Tget_sign(type.get()) != H5T_SGN_NONE) {
      return InvalidArgumentError(where + ": raw images must be uint8");
    }
    if (dims[3] != 3) {
      return InvalidArgumentError(where + ": raw images must be [N, H, W, 3], got " +
                                  std::to_string(dims[3]) + " channels");
    }
    if (dims[1] < 1 || dims[2] < 1 || dims[1] > (1 << 20) || dims[2] > (1 << 20)) {
      return InvalidArgumentError(where + ": image sides must be in [1, 2^20]");
    }
    src->raw_ = true;
    src->height_ = static_cast<int>(dims[1]);
    src->width_ = static_cast<int>(dims[2]);
  } else if (cls == H5T_VLEN && dims.size() == 1) {
    Id base(H5Tget_super(type.get()));
    if (H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) {
      return InvalidArgumentError(where + ": variable-length images must hold uint8 bytes");
    }
  } else {
    return InvalidArgumentError(where + ": images must be uint8 [N, H, W, 3] pixels or a 1-D "
                                "dataset of variable-length uint8 (encoded JPEG/PNG bytes)");
  }
  src->n_ = static_cast<int64_t>(dims[0]);
  if (!labels.empty()) {
    STOKER_RETURN_IF_ERROR(ReadLabelsLocked(file.get(), path, labels, &src->labels_));
    if (static_cast<int64_t>(src->labels_.size()) != src->n_) {
      return InvalidArgumentError(path + ":" + labels + ": " +
                                  std::to_string(src->labels_.size()) + " labels for " +
                                  std::to_string(src->n_) + " images");
    }
  }
  return std::shared_ptr<Hdf5Source>(std::move(src));
}

Hdf5SourceImpl::~Hdf5SourceImpl() {
  MutexLock lock(&Hdf5Mutex());
  CloseLocked();
}

void Hdf5SourceImpl::CloseLocked() const {
  if (vlen_type_ >= 0) H5Tclose(vlen_type_);
  if (dataset_ >= 0) H5Dclose(dataset_);
  if (file_ >= 0) H5Fclose(file_);
  vlen_type_ = dataset_ = file_ = -1;
}

bool Hdf5SourceImpl::is_open() const {
  MutexLock lock(&Hdf5Mutex());
  return file_ >= 0 && opened_by_ == ::getpid();
}

Status Hdf5SourceImpl::EnsureOpenLocked() const {
  const pid_t pid = ::getpid();
  if (file_ >= 0 && opened_by_ == pid) return Status::OK();
  CloseLocked();  // handles inherited across fork are not used
  QuietLocked();
  Id file(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.ok()) return IoError(path_ + ": cannot open the HDF5 file");
  Id ds(H5Dopen2(file.get(), images_name_.c_str(), H5P_DEFAULT));
  if (!ds.ok()) return IoError(path_ + ":" + images_name_ + ": cannot open the dataset");
  if (!raw_) {
    vlen_type_ = H5Tvlen_create(H5T_NATIVE_UINT8);
    if (vlen_type_ < 0) return InternalError("H5Tvlen_create failed");
  }
  dataset_ = ds.release();
  file_ = file.release();
  opened_by_ = pid;
  return Status::OK();
}

std::string Hdf5SourceImpl::Describe() const {
  return "HDF5(" + path_ + ":" + images_name_ + ", " + std::to_string(n_) +
         (raw_ ? " images " + std::to_string(height_) + "x" + std::to_string(width_) + "x3"
               : " encoded images") +
         (labels_name_.empty() ? ", no labels)" : ", labels " + labels_name_ + ")");
}

std::string Hdf5SourceImpl::NameOf(int64_t index) const {
  return path_ + ":" + images_name_ + "[" + std::to_string(index) + "]";
}

Status Hdf5SourceImpl::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= n_) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  out->id = index;
  out->label = labels_.empty() ? -1 : labels_[static_cast<size_t>(index)];
  MutexLock lock(&Hdf5Mutex());
  STOKER_RETURN_IF_ERROR(EnsureOpenLocked());
  Id space(H5Dget_space(dataset_));
  if (!space.ok()) return IoError("HDF5: cannot get the dataspace");
  if (raw_) {
    const hsize_t start[4] = {static_cast<hsize_t>(index), 0, 0, 0};
    const hsize_t count[4] = {1, static_cast<hsize_t>(height_), static_cast<hsize_t>(width_), 3};
    // The memory space has the selection's own shape: with another shape
    // (e.g. 1-D) HDF5 maps element by element, ~40x slower.
    Id mem(H5Screate_simple(4, count, nullptr));
    const size_t bytes = static_cast<size_t>(height_) * width_ * 3;
    if (scratch->bytes.size() < bytes) scratch->bytes.resize(bytes);
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dread(dataset_, H5T_NATIVE_UINT8, mem.get(), space.get(), H5P_DEFAULT,
                scratch->bytes.data()) < 0) {
      return IoError("HDF5: cannot read the sample's pixels");
    }
    out->bytes = nullptr;
    out->size = bytes;
    out->pixels = scratch->bytes.data();
    out->pixel_width = width_;
    out->pixel_height = height_;
    out->pixel_stride = static_cast<ptrdiff_t>(width_) * 3;
    return Status::OK();
  }
  const hsize_t start[1] = {static_cast<hsize_t>(index)};
  const hsize_t count[1] = {1};
  Id mem(H5Screate_simple(1, count, nullptr));
  hvl_t v{0, nullptr};
  if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(dataset_, vlen_type_, mem.get(), space.get(), H5P_DEFAULT, &v) < 0) {
    return IoError("HDF5: cannot read the sample's bytes");
  }
  if (scratch->bytes.size() < v.len) scratch->bytes.resize(v.len);
  if (v.len > 0) std::memcpy(scratch->bytes.data(), v.p, v.len);
  const size_t n = v.len;
  H5Dvlen_reclaim(vlen_type_, mem.get(), H5P_DEFAULT, &v);
  out->bytes = scratch->bytes.data();
  out->size = n;
  out->pixels = nullptr;
  return Status::OK();
}

}  // namespace stoker
