#include "trainer/distributed/process_group.h"

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BATON_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "schema/exit_codes.h"
#include "trainer/distributed/collective_wait.h"
#include "trainer/distributed/failure_agreement.h"
#include "trainer/fail.h"
#include "trainer/train/stop_signal.h"
#include "trainer/train/stop_state.h"

namespace baton {

namespace {

// How often a rank waiting in a collective looks at its stop flag and the clock, milliseconds.
constexpr int kWaitPollMs = 100;
// Gloo's own timeout is this much later than ours, so ours names the collective first, seconds.
constexpr double kGlooTimeoutSlackS = 30;

}  // namespace

// From libtorch 2.0 the Gloo and NCCL groups are c10d::Backends (a c10d::ProcessGroup wraps one
// per device type); in 1.13 they were ProcessGroups. Both offer the collectives used here with
// the same signatures, so the handle holds whichever base the release has.
struct ProcessGroupHandle::Impl {
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Backend> pg;
#else
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
#endif
  int64_t rank = 0, world = 1;
  bool cuda = false;
  CollectiveWaitLimits limits;
  // Set once a wait was given up: the peers never came, so Gloo's thread may still be inside
  // that collective. Every later collective fails alike, and the group is never destroyed (its
  // destructor would join that thread).
  int abandoned_code = 0;
  std::string abandoned_message;

  ~Impl() {
    if (abandoned_code != 0) (void)pg.release();
  }

  // Waits for `work` (named `what` in messages) as collective_wait.h says.
  void Wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what);
  [[noreturn]] void Abandon(WaitVerdict verdict, const char* what, double waited_s);
};

void ProcessGroupHandle::Impl::Wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  if (abandoned_code != 0) throw AgreedFailure(abandoned_code, abandoned_message);
  if (cuda) {  // NCCL: wait() orders the streams; the host does not block here
    work->wait();
    return;
  }
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool flag = false;
  };
  auto done = std::make_shared<Done>();
  auto finished = [done] {
    std::lock_guard<std::mutex> lock(done->mu);
    done->flag = true;
    done->cv.notify_all();
  };
  c10::intrusive_ptr<c10::ivalue::Future> future;
  try {
    future = work->getFuture();
  } catch (const c10::Error&) {  // a work without a future: waited for as before
    work->wait();
    return;
  }
  future->addCallback([finished](c10::ivalue::Future&) { finished(); });
  const double start = MonotonicSeconds();
  {
    std::unique_lock<std::mutex> lock(done->mu);
    while (!done->cv.wait_for(lock, std::chrono::milliseconds(kWaitPollMs),
                              [&] { return done->flag; })) {
      const StopLanding landing = FirstStopLanding();
      CollectiveWaitState st;
      st.waited_s = MonotonicSeconds() - start;
      st.since_stop_s = landing.signal != 0 ? MonotonicSeconds() - landing.at_s : -1;
      st.stop_signals = StopSignalCount();
      st.saving = InStopSave();
      const WaitVerdict verdict = JudgeCollectiveWait(st, limits);
      if (verdict != WaitVerdict::kWait) {
        lock.unlock();
        Abandon(verdict, what, st.waited_s);
      }
    }
  }
  try {
    work->wait();
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    BATON_FAIL(kExitInternal,
               "rank " + std::to_string(rank) + " of " + std::to_string(world) + ": the " + what +
                   " failed: " + why.substr(0, why.find('\n')),
               "a peer rank died or its connection broke; its own log says why");
  }
}

