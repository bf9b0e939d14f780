// The closed vocabularies: config values and protocol words that are one of a few names. Each is
// an enum with one table of {value, name} (Vocabulary<E>::kWords, in enum order); Name and Parse
// are the only way between the two, so a name is spelled once and the code compares enums. What
// each word means is documented where the key or record is (docs/run_config.md, docs/events.md).
//
// Parse returns kInvalidArgument naming the accepted names; the config reader names the key and
// the file around it. Find is the lenient lookup for readers of records (none for a word this
// build does not know). The protocol's own words (segment_end and attempt_end reasons, exit
// actions, resume modes) specialise Vocabulary next to their enums (event_records.h,
// resume_decision.h) and share Name, Find and Parse. Constant tables; thread-safe.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/status.h"

namespace baton {

// optim.shard: which AdamW state and gradients a data-parallel rank keeps (docs/trainer.md).
enum class ShardMode { kNone, kOptimizer, kGradients };
// optim.master: where the float32 master weights live. replicated: every rank holds the whole
// master (the model's parameters are the master; bf16 runs cast them under autocast). sharded:
// the master of each parameter lives only on the rank that owns its AdamW state (optim.shard's
// plan), and in bf16 runs every rank computes with bf16 copies of the matmul weights.
enum class OptimMaster { kReplicated, kSharded };
// eval.mode: where a committed checkpoint is evaluated (docs/eval.md). inline: by the training
// job itself at the step boundary after the save; job: by a small SLURM job of its own that
// `baton watch` / `baton serve` submit.
enum class EvalMode { kInline, kJob };
// train.activation_checkpointing: what the backward pass recomputes instead of keeping.
enum class ActivationCheckpointing { kNone, kBlocks, kBlocksAttention };
// train.device.
enum class Device { kCpu, kCuda };
// train.dtype: the master dtype (bfloat16 trains under autocast with fp32 masters).
enum class DType { kFloat32, kFloat64, kBFloat16 };
// checkpoint.export_dtype: the dtype of a checkpoint's transformer/ weights.
enum class ExportDType { kFp32, kBf16 };
// data.plan: where the length-bucketed sampler's pools are sorted (length_bucket_sampler.h):
// global, across all ranks (rank r takes batches r, r + W, ...); per_rank, on each rank over the
// episodes dealt to it.
enum class SamplerPlan { kGlobal, kPerRank };
// A stop signal by its name without "SIG": slurm.signal (USR1, USR2, TERM), and the signal that
// stopped a trainer (segment_end "signal", the attempts table's trainer_signal).
enum class Signal { kUsr1, kUsr2, kTerm, kInt };

template <class E>
struct Word {
  E value;
  const char* name;
};

template <class E>
struct Vocabulary;

template <>
struct Vocabulary<ShardMode> {
  static constexpr Word<ShardMode> kWords[] = {{ShardMode::kNone, "none"},
                                               {ShardMode::kOptimizer, "optimizer"},
                                               {ShardMode::kGradients, "gradients"}};
};
template <>
struct Vocabulary<OptimMaster> {
  static constexpr Word<OptimMaster> kWords[] = {{OptimMaster::kReplicated, "replicated"},
                                                 {OptimMaster::kSharded, "sharded"}};
};
template <>
struct Vocabulary<EvalMode> {
  static constexpr Word<EvalMode> kWords[] = {{EvalMode::kInline, "inline"},
                                              {EvalMode::kJob, "job"}};
};
template <>
struct Vocabulary<ActivationCheckpointing> {
  static constexpr Word<ActivationCheckpointing> kWords[] = {
      {ActivationCheckpointing::kNone, "none"},
      {ActivationCheckpointing::kBlocks, "blocks"},
      {ActivationCheckpointing::kBlocksAttention, "blocks+attention"}};
};
template <>
struct Vocabulary<Device> {
  static constexpr Word<Device> kWords[] = {{Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}};
};
template <>
struct Vocabulary<DType> {
  static constexpr Word<DType> kWords[] = {
      {DType::kFloat32, "float32"}, {DType::kFloat64, "float64"}, {DType::kBFloat16, "bfloat16"}};
};
template <>
struct Vocabulary<ExportDType> {
  static constexpr Word<ExportDType> kWords[] = {{ExportDType::kFp32, "fp32"},
                                                 {ExportDType::kBf16, "bf16"}};
};
template <>
struct Vocabulary<SamplerPlan> {
  static constexpr Word<SamplerPlan> kWords[] = {{SamplerPlan::kGlobal, "global"},
                                                 {SamplerPlan::kPerRank, "per_rank"}};
};
template <>
struct Vocabulary<Signal> {
  static constexpr Word<Signal> kWords[] = {{Signal::kUsr1, "USR1"},
                                            {Signal::kUsr2, "USR2"},
                                            {Signal::kTerm, "TERM"},
                                            {Signal::kInt, "INT"}};
};

// The name of `value`; "?" for a value outside the table (a cast, never a parsed one).
template <class E>
const char* Name(E value) {
  for (const Word<E>& w : Vocabulary<E>::kWords) {
    if (w.value == value) return w.name;
  }
  return "?";
}

// {"none", "optimizer", "gradients"}: the accepted names in table order (a command-line flag's
// check of a closed vocabulary, CLI::IsMember).
template <class E>
std::vector<std::string> Words() {
  std::vector<std::string> out;
  for (const Word<E>& w : Vocabulary<E>::kWords) out.emplace_back(w.name);
  return out;
}

// "none, optimizer, gradients": the accepted names in table order.
template <class E>
std::string Names() {
  std::string out;
  for (const Word<E>& w : Vocabulary<E>::kWords)
    out += (out.empty() ? "" : ", ") + std::string(w.name);
  return out;
}

template <class E>
std::optional<E> Find(std::string_view name) {
  for (const Word<E>& w : Vocabulary<E>::kWords) {
    if (name == w.name) return w.value;
  }
  return std::nullopt;
}

template <class E>
Result<E> Parse(std::string_view name) {
  if (const std::optional<E> value = Find<E>(name)) return *value;
  return Status::InvalidArgument("expected one of " + Names<E>() + ", got '" + std::string(name) +
                                 "'");
}

// Whether a word kept as text (a record's reason, event_records.h) is one of `values`' words.
template <class E>
bool IsOneOf(std::string_view word, std::initializer_list<E> values) {
  for (E v : values) {
    if (word == Name(v)) return true;
  }
  return false;
}

}  // namespace baton
