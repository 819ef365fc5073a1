// Copyright 2026 The stoker Authors.
#include "source/hdf5_source.h"

#include <algorithm>

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


// What a dataset's file type is read as.
struct ColumnType {
  Hdf5SourceImpl::Layout layout = Hdf5SourceImpl::Layout::kNumeric;
  ElemType elem = ElemType::kUint8;
  size_t size = 0;  // bytes per element (fixed strings: the string)
  bool space_padded = false;
};

// Whether `type` is h5py's bool: an enum of int8 {FALSE: 0, TRUE: 1}.
bool IsH5pyBoolLocked(hid_t type) STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  Id base(H5Tget_super(type));
  if (!base.ok() || H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1 ||
      H5Tget_nmembers(type) != 2) {
    return false;
  }
  const char* names[2] = {"FALSE", "TRUE"};
  for (int v = 0; v < 2; ++v) {
    int8_t value = -1;
    char* name = H5Tget_member_name(type, static_cast<unsigned>(v));
    const bool named = name != nullptr && std::strcmp(name, names[v]) == 0;
    H5free_memory(name);
    if (!named || H5Tget_member_value(type, static_cast<unsigned>(v), &value) < 0 || value != v) {
      return false;
    }
  }
  return true;
}

StatusOr<ColumnType> ClassifyLocked(hid_t type) STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  using Layout = Hdf5SourceImpl::Layout;
  ColumnType t;
  t.size = H5Tget_size(type);
  const std::string bytes = std::to_string(t.size) + " bytes";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool sign = H5Tget_sign(type) == H5T_SGN_2;
      switch (t.size) {
        case 1: t.elem = sign ? ElemType::kInt8 : ElemType::kUint8; return t;
        case 2: t.elem = sign ? ElemType::kInt16 : ElemType::kUint16; return t;
        case 4: t.elem = sign ? ElemType::kInt32 : ElemType::kUint32; return t;
        case 8: t.elem = sign ? ElemType::kInt64 : ElemType::kUint64; return t;
        default: return InvalidArgumentError("integers of " + bytes + " are not read");
      }
    }
    case H5T_FLOAT: {
      if (t.size == 4) t.elem = ElemType::kFloat32;
      if (t.size == 8) t.elem = ElemType::kFloat64;
      if (t.size == 2) {  // IEEE half (numpy's float16, as h5py writes it)
        size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0 || spos != 15 ||
            epos != 10 || esize != 5 || mpos != 0 || msize != 10 || H5Tget_ebias(type) != 15) {
          return InvalidArgumentError("a 16-bit float that is not IEEE half precision");
        }
        t.elem = ElemType::kFloat16;
      }
      if (t.size != 2 && t.size != 4 && t.size != 8) {
        return InvalidArgumentError("floats of " + bytes + " are not read");
      }
      return t;
    }
    case H5T_ENUM:
      if (!IsH5pyBoolLocked(type)) {
        return InvalidArgumentError("an enum other than h5py's bool is not read");
      }
      t.elem = ElemType::kBool;
      return t;
    case H5T_VLEN: {
      Id base(H5Tget_super(type));
      if (H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) {
        return InvalidArgumentError("variable-length data must hold uint8 bytes");
      }
      t.layout = Layout::kVlenBytes;
      return t;
    }
    case H5T_STRING:
      if (H5Tis_variable_str(type) > 0) {
        t.layout = Layout::kVlenString;
      } else {
        t.layout = Layout::kFixedString;
        t.space_padded = H5Tget_strpad(type) == H5T_STR_SPACEPAD;
      }
      return t;
    default:
      return InvalidArgumentError("the dataset's type is not read (expected integers, floats, "
                                  "bool, variable-length uint8 or strings)");
  }
}

