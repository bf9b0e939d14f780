#include "trainer/distributed/process_group.h"

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BATON_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>
#include <cstring>
#include <regex>
#include <thread>

#include "schema/exit_codes.h"
#include "trainer/fail.h"

namespace baton {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = Env(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0') {
    BATON_FAIL(kExitConfig,
               std::string("environment variable ") + name + "='" + v + "' is not an integer",
               "unset it or give a number");
  }
  return x;
}

// Seconds to wait for every rank to join or to finish a collective.
constexpr int kCollectiveTimeoutS = 600;
// Ports derived from the job id land in [kPortBase, kPortBase + kPortSpan).
constexpr int kPortBase = 20000, kPortSpan = 20000;

}  // namespace

std::string FirstHostOfNodeList(const std::string& nodelist) {
  // "prefix[03-05,07]rest,..." -> "prefix03"; "host1,host2" -> "host1".
  std::smatch m;
  static const std::regex kBracket("^([^,\\[]*)\\[([0-9]+)[^\\]]*\\]([^,]*)");
  if (std::regex_search(nodelist, m, kBracket)) return m[1].str() + m[2].str() + m[3].str();
  return nodelist.substr(0, nodelist.find(','));
}

DistEnv DistEnvFromEnvironment() {
  DistEnv e;
  if (Env("SLURM_PROCID") && Env("SLURM_NTASKS") && Env("SLURM_STEP_ID")) {
    e.rank = EnvInt("SLURM_PROCID", 0);
    e.world_size = EnvInt("SLURM_NTASKS", 1);
    e.local_rank = EnvInt("SLURM_LOCALID", 0);
    if (const char* nodes =
            Env("SLURM_STEP_NODELIST") ? Env("SLURM_STEP_NODELIST") : Env("SLURM_JOB_NODELIST")) {
      e.master_addr = FirstHostOfNodeList(nodes);
    }
    e.port = kPortBase + int(EnvInt("SLURM_JOB_ID", 0) % kPortSpan);
  } else {
    e.rank = EnvInt("RANK", 0);
    e.world_size = EnvInt("WORLD_SIZE", 1);
    e.local_rank = EnvInt("LOCAL_RANK", 0);
  }
  if (const char* a = Env("MASTER_ADDR")) e.master_addr = a;
  e.port = int(EnvInt("MASTER_PORT", e.port));
  if (const char* f = Env("BATON_RDZV_FILE")) e.store_file = f;
  if (e.world_size < 1 || e.rank < 0 || e.rank >= e.world_size) {
    BATON_FAIL(
        kExitConfig,
        "rank " + std::to_string(e.rank) + " is outside world size " + std::to_string(e.world_size),
        "check SLURM_PROCID/SLURM_NTASKS or RANK/WORLD_SIZE");
  }
  return e;
}

int CpuThreadsPerRank(const DistEnv& env) {
  const int64_t cpus = EnvInt("SLURM_CPUS_PER_TASK", 0);
  if (cpus > 0) return int(cpus);
  const int64_t hw = std::max<int64_t>(1, int64_t(std::thread::hardware_concurrency()));
  const int64_t local = EnvInt("SLURM_NTASKS_PER_NODE", EnvInt("LOCAL_WORLD_SIZE", env.world_size));
  return int(std::max<int64_t>(1, hw / std::max<int64_t>(1, local)));
}

// From libtorch 2.0 the Gloo and NCCL groups are c10d::Backends (a c10d::ProcessGroup wraps one
// per device type); in 1.13 they were ProcessGroups. Both offer the collectives used here with
// the same signatures, so the handle holds whichever base the release has.
struct ProcessGroupHandle::Impl {
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Backend> pg;
#else
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
#endif
};

ProcessGroupHandle::ProcessGroupHandle() = default;
ProcessGroupHandle::~ProcessGroupHandle() = default;

std::unique_ptr<ProcessGroupHandle> ProcessGroupHandle::Create(const DistEnv& env, bool cuda) {
  std::unique_ptr<ProcessGroupHandle> h(new ProcessGroupHandle());
  h->env_ = env;
  h->cuda_ = cuda;
  h->impl_ = std::make_unique<Impl>();
  if (env.world_size == 1) return h;
  const auto timeout = std::chrono::seconds(kCollectiveTimeoutS);
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
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
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
    impl_->pg->allreduce(flat, c10d::AllreduceOptions{})->wait();
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
      impl_->pg->reduce_scatter(out, in, c10d::ReduceScatterOptions{})->wait();
      mine = out[0];
    } else {
      std::vector<torch::Tensor> v = {flat};
      impl_->pg->allreduce(v, c10d::AllreduceOptions{})->wait();
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
    impl_->pg->allgather(out_wire, in_wire, c10d::AllgatherOptions{})->wait();
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
  impl_->pg->allreduce(t, c10d::AllreduceOptions{})->wait();
  return t[0].item<double>() > 0.5;
}

std::vector<std::string> ProcessGroupHandle::AllGatherBytes(const std::string& mine) {
  if (env_.world_size == 1) return {mine};
  const int64_t w = env_.world_size;
  const auto device = cuda_ ? torch::kCUDA : torch::kCPU;  // NCCL reduces device tensors only
  torch::Tensor sizes = torch::zeros({w}, torch::kInt64);
  sizes[env_.rank] = int64_t(mine.size());
  std::vector<torch::Tensor> t = {sizes.to(device)};
  impl_->pg->allreduce(t, c10d::AllreduceOptions{})->wait();
  sizes = t[0].to(torch::kCPU);
  std::vector<int64_t> offset(size_t(w) + 1, 0);
  for (int64_t r = 0; r < w; ++r)
    offset[size_t(r) + 1] = offset[size_t(r)] + sizes[r].item<int64_t>();
  torch::Tensor bytes = torch::zeros({std::max<int64_t>(offset.back(), 1)}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>() + offset[size_t(env_.rank)], mine.data(), mine.size());
  t = {bytes.to(device)};
  impl_->pg->allreduce(t, c10d::AllreduceOptions{})->wait();
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
  impl_->pg->barrier()->wait();
}

}  // namespace baton
