// Copyright 2026 The stoker Authors.
//
// Owned CUDA allocations (cuda/unique_handle.h): DeviceArray<T> (cudaMalloc /
// cudaFree) and PinnedArray<T> (page-locked host memory, cudaHostAlloc /
// cudaFreeHost), each `count` elements of T, freed with the object through
// STOKER_CUDA_DTOR_CALL (quiet while the runtime unloads at exit). cudaFree
// waits for the device; free device memory only after the work using it.
//
// Thread-safety: one owner; the memory itself is the owner's to share.
// Errors: Allocate returns CudaError's Status (cuda/check.h): the message
// names the call, the bytes and the device; ResourceExhausted when memory
// runs out, Unimplemented without a usable driver or device.
#ifndef STOKER_CUDA_MEMORY_H_
#define STOKER_CUDA_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstddef>

#include "cuda/unique_handle.h"
#include "stoker/status.h"

namespace stoker::cuda {

struct DeviceMemoryTraits {
  using Handle = void*;
  static constexpr Handle kNull = nullptr;
  static void Destroy(Handle p) noexcept;
};
struct PinnedMemoryTraits {
  using Handle = void*;
  static constexpr Handle kNull = nullptr;
  static void Destroy(Handle p) noexcept;
};
using DeviceMemory = UniqueHandle<DeviceMemoryTraits>;
using PinnedMemory = UniqueHandle<PinnedMemoryTraits>;

// `bytes` (at least 1) on `device`.
StatusOr<DeviceMemory> AllocateDevice(int device, size_t bytes);
// `bytes` (at least 1) of page-locked host memory; `flags` as cudaHostAlloc's.
StatusOr<PinnedMemory> AllocatePinned(int device, size_t bytes,
                                      unsigned flags = cudaHostAllocDefault);

template <typename T, typename Memory>
class OwnedArray {
 public:
  OwnedArray() = default;
  T* get() const { return static_cast<T*>(memory_.get()); }
  T& operator[](size_t i) const { return get()[i]; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  explicit operator bool() const { return static_cast<bool>(memory_); }

 protected:
  OwnedArray(Memory memory, size_t size) : memory_(std::move(memory)), size_(size) {}

 private:
  Memory memory_;
  size_t size_ = 0;
};

template <typename T>
class DeviceArray : public OwnedArray<T, DeviceMemory> {
 public:
  DeviceArray() = default;
  static StatusOr<DeviceArray> Allocate(int device, size_t count) {
    STOKER_ASSIGN_OR_RETURN(DeviceMemory m, AllocateDevice(device, count * sizeof(T)));
    return DeviceArray(std::move(m), count);
  }

 private:
  using OwnedArray<T, DeviceMemory>::OwnedArray;
};

template <typename T>
class PinnedArray : public OwnedArray<T, PinnedMemory> {
 public:
  PinnedArray() = default;
  static StatusOr<PinnedArray> Allocate(int device, size_t count,
                                        unsigned flags = cudaHostAllocDefault) {
    STOKER_ASSIGN_OR_RETURN(PinnedMemory m, AllocatePinned(device, count * sizeof(T), flags));
    return PinnedArray(std::move(m), count);
  }

 private:
  using OwnedArray<T, PinnedMemory>::OwnedArray;
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_MEMORY_H_
