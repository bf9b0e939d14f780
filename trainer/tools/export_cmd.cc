// `baton-train export --checkpoint DIR --out OUT [--dtype fp32|bf16] [--json]`: one committed
// checkpoint's transformer/ folder (upstream's layout: config.json, weights, the index when
// sharded) written into OUT/transformer, for `baton export` (docs/eval.md, "Export").
//
// The checkpoint is verified first, every file against the manifest's hash (65 naming the file
// otherwise). Without --dtype, or with the dtype transformer/ already holds, its verified files
// are copied byte for byte, so the export computes exactly what the checkpoint does. Another
// dtype is converted from the exact master weights (master_weights.safetensors when the
// checkpoint holds them). OUT/transformer appears whole or not at all: it is written as
// OUT/transformer.partial, fsync'd and renamed. --json prints what the provenance needs: step,
// dtype, the checkpoint's config hash and dataset fingerprint, this binary's version and commit.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "schema/atomic_file.h"
#include "schema/build_info.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/checkpoint.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"

namespace baton {
namespace fs = std::filesystem;

namespace {

struct Args {
  std::string checkpoint, out, dtype;
  bool json = false;
};

// The dtype of the first tensor of `single` (relative to the checkpoint), or of the first file
// `index` names; nullopt when neither exists.
std::optional<StDType> FirstDtype(const fs::path& ckpt, const char* single, const char* index) {
  fs::path file = ckpt / single;
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    if (!fs::exists(ckpt / index, ec)) return std::nullopt;
    const auto map = ReadWeightMap((ckpt / index).string());
    if (map.empty())
      BATON_FAIL(kExitData, (ckpt / index).string() + ": an empty weight_map",
                 "the checkpoint is damaged; export another one");
    file = (ckpt / index).parent_path() / map.begin()->second;
  }
  auto f = SafetensorsFile::Open(file.string());
  if (!f.ok() || (*f)->tensors().empty())
    BATON_FAIL(kExitData, file.string() + ": no tensors to read the dtype of",
               "the checkpoint is damaged; export another one");
  return (*f)->tensors().front().dtype;
}

StDType StoredDtype(const fs::path& ckpt) {
  const auto t = FirstDtype(ckpt, kWeightsFile, kWeightsIndexFile);
  if (!t)
    BATON_FAIL(kExitData, (ckpt / kWeightsFile).string() + ": missing",
               "the checkpoint is damaged; export another one");
  return *t;
}

std::string DtypeName(StDType t) {
  switch (t) {
    case StDType::kF64:
      return "fp64";
    case StDType::kF32:
      return "fp32";
    case StDType::kBF16:
      return "bf16";
    case StDType::kF16:
      return "fp16";
    default:
      return StDTypeName(t);
  }
}

void FsyncFile(const fs::path& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb+");
  const bool ok = f != nullptr && ::fsync(fileno(f)) == 0;
  if (f != nullptr) std::fclose(f);
  if (!ok)
    BATON_FAIL(kExitIo, path.string() + ": cannot fsync", "check the --out folder's filesystem");
}

// transformer/'s files, verified by the manifest, copied as they are.
std::vector<std::string> CopyTransformer(const fs::path& from, const fs::path& to) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::create_directories(to, ec);
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (!e.is_regular_file()) continue;
    const fs::path dest = to / e.path().filename();
    fs::copy_file(e.path(), dest, ec);
    if (ec)
      BATON_FAIL(kExitIo, dest.string() + ": cannot write: " + ec.message(),
                 "check disk space and that the --out folder is writable");
    FsyncFile(dest);
    files.push_back("transformer/" + e.path().filename().string());
  }
  return files;
}

std::vector<std::string> ConvertTransformer(const fs::path& ckpt, const fs::path& to,
                                            torch::Dtype dtype, const fs::path& out) {
  const ModelDims d = ReadUpstreamDims((ckpt / "transformer").string());
  VideoActionModel model(d);
  // The master weights' own dtype, so nothing is rounded twice.
  const StDType master =
      FirstDtype(ckpt, kMasterWeightsFile, kMasterWeightsIndexFile).value_or(StoredDtype(ckpt));
  model->to(master == StDType::kF64 ? torch::kFloat64 : torch::kFloat32);
  LoadCheckpoint(ckpt.string(), model, nullptr, LoadMode::kWeightsOnly);
  return WriteTransformerFolder(to.string(), model, dtype, CheckpointSection{}.max_shard_bytes,
                                out.string());
}