void ProcessGroupHandle::Impl::Abandon(WaitVerdict verdict, const char* what, double waited_s) {
  const std::string me = "rank " + std::to_string(rank) + " of " + std::to_string(world);
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", waited_s);
  try {
    if (verdict == WaitVerdict::kLeaveOnStop) {
      const char* sig = StopSignalName(StopSignal());
      BATON_FAIL(kExitRequeue,
                 me + ": a stop signal (" + sig + ") came, and the other ranks did not join the " +
                     what + " (waited " + waited + " s; BATON_STOP_WAIT_S " +
                     std::to_string(int(limits.stop_wait_s)) +
                     " s, or a second signal): leaving without a new checkpoint (exit 75; the "
                     "last committed one stands)",
                 "a peer rank is hung, stopped or was not signalled; stop it too (its heartbeat "
                 "file names its PID), then resume from the last checkpoint");
    }
    BATON_FAIL(kExitInternal,
               me + ": the " + what + " did not complete within " + waited +
                   " s (BATON_COLLECTIVE_TIMEOUT_S " + std::to_string(int(limits.timeout_s)) +
                   " s): a peer rank is hung, stopped or gone",
               "find the rank that stopped (its heartbeat file names its PID and phase)");
  } catch (const FatalError& e) {
    abandoned_code = e.exit_code();
    abandoned_message = e.what();
    throw AgreedFailure(abandoned_code, abandoned_message);
  }
}

ProcessGroupHandle::ProcessGroupHandle() = default;
ProcessGroupHandle::~ProcessGroupHandle() = default;

std::unique_ptr<ProcessGroupHandle> ProcessGroupHandle::Create(const DistEnv& env, bool cuda) {
  std::unique_ptr<ProcessGroupHandle> h(new ProcessGroupHandle());
  h->env_ = env;
  h->cuda_ = cuda;
  h->impl_ = std::make_unique<Impl>();
  if (env.world_size == 1) return h;
  Result<CollectiveWaitLimits> limits =
      CollectiveWaitLimitsFrom(env.collective_timeout_s.c_str(), env.stop_wait_s.c_str());
  if (!limits.ok()) {
    BATON_FAIL(kExitConfig, limits.status().message(), "unset it or give decimal seconds");
  }
  h->impl_->limits = *limits;
  h->impl_->rank = env.rank;
  h->impl_->world = env.world_size;
  h->impl_->cuda = cuda;
  const auto timeout = std::chrono::milliseconds(int64_t(limits->timeout_s * 1000));
  const auto gloo_timeout =
      std::chrono::milliseconds(int64_t((limits->timeout_s + kGlooTimeoutSlackS) * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  if (!env.store_file.empty()) {
    store = c10::make_intrusive<c10d::FileStore>(env.store_file, int(env.world_size));
  } else {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<uint16_t>(env.port);
    opts.isServer = env.rank == 0;
    opts.numWorkers = static_cast<size_t>(env.world_size);
    opts.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts);
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("baton", store);
#ifdef BATON_CUDA
  if (cuda) {
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    h->impl_->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, int(env.rank),
                                                               int(env.world_size), opts);
    return h;
  }
#else
  if (cuda) {
    BATON_FAIL(kExitConfig, "train.device is cuda but this baton-train was built without CUDA",
               "rebuild with -DBATON_CUDA=ON against a CUDA libtorch");
  }
#endif
  auto opts = c10d::ProcessGroupGloo::Options::create(gloo_timeout);
  opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  h->impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, int(env.rank),
                                                             int(env.world_size), opts);
  return h;
}

void ProcessGroupHandle::AllReduceSum(const std::vector<torch::Tensor>& tensors) {
  if (env_.world_size == 1 || tensors.empty()) return;
  // Bucket consecutive tensors of one dtype, flatten, reduce, copy back.
  size_t i = 0;
  while (i < tensors.size()) {
    std::vector<torch::Tensor> bucket;
    int64_t bytes = 0;
    const auto dtype = tensors[i].scalar_type();
    while (i < tensors.size() && tensors[i].scalar_type() == dtype &&
           (bucket.empty() || bytes + tensors[i].nbytes() <= size_t(bucket_bytes_))) {
      bytes += int64_t(tensors[i].nbytes());
      bucket.push_back(tensors[i]);
      ++i;
    }
    std::vector<torch::Tensor> flat = {torch::cat([&] {
      std::vector<torch::Tensor> v;
      for (const auto& t : bucket) v.push_back(t.reshape({-1}));
      return v;
    }())};
    impl_->Wait(impl_->pg->allreduce(flat, c10d::AllreduceOptions{}), "gradient all-reduce");
    ++allreduce_.calls;
    allreduce_.bytes += bytes;
    int64_t off = 0;
    for (const auto& t : bucket) {
      const int64_t n = t.numel();
      t.copy_(flat[0].narrow(0, off, n).view_as(t));
      off += n;
    }
  }
}