// The memory type a column is read into.
hid_t MemTypeLocked(const Hdf5SourceImpl::Column& col, hid_t file_type)
    STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  using Layout = Hdf5SourceImpl::Layout;
  switch (col.layout) {
    case Layout::kVlenBytes: return H5Tvlen_create(H5T_NATIVE_UINT8);
    case Layout::kFixedString: return H5Tcopy(file_type);
    case Layout::kVlenString: {
      hid_t t = H5Tcopy(H5T_C_S1);
      if (t >= 0 && (H5Tset_size(t, H5T_VARIABLE) < 0 ||
                     H5Tset_cset(t, H5Tget_cset(file_type)) < 0)) {
        H5Tclose(t);
        return -1;
      }
      return t;
    }
    case Layout::kNumeric: break;
  }
  switch (col.elem) {
    case ElemType::kBool: return H5Tcopy(file_type);  // the enum itself: values 0 and 1
    case ElemType::kFloat16: {  // no native half type: the file's, little-endian
      hid_t t = H5Tcopy(file_type);
      if (t >= 0 && H5Tset_order(t, H5T_ORDER_LE) < 0) {
        H5Tclose(t);
        return -1;
      }
      return t;
    }
    case ElemType::kInt8: return H5Tcopy(H5T_NATIVE_INT8);
    case ElemType::kInt16: return H5Tcopy(H5T_NATIVE_INT16);
    case ElemType::kInt32: return H5Tcopy(H5T_NATIVE_INT32);
    case ElemType::kInt64: return H5Tcopy(H5T_NATIVE_INT64);
    case ElemType::kUint8: return H5Tcopy(H5T_NATIVE_UINT8);
    case ElemType::kUint16: return H5Tcopy(H5T_NATIVE_UINT16);
    case ElemType::kUint32: return H5Tcopy(H5T_NATIVE_UINT32);
    case ElemType::kUint64: return H5Tcopy(H5T_NATIVE_UINT64);
    case ElemType::kFloat32: return H5Tcopy(H5T_NATIVE_FLOAT);
    case ElemType::kFloat64: return H5Tcopy(H5T_NATIVE_DOUBLE);
    default: return -1;
  }
}

// A path HDF5 may open: it exists and is a regular file.
Status CheckHdf5Path(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return NotFoundError(path + ": no such file");
  // HDF5 opens with a blocking open(2): refuse FIFOs and devices first.
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError(path + ": not a regular file");
  return Status::OK();
}

// Opens `path` for the metadata pass (under the mutex; closed by the caller).
StatusOr<hid_t> OpenForMetadataLocked(const std::string& path)
    STOKER_EXCLUSIVE_LOCKS_REQUIRED(Hdf5Mutex()) {
  QuietLocked();
  if (H5Fis_hdf5(path.c_str()) <= 0) return InvalidArgumentError(path + ": not an HDF5 file");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return IoError(path + ": cannot open the HDF5 file");
  return file;
}

}  // namespace

