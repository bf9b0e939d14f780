// RunConfig: the one YAML file that describes a run, parsed and validated before anything runs.
//
// Both binaries use it: `baton submit` validates and freezes it as <run_dir>/run.yaml, and
// `baton-train` reads that frozen copy. Validation rejects unknown and repeated keys, wrong types
// and out-of-range values, naming file:line:col, key path and value (exit 78). Defaults live here
// next to each field, ranges in the key tables (run_config_keys.h), the dataset-folder rule in
// dataset_folder.h; configs/example.yaml documents every key. Plain value types; thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "schema/status.h"
#include "schema/vocabularies.h"

namespace baton {

struct RunSection {
  std::string name;   // defaults to the config file's stem
  std::string dir;    // run directory; empty = chosen by `baton submit` under $BATON_HOME
  int64_t steps = 0;  // target optimizer steps (required, >= 1)
  int64_t seed = 0;   // root of every random stream
};

struct SlurmSection {
  std::string partition;  // empty = the cluster's default partition
  std::string qos;        // empty = none
  std::string account;    // empty = none
  // The SLURM cluster the run is on (its ClusterName); empty = ask SLURM at submit. Recorded on
  // the run and its attempts (docs/team.md); submit refuses a name the local SLURM contradicts.
  std::string cluster;
  int64_t nodes = 1;
  int64_t ntasks_per_node = 1;  // one trainer rank per task
  int64_t gpus_per_node = 0;
  int64_t cpus_per_task = 1;
  // Memory each rank may use, GB (1e9 bytes); 0 = unknown, no check. `baton submit` refuses a
  // run whose memory plan (baton-train plan-memory) exceeds it: gpu_memory_gb for a cuda run,
  // mem_per_task_gb (also asked of SLURM as --mem-per-cpu share) for a cpu run.
  double gpu_memory_gb = 0;
  double mem_per_task_gb = 0;
  std::string time = "01:00:00";  // SLURM time limit: [D-]HH:MM:SS, MM:SS or minutes
  Signal signal = Signal::kUsr1;  // warning signal sent `signal_lead_s` before the limit
  int64_t signal_lead_s = 120;    // seconds
  int64_t max_restarts = 100;     // preemption requeues allowed before the run is FAILED
  int64_t max_failures = 3;       // crash requeues allowed before the run is FAILED
  // Restarts of the trainer inside the same allocation after a hang or a crash that is not the
  // run's own fault, before the exit policy's requeue (per job start).
  int64_t in_job_restarts = 2;
  // After a clean preemption (attempt_end written, checkpoint committed) `baton watch` / `baton
  // serve` end SLURM's requeue hold (~2 min) with `scontrol update StartTime=now`, once
  // release_hold_after_s have passed since the attempt ended (the new launch credential must be
  // newer, in whole seconds, than the revoked one). false: wait out the hold.
  bool release_requeue_hold = true;
  double release_hold_after_s = 3;
  // Seconds a preempted job lives after SLURM's first signal; 0 = ask SLURM at submit (the
  // partition's GraceTime plus the cluster's KillWait). `baton submit` weighs the predicted stop
  // save against it (docs/orchestrator.md, "Grace budget").
  double preempt_grace_s = 0;
};

struct DataSection {
  std::string path;          // dataset folder (required; relative to the config file)
  int64_t batch_size = 4;    // episodes packed into one micro-step
  int64_t pad_multiple = 8;  // latent frames: padded F is a multiple of this
  int64_t pool_factor = 50;  // pool = batch_size * pool_factor episodes sorted by length
  SamplerPlan plan = SamplerPlan::kGlobal;
  int64_t prefetch = 2;  // batches read ahead on the loader thread
};

struct ModelSection {
  // An upstream `transformer/` folder (or its parent) to start from: weights, and the sizes of
  // its config.json (docs/upstream.md). Empty = random init from run.seed.
  std::string init_from;
  // The keys below that the config file gave explicitly (with init_from they must agree with
  // the folder's config.json; without it they are just recorded). Not a key itself.
  std::vector<std::string> given;
  int64_t dim = 64;  // transformer width D
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t ffn_dim = 256;
  int64_t freq_dim = 256;  // sinusoidal timestep embedding size
  int64_t patch_size = 2;  // spatial patch (H and W)
  double rope_theta = 10000.0;
  double eps = 1e-6;  // LayerNorm / RMSNorm epsilon
};

struct ObjectiveSection {
  double video_shift = 5.0;       // timestep-grid shift for video
  double action_shift = 1.0;      // timestep-grid shift for actions
  double clean_noise_prob = 0.5;  // chance the clean video copy is lightly noised
  double video_loss_weight = 1.0;
  double action_loss_weight = 1.0;
  int64_t chunk_min = 1;  // latent frames per attention chunk, drawn per micro-step
  int64_t chunk_max = 4;
  int64_t window_min = 4;  // attention window in frame-id units, drawn per micro-step
  int64_t window_max = 64;
  // Chance that an episode's text is replaced by the dataset's empty-prompt embedding
  // (meta/empty_text.safetensors), drawn per (seed, step, episode): classifier-free guidance.
  double text_dropout = 0.1;
};

struct OptimSection {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.95};
  double weight_decay = 0.1;
  double eps = 1e-8;
  double grad_clip = 2.0;            // global-norm clip; 0 disables
  int64_t warmup_steps = 200;        // linear warmup from 0 to lr
  int64_t resume_warmup_steps = 50;  // re-warmup after a weights-only resume; 0 disables
  int64_t grad_accum = 1;            // micro-steps per optimizer step
  // ZeRO-style sharding across data-parallel ranks (docs/trainer.md): none = every rank holds
  // all AdamW state; optimizer = each rank holds the state of ~1/W of the parameters and updates
  // them, the new weights are gathered; gradients = also keeps only that part of the reduced
  // gradients once the step's reduction is done.
  ShardMode shard = ShardMode::kNone;
  // Where the float32 master weights live (schema/vocabularies.h); sharded needs optim.shard.
  OptimMaster master = OptimMaster::kReplicated;
};

