// WriteSaveFiles and CommitSave (save_phases.h): a save's third and fourth phases, the writing
// of this rank's files into the .partial folder (each hashed while written and fsync'd) and the
// commit, where every rank's entries are agreed on and rank 0 writes the manifest, renames the
// folder and applies retention.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "schema/atomic_file.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/save_files.h"
#include "trainer/ckpt/save_phases.h"
#include "trainer/ckpt/tensor_file_io.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

// Tensors held on the CPU and contiguous for the life of a write: a CPU master tensor is used
// as it is (no copy); a device tensor or another dtype gets the one copy the format needs.
struct HeldTensors {
  std::vector<torch::Tensor> keep;
  std::vector<StTensorRef> refs;
  void Add(const std::string& name, const torch::Tensor& t,
           std::optional<torch::Dtype> dtype = std::nullopt) {
    torch::Tensor held = t.detach();
    if (held.device().type() != torch::kCPU) held = held.to(torch::kCPU);
    if (dtype && held.scalar_type() != *dtype) held = held.to(*dtype);
    keep.push_back(held.contiguous());
    refs.push_back({name, ToStDType(keep.back().scalar_type()), keep.back().sizes().vec(),
                    keep.back().data_ptr()});
  }
};

}  // namespace

std::string WriteSaveFiles(const PreparedSave& p, const AfterChunk& after_chunk) {
  nlohmann::json written = nlohmann::json::array();
  bool first = true;  // the optimizer file: a test's mid_file fault comes after it
  for (const auto& f : p.files) {
    if (f.small) {
      written.push_back(WriteSmall(p.partial, f.rel, f.text));
      if (after_chunk && !after_chunk(f.text.size()))
        BATON_FAIL(kExitIo, (p.partial / f.rel).string() + ": cancelled",
                   "the save was cancelled while writing (a stop or a failed peer); the last "
                   "committed checkpoint stands");
      continue;
    }
    HeldTensors held;  // converted one file at a time: one file's copy in memory at most
    for (const auto& t : f.tensors) held.Add(t.name, t.tensor, t.dtype);
    auto d =
        WriteHashedSafetensors((p.partial / f.rel).string(), held.refs, f.metadata, after_chunk);
    if (!d.ok()) {
      FailAt(__FILE__, __LINE__, d.status(),
             "check disk space and that " + p.checkpoints_dir + " is writable");
    }
    written.push_back(ManifestEntry(f.rel, d.value()));
    if (first && p.hooks.mid_file) p.hooks.mid_file();
    first = false;
  }
  return written.dump();
}

namespace {

SaveResult CommitOrThrow(const PreparedSave& p, const std::function<std::string()>& part) {
  // Every rank's files are durable (each was fsync'd) before the manifest vouches for them.
  const std::vector<std::string> parts =
      p.multi ? p.team.agreed("while writing its part of the checkpoint", part)
              : std::vector<std::string>{part()};
  SaveResult r;
  r.rank_bytes.assign(size_t(p.world), 0);
  CheckpointManifest m = p.manifest;
  for (size_t k = 0; k < parts.size(); ++k) {
    for (const auto& e : nlohmann::json::parse(parts[k])) {
      m.files.push_back({e.at("path").get<std::string>(), e.at("bytes").get<uint64_t>(),
                         e.at("xxh3").get<std::string>()});
      r.rank_bytes[k] += int64_t(m.files.back().bytes);
      r.bytes += int64_t(m.files.back().bytes);
    }
  }
  if (!p.leader) return r;
  if (p.hooks.before_manifest) p.hooks.before_manifest();
  const fs::path& partial = p.partial;
  const fs::path& final_dir = p.final_dir;
  std::error_code ec;
  BATON_CHECK_OK(WriteManifestListed(partial.string(), m), "check disk space");
  BATON_CHECK_OK(FsyncDir((partial / "transformer").string()),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");
  BATON_CHECK_OK(FsyncDir(partial.string()),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");
  if (p.hooks.before_rename) p.hooks.before_rename();
  if (fs::exists(final_dir, ec)) {  // re-saving a step (a resume redid it): replace whole
    const fs::path old = final_dir.string() + ".old." + std::to_string(::getpid());
    fs::rename(final_dir, old, ec);
    fs::rename(partial, final_dir, ec);
    fs::remove_all(old);
  } else {
    fs::rename(partial, final_dir, ec);
  }
  if (ec)
    BATON_FAIL(kExitIo, final_dir.string() + ": rename failed: " + ec.message(),
               "check permissions and disk space in " + p.checkpoints_dir);
  BATON_CHECK_OK(FsyncDir(p.checkpoints_dir),
                 "check that " + p.checkpoints_dir + " is on a filesystem that supports fsync");

  r.path = final_dir.string();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p.t0).count();
  ApplyRetention(p.checkpoints_dir, p.config);
  return r;
}

}  // namespace

SaveResult CommitSave(const PreparedSave& p, const std::function<std::string()>& part) {
  try {
    return CommitOrThrow(p, part);
  } catch (const FatalError& e) {
    // A write the filesystem refused (full, read-only) leaves no half-written folder: every
    // rank's part has ended by now (the agreement above), so rank 0 removes it.
    if (p.leader && e.exit_code() == kExitIo) {
      std::error_code ec;
      fs::remove_all(p.partial, ec);
    }
    throw;
  }
}

}  // namespace baton
