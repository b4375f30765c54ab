// Locks the Clang thread-safety analysis knows (-Wthread-safety; the annotations are no-ops
// under GCC), checked by the thread_safety.clang ctest entry (docs/testing.md): Mutex +
// MutexLock in place of std::mutex + std::lock_guard / std::unique_lock, SharedMutex +
// ReaderLock / WriterLock in place of std::shared_mutex. Every lock member says what it guards
// (GUARDED_BY). The worker runtime has its own copy (worker-runtime/src/core/mutex.h): the two
// libraries do not depend on each other; the macros are spelled alike so a file may see both.
#pragma once

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define KOROVOD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KOROVOD_THREAD_ANNOTATION(x)
#endif

// A class that is a lock (Mutex, SharedMutex, TimedMutex).
#define KOROVOD_CAPABILITY(name) KOROVOD_THREAD_ANNOTATION(capability(name))
// An RAII class that holds a lock for its lifetime (MutexLock).
#define KOROVOD_SCOPED_CAPABILITY KOROVOD_THREAD_ANNOTATION(scoped_lockable)
// A member read and written only with the lock held.
#define KOROVOD_GUARDED_BY(x) KOROVOD_THREAD_ANNOTATION(guarded_by(x))
// A pointer member whose pointee is read and written only with the lock held.
#define KOROVOD_PT_GUARDED_BY(x) KOROVOD_THREAD_ANNOTATION(pt_guarded_by(x))
// A function its callers call with the lock held (exclusively / at least shared).
#define KOROVOD_REQUIRES(...) KOROVOD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define KOROVOD_REQUIRES_SHARED(...) KOROVOD_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// A function that takes the lock itself: calling it with the lock held deadlocks.
#define KOROVOD_EXCLUDES(...) KOROVOD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Functions that take / give back a lock and return holding / not holding it.
#define KOROVOD_ACQUIRE(...) KOROVOD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define KOROVOD_ACQUIRE_SHARED(...) KOROVOD_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define KOROVOD_RELEASE(...) KOROVOD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define KOROVOD_RELEASE_SHARED(...) KOROVOD_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define KOROVOD_RELEASE_GENERIC(...) KOROVOD_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define KOROVOD_TRY_ACQUIRE(...) KOROVOD_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// A function whose body the analysis skips; every use says why next to it.
#define KOROVOD_NO_THREAD_SAFETY_ANALYSIS KOROVOD_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace kube {

// A std::mutex the analysis knows as a lock. Wait on it with std::condition_variable through a
// MutexLock (which converts to the std::unique_lock the condition variable takes); the waiting
// thread holds the lock again when the wait returns, which is what the analysis assumes.
class KOROVOD_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() KOROVOD_ACQUIRE() { mu_.lock(); }
  bool try_lock() KOROVOD_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void unlock() KOROVOD_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// std::lock_guard / std::unique_lock for Mutex: holds it from construction to destruction,
// except between unlock() and lock(). Converts to std::unique_lock<std::mutex>& for waits.
class KOROVOD_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) KOROVOD_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() KOROVOD_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() KOROVOD_ACQUIRE() { lock_.lock(); }
  void unlock() KOROVOD_RELEASE() { lock_.unlock(); }
  // For std::condition_variable's wait, wait_for and wait_until.
  operator std::unique_lock<std::mutex>&() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A std::shared_mutex the analysis knows as a lock: WriterLock holds it exclusively,
// ReaderLock shared.
class KOROVOD_CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() KOROVOD_ACQUIRE() { mu_.lock(); }
  void unlock() KOROVOD_RELEASE() { mu_.unlock(); }
  void lock_shared() KOROVOD_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() KOROVOD_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class KOROVOD_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) KOROVOD_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() KOROVOD_RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

class KOROVOD_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) KOROVOD_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() KOROVOD_RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace kube
