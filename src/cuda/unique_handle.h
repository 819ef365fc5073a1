// Copyright 2026 The stoker Authors.
//
// UniqueHandle: sole ownership of one C handle (a CUDA stream, event or
// allocation), destroyed exactly once. The model is DALI's UniqueHandle
// (include/dali/core/unique_handle.h, under cuda_event.h): a move-only value
// whose destructor calls the handle type's Destroy; moved-from and released
// objects hold the null handle and destroy nothing.
//
//   struct EventTraits {
//     using Handle = cudaEvent_t;
//     static constexpr Handle kNull = nullptr;
//     static void Destroy(Handle h) noexcept;   // must not throw or fail loudly
//   };
//   class CudaEvent : public UniqueHandle<EventTraits> { ... };
//
// Nothing here depends on CUDA, so the ownership rules are tested on any host
// (src/cuda/handles_test.cc).
//
// Thread-safety: like a std::unique_ptr, one owner at a time; distinct
// objects may be used from different threads.
#ifndef STOKER_CUDA_UNIQUE_HANDLE_H_
#define STOKER_CUDA_UNIQUE_HANDLE_H_

#include <utility>

namespace stoker::cuda {

template <typename Traits>
class UniqueHandle {
 public:
  using Handle = typename Traits::Handle;

  constexpr UniqueHandle() noexcept = default;
  // Takes ownership of `h` (which may be Traits::kNull).
  explicit UniqueHandle(Handle h) noexcept : handle_(h) {}
  ~UniqueHandle() { reset(); }

  UniqueHandle(UniqueHandle&& other) noexcept : handle_(other.release()) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;

  Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != Traits::kNull; }

  // Gives up ownership without destroying; the caller owns the handle.
  [[nodiscard]] Handle release() noexcept { return std::exchange(handle_, Traits::kNull); }

  // Destroys the handle held (if any) and holds `h` instead.
  void reset(Handle h = Traits::kNull) noexcept {
    const Handle old = std::exchange(handle_, h);
    if (old != Traits::kNull) Traits::Destroy(old);
  }

 private:
  Handle handle_ = Traits::kNull;
};

}  // namespace stoker::cuda

#endif  // STOKER_CUDA_UNIQUE_HANDLE_H_
