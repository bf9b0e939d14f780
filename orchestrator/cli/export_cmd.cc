// `baton export RUN (--best | --step N) DIR [--dtype bf16]`: a run's checkpoint as what a
// researcher ships (docs/eval.md, "Export"): DIR/transformer/ in upstream's layout and
// DIR/provenance.json (run, step, eval metrics, config hash, data fingerprint, both binaries'
// commit).
//
// This side resolves the run and the step: --best is the checkpoint on disk with the best value
// of keep-best's metric (eval.loss without keep-best) in the run's evals/ files. The tensor
// work, with the verification of every file, is `baton-train export` (it needs libtorch), run
// into a temporary sibling of DIR; provenance.json is added there and the folder is renamed to
// DIR, so DIR is whole or absent. A non-empty DIR is refused (73) before anything is written.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/process_runner.h"
#include "schema/atomic_file.h"
#include "schema/build_info.h"
#include "schema/checkpoint_manifest.h"
#include "schema/exit_codes.h"
#include "schema/keep_best.h"

namespace baton {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

// An export of a large model takes minutes; an hour is a hung trainer.
constexpr double kExportTimeoutS = 3600;

struct ExportOptions {
  std::string run, dir, dtype;
  bool best = false;
  int64_t step = -1;
};

// `p` absolute and normal, without a trailing '/' (so it has a name).
fs::path Normal(const std::string& p) {
  fs::path n = fs::absolute(p).lexically_normal();
  return n.has_filename() ? n : n.parent_path();
}

struct Picked {
  int64_t step = -1;
  std::string metric;  // --best's
};

// RUN as the store knows it, or a run folder given by its path (one copied off the cluster).
Result<RunRecord> ResolveRun(const std::string& run) {
  std::error_code ec;
  if (run.find('/') != std::string::npos && fs::is_directory(run, ec)) {
    RunRecord r;
    r.run_dir = Normal(run).string();
    r.name = fs::path(r.run_dir).filename().string();
    Result<std::string> yaml = ReadFile(RunFolder{r.run_dir}.RunYaml());
    if (!yaml.ok())
      return Status::NotFound(run + ": not a run folder (" + yaml.status().message() + ")");
    r.config = *yaml;
    return r;
  }
  BATON_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenDefaultStore());
  return store->FindRun(run);
}

// The metric --best ranks by: keep-best's, else eval.loss.
std::string BestMetricOf(const RunRecord& run) {
  RunConfigOptions options;
  options.check_filesystem = false;
  options.check_init_from = false;
  Result<RunConfig> config = ParseRunConfig(run.config, RunFolder{run.run_dir}.RunYaml(), options);
  if (config.ok() && !config->checkpoint.keep_best_metric.empty())
    return config->checkpoint.keep_best_metric;
  return kDefaultBestMetric;
}

Result<Picked> PickStep(const ExportOptions& o, const RunRecord& run, const EvalResults& evals) {
  const RunFolder folder{run.run_dir};
  std::vector<int64_t> on_disk;
  for (const CheckpointEntry& c : ListCheckpoints(folder.CheckpointsDir(), false)) {
    if (c.valid) on_disk.push_back(c.step);
  }
  Picked p;
  if (!o.best) {
    p.step = o.step;
    // Present but invalid: baton-train's verification names the file (65).
    if (!fs::exists(folder.CheckpointDir(o.step)))
      return Status::NotFound(folder.CheckpointDir(o.step) + ": no such checkpoint (retention " +
                              "may have deleted it; `baton checkpoints " + o.run +
                              "` lists those on disk)");
    return p;
  }
  p.metric = BestMetricOf(run);
  const std::optional<int64_t> best = BestEvaluated(on_disk, evals, p.metric);
  if (!best)
    return Status::NotFound(
        "run " + o.run + ": no checkpoint on disk has a value of " + p.metric + " in " +
        folder.EvalsDir() + " (" + std::to_string(on_disk.size()) +
        " valid checkpoint(s) on disk); evaluate one, or export one by --step N");
  p.step = *best;
  return p;
}

// DIR must be absent or an empty folder; the temporary folder is its sibling, so the final
// rename stays on one filesystem.
Result<fs::path> TempBeside(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec)))
    return Status(Code::kInvalidArgument, dir.string() + " exists and is not an empty folder");
  const fs::path tmp =
      dir.parent_path() / ("." + dir.filename().string() + ".export." + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status::Io(tmp.string() + ": cannot create: " + ec.message());
  return tmp;
}

