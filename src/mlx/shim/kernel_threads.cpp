// kernel_threads.cpp: the persistent thread pool of rlx's CPU kernels (see kernels.h).
//
// Sized once to the CPUs the process may run on (sched_getaffinity) or RLX_NUM_THREADS; the
// calling thread (MLX's stream thread, inside a kernel's task) counts as one of them, so a
// kernel never has more threads running than that. Workers take chunks from a shared counter;
// the caller takes chunks too and, once none are left, waits only for the workers inside a
// chunk, never for one not yet scheduled. Between jobs a worker polls for the next one for up to
// kSpin, then sleeps on a condition variable: a decode step of an LLM runs ~100 jobs a few
// microseconds apart, and waking a sleeping worker for each (a futex call and two context
// switches) took ~10% of its CPU time; a pause longer than kSpin costs one wake-up, as before.
// The caller likewise polls that long for the workers still inside a chunk before it sleeps.
// Polling yields the core (sched_yield) at every turn: the cores are shared with MLX's stream
// thread, the thread that builds the graph and other processes, and a pause-loop spin slowed the
// smallest zoo models (PP-OCR cls 3.3 -> 3.9 ms; with yields 3.1 either way). One job at a time:
// a second caller (another stream's thread) runs its work inline instead of waiting.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "mlx/shim/kernels.h"

namespace rlx_kernels {

Isa detect_isa() {
#ifdef RLX_KERNEL_HAS_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq"))
    return Isa::v4;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::v3;
#endif
  return Isa::base;
}

int num_threads() {
  static const int n = [] {
    const char *env = getenv("RLX_NUM_THREADS");
    if (env && *env) {
      char *end = nullptr;
      long v = strtol(env, &end, 10);
      if (end && !*end && v > 0) return (int)std::min(v, 1024L);
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    unsigned hw = std::thread::hardware_concurrency();
    return hw ? (int)hw : 1;
  }();
  return n;
}

namespace {

// How long an idle worker (and a caller waiting for workers) polls before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(100);

// Spins until done() or kSpin has passed; returns done().
template <class F>
bool spin(F &&done) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0;; i++) {
    if (done()) return true;
    sched_yield(); /* the core to a runnable thread (MLX's stream thread, the caller's) if there is one */
    if (i % 16 == 15 && std::chrono::steady_clock::now() - t0 > kSpin) return done();
  }
}

class Pool {
 public:
  explicit Pool(int workers) {
    if (sched_getaffinity(0, sizeof allowed_, &allowed_) != 0) CPU_ZERO(&allowed_);
    for (int i = 0; i < workers; i++) threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "rlx-pool");  // for profilers (bench/zoo/cpu_profile.py)
      work();
    });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto &t : threads_) t.join();
  }

  // false when another job is running (the caller then runs its work itself).
  bool run(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)> &fn) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lk(m_);
      fn_ = &fn, n_ = n, chunk_ = chunk;
      caller_cpu_.store(sched_getcpu());
      next_.store(0);
      open_ = true;
      gen_.fetch_add(1);
    }
    wake_.notify_all();
    chunks();
    // Workers that have not joined yet never will: the caller does not wait for a thread the
    // scheduler has not run (loaded machines), only for those inside a chunk.
    {
      std::lock_guard<std::mutex> lk(m_);
      open_ = false;
    }
    if (!spin([this] { return active_.load() == 0; })) {
      std::unique_lock<std::mutex> lk(m_);
      done_.wait(lk, [this] { return active_.load() == 0; });
    }
    fn_ = nullptr;
    return true;
  }

 private:
  void chunks() {
    for (;;) {
      int64_t b = next_.fetch_add(chunk_);
      if (b >= n_) return;
      (*fn_)(b, std::min(b + chunk_, n_));
    }
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin([&] { return stop_.load() || gen_.load() != seen; });
      std::unique_lock<std::mutex> lk(m_);
      wake_.wait(lk, [&] { return stop_.load() || gen_.load() != seen; });
      if (stop_) return;
      seen = gen_.load();
      if (!open_) continue;
      active_++;
      lk.unlock();
      leave_caller_cpu();
      chunks();
      if (active_.fetch_sub(1) == 1) { /* under m_: the caller is either before its check or asleep */
        std::lock_guard<std::mutex> g(m_);
        done_.notify_one();
      }
    }
  }

  // A worker woken on the CPU of the thread that woke it moves to the others. Linux may place a
  // woken thread on its waker's CPU, and after an idle pause (all threads asleep) it did so on
  // this 2-CPU VM: the worker and the caller then shared one CPU for the whole run while the other
  // stayed idle (perf sched: DNSMOS P.808 ran in 13 ms after a 50 ms pause, 7.4 ms without one,
  // its CPU time the same), until the load balancer moved one, often not within the run. The
  // worker then stays off that CPU while the caller keeps it (affinity: the allowed CPUs but the
  // caller's), and is let back on it when it finds itself sharing another caller's CPU.
  void leave_caller_cpu() {
    int c = caller_cpu_.load(), self = sched_getcpu();
    if (c < 0 || self != c || !CPU_ISSET(c, &allowed_) || CPU_COUNT(&allowed_) < 2) return;
    cpu_set_t others = allowed_;
    CPU_CLR(c, &others);
    sched_setaffinity(0, sizeof others, &others); /* moves this thread now; a failure leaves it where it is */
  }

  std::vector<std::thread> threads_;
  cpu_set_t allowed_;
  std::atomic<int> caller_cpu_{-1};
  std::mutex busy_, m_;
  std::condition_variable wake_, done_;
  std::atomic<bool> stop_{false};
  bool open_ = false;  // under m_
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> active_{0};
  const std::function<void(int64_t, int64_t)> *fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

Pool &pool() {
  static Pool p(num_threads() - 1);
  return p;
}

}  // namespace

// Jobs of fewer grains run on the caller alone. A grain is 5-20 us of one thread's work at the
// sizes the kernels pick; waking a sleeping worker costs a futex call, a context switch on each
// side and the worker's wake-up latency, which a smaller job does not win back. On the tiny zoo
// models most kernels are this small: PP-OCR cls woke the pool 36 times per run (16 with this),
// Silero VAD 5 (1).
constexpr int64_t kMinGrains = 4;

namespace {
std::atomic<uint64_t> published{0};
}

void kernels_publish() { published.fetch_add(1, std::memory_order_release); }
void kernels_observe() { (void)published.load(std::memory_order_acquire); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0) return;
  int nt = num_threads();
  grain = std::max<int64_t>(grain, 1);
  if (nt <= 1 || n < kMinGrains * grain) {
    fn(0, n);
  } else {
    // About four chunks per thread: even shares when threads are preempted (shared machines).
    int64_t chunk = std::max(grain, (n + 4 * nt - 1) / (4 * nt));
    if (!pool().run(n, chunk, fn)) fn(0, n);
  }
  kernels_publish();
}

}  // namespace rlx_kernels

extern "C" int rlx_mx_num_threads(void) { return rlx_kernels::num_threads(); }
