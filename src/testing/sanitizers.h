// Copyright 2026 The stoker Authors.
//
// STOKER_SANITIZED is defined in builds under AddressSanitizer or
// ThreadSanitizer (GCC's __SANITIZE_*__, clang's __has_feature). Tests that
// bound a child's address space with RLIMIT_AS leave the limit out there:
// the sanitizers reserve terabytes of shadow memory and cannot start under
// it ("ERROR: Failed to mmap"). Header only, macros only.
#ifndef STOKER_TESTING_SANITIZERS_H_
#define STOKER_TESTING_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOKER_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STOKER_SANITIZED 1
#endif
#endif

#endif  // STOKER_TESTING_SANITIZERS_H_
