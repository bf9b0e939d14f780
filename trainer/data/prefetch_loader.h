// PrefetchLoader<T>: produces items 0..count-1 on a background thread, `depth` ahead of the
// consumer, and hands them out in order.
//
// The trainer gives it a function that reads and collates batch k, so disk reads overlap the
// previous micro-step's compute. An exception thrown by the producer (a FatalError naming a
// corrupt episode file) is stored and rethrown by Next() at the item where it happened, on the
// consumer's thread — never swallowed, never a silent skip. Next() is for one consumer thread;
// destruction stops the worker and joins it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace baton {

template <class T>
class PrefetchLoader {
 public:
  PrefetchLoader(std::function<T(int64_t)> produce, int64_t count, int64_t depth)
      : produce_(std::move(produce)), count_(count), depth_(depth < 1 ? 1 : depth) {
    worker_ = std::thread([this] { Run(); });
  }
  ~PrefetchLoader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  PrefetchLoader(const PrefetchLoader&) = delete;
  PrefetchLoader& operator=(const PrefetchLoader&) = delete;

  // The next item, or nullopt after the last. Rethrows the producer's exception.
  std::optional<T> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || error_ || done_; });
    if (!ready_.empty()) {
      T item = std::move(ready_.front());
      ready_.pop_front();
      cv_.notify_all();
      return item;
    }
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }

 private:
  void Run() {
    for (int64_t k = 0; k < count_; ++k) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || static_cast<int64_t>(ready_.size()) < depth_; });
        if (stop_) return;
      }
      try {
        T item = produce_(k);
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(item));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::current_exception();
        cv_.notify_all();
        return;
      }
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  std::function<T(int64_t)> produce_;
  const int64_t count_;
  const int64_t depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> ready_;
  std::exception_ptr error_;
  bool done_ = false;
  bool stop_ = false;
  std::thread worker_;  // last: starts after every member above is constructed
};

}  // namespace baton
