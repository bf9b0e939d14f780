// Data-parallel plumbing: who am I (rank, world size, rendezvous) and the one gradient
// reduction per optimizer step.
//
// Rank and world come from SLURM (SLURM_PROCID, SLURM_NTASKS, the first host of
// SLURM_JOB_NODELIST, a port derived from SLURM_JOB_ID) or, outside SLURM, from torchrun-style
// RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT. BATON_RDZV_FILE selects a FileStore instead of
// TCP (tests). Gloo on CPU, NCCL on CUDA builds. AllReduceSum flattens every gradient (plus a few
// scalars to log) into buckets and all-reduces each bucket once per optimizer step — never per
// micro-step. With sharded optimizer state (shard_plan.h) the step instead runs one bucketed
// reduce-scatter of the gradients and one bucketed all-gather of the updated weights, each rank's
// part being its owned parameters laid end to end. Gloo in libtorch 1.13 has no reduce_scatter:
// there each bucket is all-reduced and every rank keeps its own part (same sums, twice the
// bytes); NCCL runs the native one. A bf16 all-gather travels as float16 bits on Gloo (no bf16
// there). Not thread-safe.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "trainer/distributed/shard_plan.h"

namespace baton {

struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  std::string master_addr = "127.0.0.1";
  int port = 29500;
  std::string store_file;  // when set, a FileStore at this path
  int64_t local_rank = 0;
  // BATON_COLLECTIVE_TIMEOUT_S and BATON_STOP_WAIT_S as written ("" when unset): the collective
  // wait limits (collective_wait.h), checked when a process group of W > 1 ranks is made.
  std::string collective_timeout_s, stop_wait_s;
};

// Reads the environment; fails fast (config error) on inconsistent values.
DistEnv DistEnvFromEnvironment();

// Intra-op threads for this rank: SLURM_CPUS_PER_TASK when set, else the machine's CPUs shared
// by the ranks on this host (WORLD_SIZE / LOCAL_WORLD_SIZE outside SLURM).
int CpuThreadsPerRank(const DistEnv& env);

// First host of a SLURM node list: "gpu[03-05,07],cpu1" -> "gpu03".
std::string FirstHostOfNodeList(const std::string& nodelist);

class ProcessGroupHandle {
 public:
  // world_size 1 needs no process group (and opens no socket).
  static std::unique_ptr<ProcessGroupHandle> Create(const DistEnv& env, bool cuda);
  ~ProcessGroupHandle();

  int64_t rank() const { return env_.rank; }
  int64_t world_size() const { return env_.world_size; }

  // Sum-all-reduce of `tensors` in place, flattened into buckets of at most `bucket_bytes`.
  void AllReduceSum(const std::vector<torch::Tensor>& tensors);
  // Sharded step. `tensors` are every trainable parameter's (gradient or weight), in the order
  // `plan` was made from. ReduceScatterOwned leaves the cross-rank sum in this rank's owned
  // tensors (the others keep their local values); AllGatherOwned copies every rank's owned
  // tensors to all ranks.
  void ReduceScatterOwned(const std::vector<torch::Tensor>& tensors, const ShardPlan& plan);
  void AllGatherOwned(const std::vector<torch::Tensor>& tensors, const ShardPlan& plan);

  // Logical OR of a flag across ranks (used to agree on stopping).
  bool AnyRank(bool flag);
  // Every rank's bytes, by rank (used to agree on a failure and to collect file hashes): two
  // small all-reduces, of the lengths and of the bytes laid end to end.
  std::vector<std::string> AllGatherBytes(const std::string& mine);
  void Barrier();

  // Collectives issued and the bytes each rank handed to them, by kind, since the start.
  struct Counter {
    int64_t calls = 0, bytes = 0;
  };
  const Counter& allreduce() const { return allreduce_; }
  const Counter& reduce_scatter() const { return reduce_scatter_; }
  const Counter& allgather() const { return allgather_; }
  int64_t allreduce_calls() const { return allreduce_.calls; }
  int64_t allreduce_bytes() const { return allreduce_.bytes; }
  void set_bucket_bytes(int64_t bytes) { bucket_bytes_ = bytes; }

 private:
  struct Impl;
  ProcessGroupHandle();
  DistEnv env_;
  std::unique_ptr<Impl> impl_;       // the c10d group; empty when world_size == 1
  int64_t bucket_bytes_ = 25 << 20;  // bytes per flattened all-reduce bucket
  bool cuda_ = false;
  Counter allreduce_, reduce_scatter_, allgather_;
};

}  // namespace baton