json Provenance(const RunRecord& run, const Picked& p, const EvalResults& evals,
                const json& trainer) {
  json j;
  j["run"] = {{"id", run.id > 0 ? json(run.id) : json(nullptr)},
              {"name", run.name},
              {"run_dir", run.run_dir}};
  j["step"] = p.step;
  j["checkpoint"] = RunFolder{run.run_dir}.CheckpointDir(p.step);
  j["picked_by"] = p.metric.empty() ? json("--step") : json("--best " + p.metric);
  const auto it = evals.by_step.find(p.step);
  if (it != evals.by_step.end()) {
    j["eval"] = {{"loss", json(JsonNumber(it->second.loss))},
                 {"loss_video", json(JsonNumber(it->second.loss_video))},
                 {"loss_action", json(JsonNumber(it->second.loss_action))},
                 {"episodes", it->second.episodes},
                 {"file", RunFolder{run.run_dir}.EvalFile(p.step)}};
  } else {
    j["eval"] = nullptr;
  }
  j["dtype"] = trainer.value("dtype", json(nullptr));
  j["config_hash"] = trainer.value("config_hash", json(nullptr));
  j["dataset_fingerprint"] = trainer.value("dataset_fingerprint", json(nullptr));
  j["files"] = trainer.value("files", json::array());
  j["baton"] = {{"version", build_info::kVersion},
                {"commit", build_info::kCommit},
                {"tree", build_info::kTree}};
  j["baton_train"] = trainer.value("baton_train", json(nullptr));
  return j;
}

int RunExport(const ExportOptions& o) {
  if (o.best == (o.step >= 0)) {
    std::cerr << "baton: export: give exactly one of --best and --step N\n";
    return kExitUsage;
  }
  Result<RunRecord> run = ResolveRun(o.run);
  if (!run.ok()) return ReportError(run.status());
  const EvalResults evals = ReadEvalResults(RunFolder{run->run_dir});
  Result<Picked> picked = PickStep(o, *run, evals);
  if (!picked.ok()) return ReportError(picked.status());
  const fs::path dir = Normal(o.dir);
  Result<fs::path> tmp = TempBeside(dir);
  if (!tmp.ok() && tmp.status().code() == Code::kInvalidArgument) {
    std::cerr << "baton: " << tmp.status().message() << "; nothing was written. Export into a "
              << "new or empty folder\n";
    return kExitTargetNotEmpty;
  }
  if (!tmp.ok()) return ReportError(tmp.status());
  auto fail = [&](int rc) {
    std::error_code ec;
    fs::remove_all(*tmp, ec);
    return rc;
  };
  const std::string trainer_bin = FindTrainerBinary();
  if (trainer_bin.empty())
    return fail(ReportError(Status::Unavailable(
        "baton-train (which writes the export) was not found; set BATON_TRAIN_BIN")));
  std::vector<std::string> argv = {
      trainer_bin,    "export",
      "--checkpoint", RunFolder{run->run_dir}.CheckpointDir(picked->step),
      "--out",        tmp->string(),
      "--json"};
  if (!o.dtype.empty()) argv.insert(argv.end(), {"--dtype", o.dtype});
  Result<ProcessResult> r = RunProcess(argv, kExportTimeoutS);
  if (!r.ok()) return fail(ReportError(r.status()));
  if (r->timed_out || r->exit_code != 0) {
    std::cerr << r->err;
    std::cerr << "baton: export of step " << picked->step << " failed ("
              << (r->timed_out ? "timed out" : "exit " + std::to_string(r->exit_code))
              << "); nothing was written to " << dir.string() << "\n";
    return fail(r->timed_out ? kExitUnavailable : r->exit_code);
  }
  const json trainer = json::parse(r->out, nullptr, /*allow_exceptions=*/false);
  if (!trainer.is_object())
    return fail(ReportError(Status::Internal(CommandLine(argv) + " printed no JSON")));
  const json prov = Provenance(*run, *picked, evals, trainer);
  Status st = WriteTextAtomic((*tmp / "provenance.json").string(), prov.dump(2) + "\n");
  std::error_code ec;
  if (st.ok()) {
    fs::rename(*tmp, dir, ec);  // over an empty DIR too
    if (ec) st = Status::Io(dir.string() + ": rename from " + tmp->string() + ": " + ec.message());
  }
  if (st.ok()) st = FsyncDir(dir.parent_path().string());
  if (!st.ok()) return fail(ReportError(st));
  std::cout << "exported run " << run->name << " step " << picked->step
            << (picked->metric.empty() ? std::string() : " (best " + picked->metric + ")") << " to "
            << dir.string() << " (" << prov["dtype"].dump() << ")\n";
  return kExitOk;
}

}  // namespace

void AddExportCommand(CLI::App& app, int* rc) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a run's checkpoint as DIR/transformer/ (upstream's layout) and DIR/provenance.json; "
      "--best picks the checkpoint on disk with the best keep-best metric (eval.loss without "
      "keep-best). Refuses a checkpoint that does not verify (65) and a non-empty DIR (73)");
  cmd->add_option("run", o->run, "Run id or name, or a run folder's path")->required();
  cmd->add_option("dir", o->dir, "Folder to create (absent or empty)")->required();
  cmd->add_flag("--best", o->best, "The best evaluated checkpoint still on disk");
  cmd->add_option("--step", o->step, "The checkpoint of this step")->check(CLI::NonNegativeNumber);
  cmd->add_option("--dtype", o->dtype, "Weights' dtype (default: as the checkpoint stores them)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->callback([o, rc] { *rc = RunExport(*o); });
}

}  // namespace baton
