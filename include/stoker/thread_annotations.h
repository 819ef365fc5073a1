// Copyright 2026 The stoker Authors.
//
// Lock annotations for clang's thread-safety analysis, as LevelDB and Abseil
// spell them (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html). Under
// clang each macro is the attribute of the same meaning; elsewhere (GCC, nvcc)
// it expands to nothing, so annotating costs nothing at run time. Build with
// `make check-thread-safety` (clang, -Wthread-safety -Werror=thread-safety) to
// have the compiler check them.
//
//   class Queue {
//     ...
//    private:
//     void PopLocked() STOKER_EXCLUSIVE_LOCKS_REQUIRED(mu_);
//     Mutex mu_;                            // stoker/mutex.h
//     std::deque<int> items_ STOKER_GUARDED_BY(mu_);
//   };
//
// The lock type must be a capability (std::mutex of libstdc++ is not): use
// stoker::Mutex, MutexLock and CondVar from stoker/mutex.h.
#ifndef STOKER_THREAD_ANNOTATIONS_H_
#define STOKER_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define STOKER_THREAD_ANNOTATION_ATTRIBUTE_(x) __attribute__((x))
#else
#define STOKER_THREAD_ANNOTATION_ATTRIBUTE_(x)  // no-op
#endif

// A type whose objects are locks (a "capability" named `x`, e.g. "mutex").
#define STOKER_CAPABILITY(x) STOKER_THREAD_ANNOTATION_ATTRIBUTE_(capability(x))
// An RAII type that holds a capability for its lifetime (MutexLock).
#define STOKER_SCOPED_CAPABILITY STOKER_THREAD_ANNOTATION_ATTRIBUTE_(scoped_lockable)

// The member or global is read and written only with `x` held.
#define STOKER_GUARDED_BY(x) STOKER_THREAD_ANNOTATION_ATTRIBUTE_(guarded_by(x))
// The data the pointer member points to is accessed only with `x` held.
#define STOKER_PT_GUARDED_BY(x) STOKER_THREAD_ANNOTATION_ATTRIBUTE_(pt_guarded_by(x))

// Lock ordering: this lock is taken after / before the ones named.
#define STOKER_ACQUIRED_AFTER(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(acquired_after(__VA_ARGS__))
#define STOKER_ACQUIRED_BEFORE(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(acquired_before(__VA_ARGS__))

// The caller must hold the locks (exclusively / at least shared).
#define STOKER_EXCLUSIVE_LOCKS_REQUIRED(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(exclusive_locks_required(__VA_ARGS__))
#define STOKER_SHARED_LOCKS_REQUIRED(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(shared_locks_required(__VA_ARGS__))
// The caller must not hold the locks (the function takes them).
#define STOKER_LOCKS_EXCLUDED(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(locks_excluded(__VA_ARGS__))
// The function returns a reference to / pointer at the lock `x`.
#define STOKER_LOCK_RETURNED(x) STOKER_THREAD_ANNOTATION_ATTRIBUTE_(lock_returned(x))

// The function takes / releases the locks (no argument: `this`).
#define STOKER_EXCLUSIVE_LOCK_FUNCTION(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(exclusive_lock_function(__VA_ARGS__))
#define STOKER_SHARED_LOCK_FUNCTION(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(shared_lock_function(__VA_ARGS__))
#define STOKER_UNLOCK_FUNCTION(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(unlock_function(__VA_ARGS__))
// The function tries to take the locks and returns `succeeded` when it did.
#define STOKER_EXCLUSIVE_TRYLOCK_FUNCTION(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(exclusive_trylock_function(__VA_ARGS__))
// The function checks at run time that the caller holds the lock.
#define STOKER_ASSERT_EXCLUSIVE_LOCK(...) \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(assert_exclusive_lock(__VA_ARGS__))

// Turns the analysis off for one function (say why next to it).
#define STOKER_NO_THREAD_SAFETY_ANALYSIS \
  STOKER_THREAD_ANNOTATION_ATTRIBUTE_(no_thread_safety_analysis)

#endif  // STOKER_THREAD_ANNOTATIONS_H_