StatusOr<std::shared_ptr<Hdf5Source>> Hdf5Source::Open(const std::string& path,
                                                       const std::string& images,
                                                       const std::string& labels) {
  STOKER_RETURN_IF_ERROR(CheckHdf5Path(path));
  std::shared_ptr<Hdf5SourceImpl> src(new Hdf5SourceImpl());
  src->path_ = path;
  src->images_name_ = images;
  src->labels_name_ = labels;
  MutexLock lock(&Hdf5Mutex());
  // Metadata pass: opened and closed here; reads open the file again lazily.
  STOKER_ASSIGN_OR_RETURN(hid_t opened, OpenForMetadataLocked(path));
  Id file(opened);
  const std::string where = path + ":" + images;
  Id ds(H5Dopen2(file.get(), images.c_str(), H5P_DEFAULT));
  if (!ds.ok()) return InvalidArgumentError(where + ": no such dataset");
  const std::vector<hsize_t> dims = Dims(ds.get());
  Id type(H5Dget_type(ds.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  Hdf5SourceImpl::Column col;
  col.dataset = images;
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
    col.sample_dims = {dims[1], dims[2], 3};
    col.row_bytes = static_cast<size_t>(dims[1]) * dims[2] * 3;
  } else if (cls == H5T_VLEN && dims.size() == 1) {
    Id base(H5Tget_super(type.get()));
    if (H5Tget_class(base.get()) != H5T_INTEGER || H5Tget_size(base.get()) != 1) {
      return InvalidArgumentError(where + ": variable-length images must hold uint8 bytes");
    }
    col.layout = Hdf5SourceImpl::Layout::kVlenBytes;
  } else {
    return InvalidArgumentError(where + ": images must be uint8 [N, H, W, 3] pixels or a 1-D "
                                "dataset of variable-length uint8 (encoded JPEG/PNG bytes)");
  }
  src->n_ = static_cast<int64_t>(dims[0]);
  src->columns_.push_back(std::move(col));
  src->image_column_ = 0;
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

StatusOr<std::shared_ptr<Hdf5Source>> Hdf5Source::OpenFields(
    const std::string& path, const std::vector<std::pair<std::string, std::string>>& fields,
    const std::vector<std::string>& json, int64_t max_sample_bytes) {
  using Layout = Hdf5SourceImpl::Layout;
  if (max_sample_bytes < 1) {
    return InvalidArgumentError("HDF5: max_sample_bytes must be >= 1, got " +
                                std::to_string(max_sample_bytes));
  }
  for (const std::string& name : json) {
    bool found = false;
    for (const auto& f : fields) found |= f.first == name;
    if (!found) {
      return InvalidArgumentError("HDF5 fields: json field '" + name + "' is not a field");
    }
  }
  if (fields.empty()) return InvalidArgumentError("HDF5 fields: at least one field is needed");
  STOKER_RETURN_IF_ERROR(CheckHdf5Path(path));
  std::shared_ptr<Hdf5SourceImpl> src(new Hdf5SourceImpl());
  src->path_ = path;
  src->records_ = true;
  src->max_sample_bytes_ = max_sample_bytes;
  uint64_t fixed_bytes = 0;  // the fixed-size fields of a sample, together
  MutexLock lock(&Hdf5Mutex());
  STOKER_ASSIGN_OR_RETURN(hid_t opened, OpenForMetadataLocked(path));
  Id file(opened);
  for (size_t k = 0; k < fields.size(); ++k) {
    const std::string& name = fields[k].first;
    const std::string& dataset = fields[k].second;
    auto fail = [&](const std::string& why) {
      return InvalidArgumentError("field '" + name + "' (" + path + ":" + dataset + "): " + why);
    };
    Id ds(H5Dopen2(file.get(), dataset.c_str(), H5P_DEFAULT));
    if (!ds.ok()) return fail("no such dataset");
    const std::vector<hsize_t> dims = Dims(ds.get());
    if (dims.empty()) return fail("a scalar dataset has no rows: fields are datasets [N, ...]");
    if (dims.size() - 1 > static_cast<size_t>(kMaxFieldDims)) {
      return fail("more than " + std::to_string(kMaxFieldDims) + " dimensions per sample");
    }
    if (k == 0) {
      src->n_ = static_cast<int64_t>(dims[0]);
    } else if (static_cast<int64_t>(dims[0]) != src->n_) {
      return InvalidArgumentError(
          "field '" + name + "' (dataset '" + dataset + "') has " + std::to_string(dims[0]) +
          " rows but field '" + fields[0].first + "' (dataset '" + fields[0].second + "') has " +
          std::to_string(src->n_) + " (" + path + "): the datasets of a record source must "
          "be aligned");
    }
    Id type(H5Dget_type(ds.get()));
    auto ct = ClassifyLocked(type.get());
    if (!ct.ok()) return fail(ct.status().message());
    const ColumnType& t = ct.value();
    const bool one_d = dims.size() == 1;
    Hdf5SourceImpl::Column col;
    col.dataset = dataset;
    col.field = static_cast<int>(k);
    col.layout = t.layout;
    col.elem = t.elem;
    col.space_padded = t.space_padded;
    FieldSpec spec;
    if (t.layout == Layout::kNumeric) {
      col.sample_dims.assign(dims.begin() + 1, dims.end());
      col.row_bytes = ElemSize(t.elem);
      std::vector<int64_t> shape;
      bool overflow = false;
      for (hsize_t d : col.sample_dims) {
        overflow |= __builtin_mul_overflow(col.row_bytes, static_cast<size_t>(d), &col.row_bytes);
        shape.push_back(static_cast<int64_t>(d));
      }
      if (overflow || col.row_bytes > static_cast<uint64_t>(max_sample_bytes)) {
        std::string s;
        for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
        return fail("a sample is [" + s + "] " + ElemTypeName(t.elem) + ", " +
                    (overflow ? std::string("more bytes than a 64-bit size holds")
                              : std::to_string(col.row_bytes) + " bytes") +
                    ", more than max_sample_bytes (" + std::to_string(max_sample_bytes) +
                    "; raise it to read it)");
      }
      const bool integer = t.elem != ElemType::kBool && t.elem != ElemType::kFloat16 &&
                           t.elem != ElemType::kFloat32 && t.elem != ElemType::kFloat64;
      if (name == "label" && one_d && integer) {
        STOKER_RETURN_IF_ERROR(ReadLabelsLocked(file.get(), path, dataset, &src->labels_));
        src->label_field_ = static_cast<int>(k);
        src->labels_name_ = dataset;
        src->schema_.fields.push_back(LabelField(name));
        continue;  // read once, not per sample
      }
      if (name == "image" && t.elem == ElemType::kUint8 && shape.size() == 3 && shape[2] == 3 &&
          shape[0] >= 1 && shape[1] >= 1 && shape[0] <= (1 << 20) && shape[1] <= (1 << 20)) {
        src->raw_ = true;
        src->height_ = static_cast<int>(shape[0]);
        src->width_ = static_cast<int>(shape[1]);
        spec = ImageField(name);
        spec.shape = shape;
        spec.shape_known = true;
      } else {
        spec = ArrayField(name, t.elem, shape);
      }
    } else {
      if (!one_d) {
        return fail("variable-length data and strings must be a 1-D dataset [N], not " +
                    std::to_string(dims.size()) + "-D");
      }
      if (t.layout == Layout::kFixedString) col.row_bytes = t.size;
      if (t.layout == Layout::kVlenBytes) {
        spec = name == "image" ? ImageField(name) : BytesField(name);
      } else {
        spec = std::find(json.begin(), json.end(), name) != json.end() ? JsonField(name)
                                                                       : TextField(name);
      }
    }
    if (spec.kind == FieldKind::kImage) {
      src->image_column_ = static_cast<int>(src->columns_.size());
    }
    fixed_bytes += col.row_bytes;
    if (fixed_bytes > static_cast<uint64_t>(max_sample_bytes)) {
      return InvalidArgumentError(
          "HDF5 fields (" + path + "): a sample's fixed-size fields are " +
          std::to_string(fixed_bytes) + " bytes up to field '" + name + "', more than "
          "max_sample_bytes (" + std::to_string(max_sample_bytes) + "; raise it to read them)");
    }
    src->schema_.fields.push_back(std::move(spec));
    src->columns_.push_back(std::move(col));
  }
  for (const FieldSpec& f : src->schema_.fields) {
    if (f.kind != FieldKind::kJson && std::find(json.begin(), json.end(), f.name) != json.end()) {
      return InvalidArgumentError("field '" + f.name + "': json fields are string datasets (one "
                                  "JSON document per sample), and this one is " + f.ToString());
    }
  }
  STOKER_RETURN_IF_ERROR(CheckSchema(src->schema_));
  return std::shared_ptr<Hdf5Source>(std::move(src));
}

Hdf5SourceImpl::~Hdf5SourceImpl() {
  MutexLock lock(&Hdf5Mutex());
  CloseLocked();
}

void Hdf5SourceImpl::CloseLocked() const {
  for (int64_t t : mem_types_) {
    if (t >= 0) H5Tclose(t);
  }
  for (int64_t d : datasets_) {
    if (d >= 0) H5Dclose(d);
  }
  mem_types_.clear();
  datasets_.clear();
  if (file_ >= 0) H5Fclose(file_);
  file_ = -1;
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
  std::vector<int64_t> datasets, mem_types;
  auto close_all = [&] {
    for (int64_t t : mem_types) H5Tclose(t);
    for (int64_t d : datasets) H5Dclose(d);
  };
  for (const Column& col : columns_) {
    Id ds(H5Dopen2(file.get(), col.dataset.c_str(), H5P_DEFAULT));
    if (!ds.ok()) {
      close_all();
      return IoError(path_ + ":" + col.dataset + ": cannot open the dataset");
    }
    Id file_type(H5Dget_type(ds.get()));
    const hid_t mem = file_type.ok() ? MemTypeLocked(col, file_type.get()) : -1;
    if (mem < 0) {
      close_all();
      return InternalError(path_ + ":" + col.dataset + ": cannot make the memory type");
    }
    mem_types.push_back(mem);
    datasets.push_back(ds.release());
  }
  datasets_ = std::move(datasets);
  mem_types_ = std::move(mem_types);
  file_ = file.release();
  opened_by_ = pid;
  return Status::OK();
}

std::string Hdf5SourceImpl::Describe() const {
  if (records_) {
    std::string s = "HDF5(" + path_ + ", " + std::to_string(n_) + " records {";
    size_t c = 0;
    for (size_t k = 0; k < schema_.fields.size(); ++k) {
      const bool read_once = static_cast<int>(k) == label_field_;
      s += (k ? "; " : "") + schema_.fields[k].ToString() + " <- " +
           (read_once ? labels_name_ : columns_[c++].dataset);
    }
    return s + "})";
  }
  return "HDF5(" + path_ + ":" + images_name_ + ", " + std::to_string(n_) +
         (raw_ ? " images " + std::to_string(height_) + "x" + std::to_string(width_) + "x3"
               : " encoded images") +
         (labels_name_.empty() ? ", no labels)" : ", labels " + labels_name_ + ")");
}

std::string Hdf5SourceImpl::NameOf(int64_t index) const {
  const std::string& first = columns_.empty() ? labels_name_ : columns_.front().dataset;
  return path_ + ":" + first + "[" + std::to_string(index) + "]";
}

Status Hdf5SourceImpl::ReadColumnLocked(size_t c, int64_t index, std::vector<uint8_t>* buf,
                                        size_t* n) const {
  const Column& col = columns_[c];
  const hid_t ds = datasets_[c];
  const hid_t mem_type = mem_types_[c];
  Id space(H5Dget_space(ds));
  if (!space.ok()) return IoError("HDF5: cannot get the dataspace");
  hsize_t start[kMaxFieldDims + 1] = {static_cast<hsize_t>(index)};
  hsize_t count[kMaxFieldDims + 1] = {1};
  const int rank = 1 + static_cast<int>(col.sample_dims.size());
  for (size_t d = 0; d < col.sample_dims.size(); ++d) count[d + 1] = col.sample_dims[d];
  // The memory space has the selection's own shape: with another shape
  // (e.g. 1-D) HDF5 maps element by element, ~40x slower.
  Id mem(H5Screate_simple(rank, count, nullptr));
  if (!mem.ok() ||
      H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0) {
    return IoError("HDF5: cannot select the sample");
  }
  switch (col.layout) {
    case Layout::kNumeric:
    case Layout::kFixedString: {
      if (buf->size() < col.row_bytes) buf->resize(col.row_bytes);
      if (col.row_bytes > 0 &&
          H5Dread(ds, mem_type, mem.get(), space.get(), H5P_DEFAULT, buf->data()) < 0) {
        return IoError(records_ || !raw_ ? "HDF5: cannot read the sample"
                                         : "HDF5: cannot read the sample's pixels");
      }
      *n = col.row_bytes;
      if (col.layout == Layout::kFixedString) {  // h5py's read: the padding stripped
        const uint8_t* p = buf->data();
        if (col.space_padded) {
          while (*n > 0 && p[*n - 1] == ' ') --*n;
        } else {
          const void* nul = std::memchr(p, 0, *n);
          if (nul != nullptr) *n = static_cast<size_t>(static_cast<const uint8_t*>(nul) - p);
        }
      }
      return Status::OK();
    }
    case Layout::kVlenBytes: {
      // Its length first: a 300 KB file can hold a sample of hundreds of MB.
      hsize_t need = 0;
      if (records_ && H5Dvlen_get_buf_size(ds, mem_type, space.get(), &need) >= 0 &&
          need > static_cast<hsize_t>(max_sample_bytes_)) {
        return DataLossError("sample " + std::to_string(index) + " is " + std::to_string(need) +
                             " bytes, more than max_sample_bytes (" +
                             std::to_string(max_sample_bytes_) + ")");
      }
      hvl_t v{0, nullptr};
      if (H5Dread(ds, mem_type, mem.get(), space.get(), H5P_DEFAULT, &v) < 0) {
        return IoError("HDF5: cannot read the sample's bytes");
      }
      if (buf->size() < v.len) buf->resize(v.len);
      if (v.len > 0) std::memcpy(buf->data(), v.p, v.len);
      *n = v.len;
      H5Dvlen_reclaim(mem_type, mem.get(), H5P_DEFAULT, &v);
      return Status::OK();
    }
    case Layout::kVlenString: {
      char* p = nullptr;
      if (H5Dread(ds, mem_type, mem.get(), space.get(), H5P_DEFAULT, &p) < 0) {
        return IoError("HDF5: cannot read the sample's string");
      }
      const size_t len = p != nullptr ? std::strlen(p) : 0;
      if (buf->size() < len) buf->resize(len);
      if (len > 0) std::memcpy(buf->data(), p, len);
      *n = len;
      H5Dvlen_reclaim(mem_type, mem.get(), H5P_DEFAULT, &p);
      return Status::OK();
    }
  }
  return InternalError("HDF5: unknown layout");
}

Status Hdf5SourceImpl::ReadIndex(int64_t index, SampleScratch* scratch, SampleData* out) const {
  if (index < 0 || index >= n_) {
    return InvalidArgumentError("sample index " + std::to_string(index) + " out of range");
  }
  const int64_t label = labels_.empty() ? -1 : labels_[static_cast<size_t>(index)];
  if (!records_) {
    out->id = index;
    out->label = label;
    size_t n = 0;
    {
      MutexLock lock(&Hdf5Mutex());
      STOKER_RETURN_IF_ERROR(EnsureOpenLocked());
      STOKER_RETURN_IF_ERROR(ReadColumnLocked(0, index, &scratch->bytes, &n));
    }
    out->size = n;
    if (raw_) {
      out->bytes = nullptr;
      out->pixels = scratch->bytes.data();
      out->pixel_width = width_;
      out->pixel_height = height_;
      out->pixel_stride = static_cast<ptrdiff_t>(width_) * 3;
    } else {
      out->bytes = scratch->bytes.data();
      out->pixels = nullptr;
    }
    return Status::OK();
  }
  const size_t nf = schema_.fields.size();
  scratch->fields.resize(nf);
  if (scratch->field_bytes.size() < nf) scratch->field_bytes.resize(nf);
  *out = SampleData();
  out->id = index;
  out->label = label;
  {
    // Every dataset of the sample under one acquisition of the lock.
    MutexLock lock(&Hdf5Mutex());
    STOKER_RETURN_IF_ERROR(EnsureOpenLocked());
    for (size_t c = 0; c < columns_.size(); ++c) {
      const size_t f = static_cast<size_t>(columns_[c].field);
      Status st = ReadColumnLocked(c, index, &scratch->field_bytes[f], &scratch->fields[f].size);
      if (!st.ok()) {
        return st.WithContext("field '" + schema_.fields[f].name + "' (dataset '" +
                              columns_[c].dataset + "')");
      }
    }
  }
  for (size_t f = 0; f < nf; ++f) {
    const FieldSpec& spec = schema_.fields[f];
    FieldValue& v = scratch->fields[f];
    const size_t size = v.size;
    v = FieldValue();
    if (static_cast<int>(f) == label_field_) {
      v.dtype = ElemType::kInt64;
      v.i = label;
      continue;
    }
    v.data = scratch->field_bytes[f].data();
    v.size = size;
    if (spec.kind == FieldKind::kArray || (spec.kind == FieldKind::kImage && spec.shape_known)) {
      v.dtype = spec.kind == FieldKind::kImage ? ElemType::kUint8 : spec.dtype;
      v.ndim = static_cast<int>(spec.shape.size());
      for (size_t d = 0; d < spec.shape.size(); ++d) v.dims[d] = spec.shape[d];
    }
  }
  if (image_column_ >= 0) {
    const FieldValue& v = scratch->fields[static_cast<size_t>(columns_[image_column_].field)];
    out->size = v.size;
    if (raw_) {
      out->pixels = v.data;
      out->pixel_width = width_;
      out->pixel_height = height_;
      out->pixel_stride = static_cast<ptrdiff_t>(width_) * 3;
    } else {
      out->bytes = v.data;
    }
  }
  out->fields = scratch->fields.data();
  out->num_fields = static_cast<int>(nf);
  return Status::OK();
}

}  // namespace stoker