struct CheckpointSection {
  int64_t every = 100;     // optimizer steps between checkpoints
  int64_t keep_last = 3;   // newest checkpoints kept
  int64_t keep_every = 0;  // also keep every M-th step's checkpoint; 0 = none
  // dtype of transformer/ weights (what upstream loads); a checkpoint whose export dtype is not
  // the master dtype also holds the exact master weights for resume.
  ExportDType export_dtype = ExportDType::kFp32;
  int64_t max_shard_bytes = 10000000000;  // above it transformer/ is sharded (diffusers' "10GB")
  // The checkpoint folder's write rate per rank, GB/s, for the grace check at submit; 0 = measure
  // it with a short fsync'd probe of the folder (cached per folder for a day).
  double write_gbps = 0;
  // Periodic saves copy the state to host memory and write it on a background thread while
  // training goes on (sync when the snapshot does not fit in host memory;
  // docs/checkpoint_format.md).
  bool async = true;
  // keep_best: also keep the k checkpoints with the lowest value of `keep_best_metric` (one of
  // kEvalMetricNames); empty = no keep-best. A checkpoint not yet evaluated is never deleted
  // while keep-best is on (docs/eval.md, "Retention").
  std::string keep_best_metric;
  int64_t keep_best_k = 0;
};

// The metrics an eval produces, as a retention rule names them.
inline constexpr const char* kEvalMetricNames[] = {"eval.loss", "eval.loss_video",
                                                   "eval.loss_action"};

// eval: the held-out set, and when and where committed checkpoints are evaluated (docs/eval.md).
// Exactly one source: a seeded fraction of data.path (removed from training), a list of episode
// indices of data.path (removed from training), or a second dataset folder. No source: no eval.
struct EvalSection {
  double fraction = 0;            // (0, 1): that share of data.path's episodes, drawn by `seed`
  int64_t seed = 0;               // the draw of `fraction`, and the eval's noise and timesteps
  std::vector<int64_t> episodes;  // episode indices of data.path
  std::string data;               // a second dataset folder (relative to the config file)
  int64_t every = 1;              // evaluate every K-th committed checkpoint
  EvalMode mode = EvalMode::kInline;
  // job mode: the eval job's own SLURM request (empty partition: the run's; 0: the run's).
  std::string partition;
  std::string time = "00:30:00";
  int64_t cpus_per_task = 0;
  bool enabled() const { return fraction > 0 || !episodes.empty() || !data.empty(); }
};

