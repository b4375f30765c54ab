// Locks the Clang thread-safety analysis knows (core/thread_annotations.h): Mutex + MutexLock
// in place of std::mutex + std::lock_guard / std::unique_lock, SharedMutex + ReaderLock /
// WriterLock in place of std::shared_mutex. Every lock member says what it guards (GUARDED_BY).
#pragma once

#include <mutex>
#include <shared_mutex>

#include "core/thread_annotations.h"

namespace korovod {

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

}  // namespace korovod