namespace {

// Copies elements [start, start + len) of rank r's owned range (its parameters end to end) out of
// `tensors` into `flat` (to_flat) or back (!to_flat); past the range's end `flat` is zero.
void CopyOwnedRange(const std::vector<torch::Tensor>& tensors, const ShardPlan& plan, int64_t r,
                    int64_t start, int64_t len, const torch::Tensor& flat, bool to_flat) {
  const int64_t stop = start + len;
  if (to_flat && plan.numel[size_t(r)] < stop) {
    const int64_t from = std::max(start, plan.numel[size_t(r)]);
    flat.narrow(0, from - start, stop - from).zero_();
  }
  for (int64_t i = plan.begin[size_t(r)]; i < plan.end[size_t(r)]; ++i) {
    const torch::Tensor& t = tensors[size_t(i)];
    const int64_t a = plan.offset[size_t(i)], b = a + t.numel();
    const int64_t lo = std::max(a, start), hi = std::min(b, stop);
    if (lo >= hi) continue;
    auto view = t.view({-1}).narrow(0, lo - a, hi - lo);
    auto part = flat.narrow(0, lo - start, hi - lo);
    if (to_flat) {
      part.copy_(view);
    } else {
      view.copy_(part);
    }
  }
}

// Walks the ranks' owned ranges in buckets: fn(start, len) covers elements [start, start + len)
// of every rank's range, W·len elements of at most `bucket_bytes` in all.
template <typename Fn>
void ForEachBucket(const torch::Tensor& like, const ShardPlan& plan, int64_t world,
                   int64_t bucket_bytes, Fn fn) {
  const int64_t chunk = std::max<int64_t>(1, bucket_bytes / (world * int64_t(like.element_size())));
  for (int64_t start = 0; start < plan.padded; start += chunk) {
    fn(start, std::min(chunk, plan.padded - start));
  }
}

}  // namespace

void ProcessGroupHandle::ReduceScatterOwned(const std::vector<torch::Tensor>& tensors,
                                            const ShardPlan& plan) {
  if (env_.world_size == 1 || tensors.empty()) return;
  const int64_t w = env_.world_size, me = env_.rank;
  const auto opts = tensors.front().options();
  ForEachBucket(tensors.front(), plan, w, bucket_bytes_, [&](int64_t start, int64_t len) {
    auto flat = torch::empty({w * len}, opts);
    for (int64_t r = 0; r < w; ++r) {
      CopyOwnedRange(tensors, plan, r, start, len, flat.narrow(0, r * len, len), true);
    }
    torch::Tensor mine;
    if (cuda_) {
      std::vector<torch::Tensor> out = {torch::empty({len}, opts)};
      std::vector<std::vector<torch::Tensor>> in(1);
      for (int64_t r = 0; r < w; ++r) in[0].push_back(flat.narrow(0, r * len, len));
      impl_->Wait(impl_->pg->reduce_scatter(out, in, c10d::ReduceScatterOptions{}),
                  "gradient reduce-scatter");
      mine = out[0];
    } else {
      std::vector<torch::Tensor> v = {flat};
      impl_->Wait(impl_->pg->allreduce(v, c10d::AllreduceOptions{}), "gradient reduce-scatter");
      mine = flat.narrow(0, me * len, len);
    }
    ++reduce_scatter_.calls;
    reduce_scatter_.bytes += int64_t(flat.nbytes());
    CopyOwnedRange(tensors, plan, me, start, len, mine, false);
  });
}