struct TrainSection {
  DType dtype = DType::kFloat32;
  Device device = Device::kCpu;
  int64_t log_every = 1;  // steps between progress lines
  int64_t profile = 0;    // micro-steps to profile (tokens, fwd+bwd time, peak memory)
  // Consecutive steps with a NaN/Inf loss or gradient norm (each skipped, not applied) after
  // which the run stops as diverged (exit 79).
  int64_t max_nonfinite_steps = 3;
  // none | blocks: recompute each transformer block in the backward pass instead of keeping its
  // activations (same gradients, bitwise on CPU; less memory, ~1 more forward of time).
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::kNone;
  // The device's peak dense FLOP/s for the run's dtype, in TFLOP/s (e.g. 989 for an H100's bf16):
  // the run page's MFU divides by it. 0: unknown, no MFU. Read by the orchestrator only.
  double device_peak_tflops = 0;
  // Deterministic kernels only (libtorch's deterministic algorithms, cuBLAS's fixed workspace):
  // what a bit-identical resume needs on a GPU; an op without such a kernel fails the run by
  // name. CPU runs are deterministic either way.
  bool deterministic = false;
  // Hang detection by the launcher (rank heartbeats): a rank is hung when its heartbeat is older
  // than max(hang_min_s, hang_factor x the attempt's p99 step time); before the attempt's first
  // step finishes the budget is first_step_timeout_s. Read by the launcher only.
  double hang_min_s = 60;
  double hang_factor = 5;
  double first_step_timeout_s = 600;
};

struct RunConfig {
  std::string source;  // the file it was read from (for messages)
  // Notes that do not stop the run ("<file>:<line>:<col>: <key>: <note>"); not part of ToYaml.
  std::vector<std::string> warnings;
  RunSection run;
  SlurmSection slurm;
  DataSection data;
  ModelSection model;
  ObjectiveSection objective;
  OptimSection optim;
  CheckpointSection checkpoint;
  TrainSection train;
  EvalSection eval;
};

const char* DTypeName(DType dtype);

// What the caller knows about where the config will run.
struct RunConfigOptions {
  // Whether the baton-train that runs this config was built with CUDA. The orchestrator cannot
  // know (the job may run a trainer built on another machine, docs/trainer_deps.md): kUnknown
  // accepts `train.device: cuda` with a warning. baton-train knows: kNo rejects it (exit 78).
  enum class Cuda { kUnknown, kYes, kNo };
  Cuda cuda = Cuda::kUnknown;
  // false: skip what looks at the filesystem (data.path exists, batch_size against the dataset).
  // For reading a run's frozen run.yaml later (the UI, the CLI), when the dataset may be gone;
  // submit, launch and the trainer keep the checks.
  bool check_filesystem = true;
  // false: model.init_from need not exist. It is read only at a run's fresh start (a resume
  // takes the sizes and weights from its own checkpoint), so the trainer checks it then itself,
  // and the launcher of a requeued run must not fail on an upstream folder purged since submit.
  bool check_init_from = true;
};

// A run config is a few KiB; a bigger file is the wrong file, refused before it is parsed.
constexpr int64_t kMaxRunConfigBytes = 1 << 20;
// Problems listed in one error; the rest are counted ("... and 7 more"), so a generated or
// wrong file cannot flood a terminal or hold unbounded memory.
constexpr size_t kMaxRunConfigErrors = 20;

// Reads, resolves (relative paths against the file's folder) and validates `path`. On failure
// the Status (Code::kConfig) lists every problem found, one per line, each as
// "<file>:<line>:<col>: <key.path>: <what> (got <value>)". A path that is not a regular file
// (a folder, a FIFO, a device) or is larger than kMaxRunConfigBytes is refused without reading it,
// so a FIFO never blocks the caller.
Result<RunConfig> LoadRunConfig(const std::string& path, const RunConfigOptions& options = {});

// Same, from YAML text; `source` names it in messages and anchors relative paths.
Result<RunConfig> ParseRunConfig(const std::string& yaml_text, const std::string& source,
                                 const RunConfigOptions& options = {});

// As YAML, absolute paths; with init_from only the model keys given. Parse(ToYaml(c)) == c.
std::string ToYaml(const RunConfig& config);

}  // namespace baton
