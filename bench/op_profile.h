// OpProfile: host time per top-level op (forward ops by name, backward by autograd node), on
// every thread, while one is alive; the throughput case's --profile. On a GPU the times are
// launch times unless the ops synchronise, so it is a CPU tool. One at a time per process.
#pragma once

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::bench {

class OpProfile {
 public:
  OpProfile() {
    Self() = this;
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&Enter, &Exit)
            .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
  }
  ~OpProfile() {
    at::removeCallback(handle_);
    Self() = nullptr;
  }
  nlohmann::ordered_json Top(double total_s, size_t n) const {
    std::vector<std::pair<double, std::string>> rows;
    double ops_s = 0;
    for (const auto& [name, e] : time_) {
      rows.push_back({e.first, name});
      ops_s += e.first;
    }
    std::sort(rows.rbegin(), rows.rend());
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (size_t i = 0; i < std::min(n, rows.size()); ++i) {
      j.push_back({{"op", rows[i].second},
                   {"seconds", rows[i].first},
                   {"calls", time_.at(rows[i].second).second}});
    }
    j.push_back({{"op", "(outside any op)"}, {"seconds", total_s - ops_s}, {"calls", 0}});
    return j;
  }

 private:
  struct Frame {
    int depth = 0;
    std::chrono::steady_clock::time_point start;
  };
  static OpProfile*& Self() {
    static OpProfile* p = nullptr;
    return p;
  }
  static Frame& Local() {
    thread_local Frame f;
    return f;
  }
  static std::unique_ptr<at::ObserverContext> Enter(const at::RecordFunction&) {
    if (Local().depth++ == 0) Local().start = std::chrono::steady_clock::now();
    return nullptr;
  }
  static void Exit(const at::RecordFunction& fn, at::ObserverContext*) {
    if (--Local().depth != 0) return;
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Local().start).count();
    std::lock_guard<std::mutex> lock(Self()->mu_);
    auto& e = Self()->time_[fn.name()];
    e.first += s;
    ++e.second;
  }
  std::mutex mu_;
  std::map<std::string, std::pair<double, int64_t>> time_;
  at::CallbackHandle handle_;
};

}  // namespace baton::bench