int RunExport(const Args& a) {
  const fs::path ckpt = fs::absolute(a.checkpoint).lexically_normal();
  const Status verified = VerifyCheckpoint(ckpt.string(), /*check_hashes=*/true);
  if (!verified.ok())
    BATON_FAIL(kExitData, verified.message(),
               "the checkpoint does not verify and is not exported; export another one");
  auto manifest = ReadManifest(ckpt.string());
  if (!manifest.ok())
    FailAt(__FILE__, __LINE__, kExitData, manifest.status().ToString(), "export another one");
  const fs::path out = fs::absolute(a.out).lexically_normal();
  const fs::path dest = out / "transformer", partial = out / "transformer.partial";
  std::error_code ec;
  if (fs::exists(dest, ec))
    BATON_FAIL(kExitTargetNotEmpty, dest.string() + " already exists",
               "export into an empty folder");
  fs::create_directories(out, ec);
  fs::remove_all(partial, ec);
  const StDType stored = StoredDtype(ckpt);
  const std::string want = a.dtype.empty() ? DtypeName(stored) : a.dtype;
  std::vector<std::string> files;
  try {
    files = want == DtypeName(stored)
                ? CopyTransformer(ckpt / "transformer", partial)
                : ConvertTransformer(ckpt, partial,
                                     want == "bf16" ? torch::kBFloat16 : torch::kFloat32, out);
    BATON_CHECK_OK(FsyncDir(partial.string()), "check the --out folder's filesystem");
    fs::rename(partial, dest, ec);
    if (ec)
      BATON_FAIL(kExitIo, dest.string() + ": rename failed: " + ec.message(),
                 "check permissions in the --out folder");
    BATON_CHECK_OK(FsyncDir(out.string()), "check the --out folder's filesystem");
  } catch (...) {
    fs::remove_all(partial, ec);  // nothing half-written stays behind
    throw;
  }
  for (std::string& f : files) {
    if (f.rfind("transformer.partial/", 0) == 0) f = "transformer/" + f.substr(20);
  }
  nlohmann::ordered_json state;
  if (auto text = ReadFile((ckpt / kStateFile).string()); text.ok())
    state = nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
  // trainer_state.json's "data": {"path", "fingerprint"}.
  const nlohmann::ordered_json fingerprint =
      state.is_object() && state.contains("data") && state["data"].is_object()
          ? state["data"].value("fingerprint", nlohmann::ordered_json(nullptr))
          : nlohmann::ordered_json(nullptr);
  const nlohmann::ordered_json j = {{"checkpoint", ckpt.string()},
                                    {"step", manifest->step},
                                    {"dtype", want},
                                    {"config_hash", manifest->config_hash},
                                    {"dataset_fingerprint", fingerprint},
                                    {"files", files},
                                    {"baton_train",
                                     {{"version", build_info::kVersion},
                                      {"commit", build_info::kCommit},
                                      {"tree", build_info::kTree}}}};
  if (a.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << "export: " << ckpt.string() << " -> " << dest.string() << " (" << want << ", "
              << files.size() << " files)\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterExport(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Writes one verified checkpoint's upstream transformer/ folder into OUT/transformer "
      "(what `baton export` calls)");
  cmd->add_option("--checkpoint", a->checkpoint, "A checkpoint_step_<N> folder")->required();
  cmd->add_option("--out", a->out, "Folder to write transformer/ into")->required();
  cmd->add_option("--dtype", a->dtype, "Weights' dtype (default: as the checkpoint stores them)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_flag("--json", a->json, "Print the export's provenance fields as JSON");
  cmd->callback([=] { *selected = [=] { return RunExport(*a); }; });
}

}  // namespace baton
