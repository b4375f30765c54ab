// Must NOT compile under scripts/thread-safety (clang -Wthread-safety -Werror=thread-safety):
// each function below breaks a lock annotation of operator/kube/mutex.h or
// worker-runtime/src/core/mutex.h / timed_mutex.h. The script checks it fails with exactly
// these findings before it checks the libraries, so a check that stopped seeing violations
// (annotations compiled out, a flag lost) fails instead of passing. Not part of any build.
#include "core/mutex.h"
#include "core/timed_mutex.h"
#include "kube/mutex.h"

namespace operator_side {
class Counter {
 public:
  void bump() { ++count_; }  // writing variable 'count_' requires holding mutex 'mu_' exclusively
  void bump_locked() KOROVOD_REQUIRES(mu_) { ++count_; }
  void bump_twice() {
    kube::MutexLock lock(mu_);
    bump_locked();  // fine: held
  }
  void bump_unlocked() { bump_locked(); }  // calling function 'bump_locked' requires holding ...

 private:
  kube::Mutex mu_;
  int count_ KOROVOD_GUARDED_BY(mu_) = 0;
};
}  // namespace operator_side

namespace runtime_side {
class Counter {
 public:
  int get() const { return count_; }  // reading variable 'count_' requires holding mutex 'mu_'
  int get_locked() const {
    korovod::MutexLock lock(mu_);
    return count_;  // fine: held
  }

 private:
  mutable korovod::Mutex mu_;
  int count_ KOROVOD_GUARDED_BY(mu_) = 0;
};

class Cycle {
 public:
  void start() { held_ = true; }  // writing variable 'held_' requires holding mutex 'mu_' exclusively
  void start_locked() {
    korovod::TimedMutexLock lock(mu_);
    held_ = true;  // fine: held
  }

 private:
  korovod::TimedMutex mu_;
  bool held_ KOROVOD_GUARDED_BY(mu_) = false;
};
}  // namespace runtime_side