void ProcessGroupHandle::AllGatherOwned(const std::vector<torch::Tensor>& tensors,
                                        const ShardPlan& plan) {
  if (env_.world_size == 1 || tensors.empty()) return;
  torch::NoGradGuard no_grad;  // writes into parameters
  const int64_t w = env_.world_size, me = env_.rank;
  const auto opts = tensors.front().options();
  ForEachBucket(tensors.front(), plan, w, bucket_bytes_, [&](int64_t start, int64_t len) {
    // Gloo in libtorch 1.13 gathers no bf16: the same bits travel as float16 (a gather copies,
    // it never adds).
    auto wire = [&](const torch::Tensor& t) {
      return !cuda_ && t.scalar_type() == torch::kBFloat16 ? t.view(torch::kHalf) : t;
    };
    std::vector<torch::Tensor> in = {torch::empty({len}, opts)};
    CopyOwnedRange(tensors, plan, me, start, len, in[0], true);
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int64_t r = 0; r < w; ++r) out[0].push_back(torch::empty({len}, opts));
    std::vector<torch::Tensor> in_wire = {wire(in[0])};
    std::vector<std::vector<torch::Tensor>> out_wire(1);
    for (const auto& t : out[0]) out_wire[0].push_back(wire(t));
    impl_->Wait(impl_->pg->allgather(out_wire, in_wire, c10d::AllgatherOptions{}),
                "weight all-gather");
    ++allgather_.calls;
    allgather_.bytes += w * int64_t(in[0].nbytes());
    for (int64_t r = 0; r < w; ++r) {
      if (r != me) CopyOwnedRange(tensors, plan, r, start, len, out[0][size_t(r)], false);
    }
  });
}

bool ProcessGroupHandle::AnyRank(bool flag) {
  if (env_.world_size == 1) return flag;
  // NCCL reduces device tensors only.
  std::vector<torch::Tensor> t = {torch::full(
      {1}, flag ? 1.0 : 0.0,
      torch::TensorOptions(torch::kFloat64).device(cuda_ ? torch::kCUDA : torch::kCPU))};
  impl_->Wait(impl_->pg->allreduce(t, c10d::AllreduceOptions{}), "vote of the ranks");
  return t[0].item<double>() > 0.5;
}

std::vector<std::string> ProcessGroupHandle::AllGatherBytes(const std::string& mine) {
  if (env_.world_size == 1) return {mine};
  const int64_t w = env_.world_size;
  const auto device = cuda_ ? torch::kCUDA : torch::kCPU;  // NCCL reduces device tensors only
  torch::Tensor sizes = torch::zeros({w}, torch::kInt64);
  sizes[env_.rank] = int64_t(mine.size());
  std::vector<torch::Tensor> t = {sizes.to(device)};
  impl_->Wait(impl_->pg->allreduce(t, c10d::AllreduceOptions{}), "exchange between the ranks");
  sizes = t[0].to(torch::kCPU);
  std::vector<int64_t> offset(size_t(w) + 1, 0);
  for (int64_t r = 0; r < w; ++r)
    offset[size_t(r) + 1] = offset[size_t(r)] + sizes[r].item<int64_t>();
  torch::Tensor bytes = torch::zeros({std::max<int64_t>(offset.back(), 1)}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>() + offset[size_t(env_.rank)], mine.data(), mine.size());
  t = {bytes.to(device)};
  impl_->Wait(impl_->pg->allreduce(t, c10d::AllreduceOptions{}), "exchange between the ranks");
  bytes = t[0].to(torch::kCPU);
  std::vector<std::string> out;
  for (int64_t r = 0; r < w; ++r) {
    out.emplace_back(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()) + offset[size_t(r)],
                     size_t(offset[size_t(r) + 1] - offset[size_t(r)]));
  }
  return out;
}

void ProcessGroupHandle::Barrier() {
  if (env_.world_size == 1) return;
  impl_->Wait(impl_->pg->barrier(), "barrier");
}

}  // namespace baton
