// Copyright 2026 The stoker Authors.
//
// NVTX ranges in the "stoker" domain, so that Nsight Systems (nsys) shows the
// engine's stages beside the kernels. Built only with CUDA
// (STOKER_WITH_NVTX, set by cmake/stoker_cuda.cmake): NVTX 3 is header-only
// and ships with the toolkit. Without a tool attached, each call is a load
// of a null function pointer and a branch (NVTX's own design); without CUDA
// the calls compile to nothing.
//
// Thread-safety: any thread; a range is pushed and popped on one thread.
#ifndef STOKER_TRACE_NVTX_H_
#define STOKER_TRACE_NVTX_H_

#if defined(STOKER_WITH_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace stoker::nvtx {

#if defined(STOKER_WITH_NVTX)
inline nvtxDomainHandle_t Domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("stoker");
  return domain;
}
inline void Push(const char* name) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainRangePushEx(Domain(), &a);
}
inline void Pop() { nvtxDomainRangePop(Domain()); }
constexpr bool kEnabled = true;
#else
inline void Push(const char*) {}
inline void Pop() {}
constexpr bool kEnabled = false;
#endif

// A range from construction to End() or destruction, whichever comes first.
class Range {
 public:
  explicit Range(const char* name) { Push(name); }
  ~Range() { End(); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
  void End() {
    if (open_) Pop();
    open_ = false;
  }

 private:
  bool open_ = true;
};

}  // namespace stoker::nvtx

#endif  // STOKER_TRACE_NVTX_H_
