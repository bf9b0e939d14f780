// PrepareSweep and the array script (sweeper.h): every check of a sweep, nothing created.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "orchestrator/submit/grace_check.h"
#include "orchestrator/submit/memory_check.h"
#include "orchestrator/submit/run_cluster.h"
#include "orchestrator/submit/sbatch_script.h"
#include "orchestrator/submit/storage_check.h"
#include "orchestrator/submit/sweeper.h"
#include "schema/atomic_file.h"
#include "schema/input_file.h"

namespace fs = std::filesystem;

namespace baton {

namespace {

constexpr uint64_t kMaxBaseBytes = 1 << 20;

// A folder of its own for the member configs the memory plan reads; gone with this object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "baton-sweep.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The nearest existing folder on the way to the runs folder (the checkpoints' filesystem).
std::string ProbeFolder(const std::string& baton_home) {
  fs::path p = (fs::path(baton_home) / "runs").lexically_normal();
  std::error_code ec;
  while (!p.empty() && !fs::is_directory(p, ec) && p != p.root_path()) p = p.parent_path();
  return p.string();
}

// The lines of a script that are #SBATCH directives.
std::string SbatchLines(const std::string& script) {
  std::string out;
  size_t start = 0;
  while (start < script.size()) {
    size_t end = script.find('\n', start);
    if (end == std::string::npos) end = script.size();
    const std::string line = script.substr(start, end - start);
    if (line.rfind("#SBATCH", 0) == 0) out += line + "\n";
    start = end + 1;
  }
  return out;
}

Status CheckArraySize(SlurmClient& slurm, const std::string& spec_path, size_t n) {
  Result<std::map<std::string, std::string>> config = slurm.ShowConfig();
  if (!config.ok()) return Status::Ok();  // sbatch will say what is wrong
  const auto it = config->find("MaxArraySize");
  if (it == config->end()) return Status::Ok();
  const int64_t max = std::atoll(it->second.c_str());
  if (max > 0 && static_cast<int64_t>(n) > max) {
    return Status::Config(spec_path + ": the sweep has " + std::to_string(n) +
                          " members, above the cluster's MaxArraySize " + std::to_string(max) +
                          " (scontrol show config)");
  }
  return Status::Ok();
}

}  // namespace

std::string PreparedSweep::ArraySpec() const {
  const int64_t n = static_cast<int64_t>(members.size());
  const int64_t p = spec.max_parallel > 0 ? std::min(spec.max_parallel, n) : n;
  return "0-" + std::to_string(n - 1) + "%" + std::to_string(p);
}

Result<std::string> ArrayScript(const std::string& member_script, const std::string& sweep_dir,
                                const std::string& baton_bin,
                                const std::vector<std::string>& member_dirs) {
  std::string out;
  size_t start = 0;
  bool launched = false;
  while (start < member_script.size()) {
    size_t end = member_script.find('\n', start);
    if (end == std::string::npos) end = member_script.size();
    std::string line = member_script.substr(start, end - start);
    start = end + 1;
    if (line.rfind("#SBATCH --output=", 0) == 0) {
      line = "#SBATCH --output=" + sweep_dir + "/logs/%A_%a.out";
    } else if (line.rfind("#SBATCH --chdir=", 0) == 0) {
      line = "#SBATCH --chdir=" + sweep_dir;
    } else if (line.rfind("exec ", 0) == 0) {
      // The task id picks the member; an id that is no member stops before any training.
      out += "case \"${SLURM_ARRAY_TASK_ID:-}\" in\n";
      for (size_t i = 0; i < member_dirs.size(); ++i) {
        out += "  " + std::to_string(i) + ") member_dir=" + ShellQuote(member_dirs[i]) + " ;;\n";
      }
      out +=
          "  *) echo \"baton: array task '${SLURM_ARRAY_TASK_ID:-}' is no member of this "
          "sweep\" >&2; exit 78 ;;\nesac\n";
      line = "exec " + ShellQuote(baton_bin) + " launch \"$member_dir\"";
      launched = true;
    }
    out += line + "\n";
  }
  if (!launched) return Status::Internal("the job script template has no exec line");
  return out;
}

namespace {

Result<PreparedMember> PrepareMember(const SweepRequest& req, const PreparedSweep& sweep,
                                     const std::string& base_yaml, const SweepMember& m,
                                     SlurmClient& slurm, Store* store, const std::string& scratch,
                                     double now, std::vector<std::string>* warnings) {
  const std::string who =
      sweep.spec.path + ": member " + std::to_string(m.index) + " (" + m.ValuesText() + ")";
  PreparedMember out;
  out.member = m;
  Result<std::string> yaml = MemberConfigYaml(base_yaml, m);
  if (!yaml.ok()) return Status::Config(who + ": " + yaml.status().message());
  Result<RunConfig> config = ParseRunConfig(*yaml, sweep.spec.base);
  if (!config.ok()) return Status(config.status().code(), who + ": " + config.status().message());
  if (!config->run.dir.empty()) {
    return Status::Config(who + ": run.dir is set ('" + config->run.dir +
                          "'); every member needs its own run folder, so a sweep's base leaves "
                          "run.dir out");
  }
  config->run.name = sweep.name + "-" + std::to_string(m.index);
  const std::string path = scratch + "/member-" + std::to_string(m.index) + ".yaml";
  BATON_RETURN_IF_ERROR(WriteTextAtomic(path, ToYaml(*config)));
  std::string no_plan;
  const std::optional<MemoryPlanReport> plan =
      PlanIfPossible(*config, path, req.trainer_bin, &no_plan);
  auto named = [&](const Status& st) { return Status(st.code(), who + ": " + st.message()); };
  Status st = CheckMemoryPlan(*config, path, req.trainer_bin, plan ? &*plan : nullptr);
  if (!st.ok()) return named(st);
  GraceCheck grace;
  st = CheckGrace(*config, path, req.strict, plan ? &*plan : nullptr, no_plan, slurm, store,
                  ProbeFolder(req.baton_home), now, &grace);
  if (!st.ok()) return named(st);
  out.budget = grace.budget;
  out.grace_env = GraceEnvValue(grace);
  for (const std::string& w : grace.warnings) warnings->push_back(who + ": " + w);
  // Members share one filesystem: only their sum is judged (SweepStorage), not each alone.
  std::vector<std::string> storage_warnings;
  Result<std::optional<StorageForecast>> storage =
      CheckStorage(*config, path, /*strict=*/false, plan ? &*plan : nullptr,
                   ProbeFolder(req.baton_home), &storage_warnings);
  if (!storage.ok()) return named(storage.status());
  out.storage = *storage;
  out.config = std::move(*config);
  return out;
}

// The members' forecasts summed and judged against the one filesystem they share: a warning
// when the sum does not fit, a refusal (kIo) with --strict. No forecast when a member has none.
Status SweepStorage(const SweepRequest& req, PreparedSweep* sweep) {
  StorageForecast total;
  for (const PreparedMember& p : sweep->members) {
    if (!p.storage) {
      sweep->warnings.push_back("no storage forecast: member " + std::to_string(p.member.index) +
                                " has no memory plan (baton-train was not found or failed)");
      return Status::Ok();
    }
    const StorageForecast& f = *p.storage;
    total.footprint_bytes += f.footprint_bytes;
    total.checkpoints_bytes += f.checkpoints_bytes;
    total.events_bytes += f.events_bytes;
    total.logs_bytes += f.logs_bytes;
    total.retained += f.retained;
    total.checkpoint_bytes = std::max(total.checkpoint_bytes, f.checkpoint_bytes);
    total.free_bytes = f.free_bytes;
    total.folder = f.folder;
    total.quota_free_bytes = f.quota_free_bytes;
    total.quota_source = f.quota_source;
  }
  Judge(&total);
  sweep->storage = total;
  if (total.fits) return Status::Ok();
  std::string text =
      req.spec_path + ": the sweep's storage forecast, " + ByteText(total.footprint_bytes) + " (" +
      std::to_string(total.footprint_bytes) + " bytes for " +
      std::to_string(sweep->members.size()) + " members, " + std::to_string(total.retained) +
      " checkpoints kept in all, plus events and logs), does not fit the " +
      std::to_string(total.free_bytes) + " bytes free in " + total.folder;
  if (total.quota_free_bytes) {
    text += " (" + std::to_string(*total.quota_free_bytes) + " bytes left of the " +
            total.quota_source + ")";
  }
  text += "; lower checkpoint.keep_last or keep_every, run fewer members, or free space";
  if (req.strict) return Status::Io(text);
  sweep->warnings.push_back(text);
  return Status::Ok();
}

}  // namespace

Result<PreparedSweep> PrepareSweep(Store* store, SlurmClient& slurm, const SweepRequest& req,
                                   double now) {
  PreparedSweep sweep;
  BATON_ASSIGN_OR_RETURN(sweep.spec, LoadSweepSpec(req.spec_path));
  sweep.name = !req.name.empty()          ? req.name
               : !sweep.spec.name.empty() ? sweep.spec.name
                                          : fs::path(req.spec_path).stem().string();
  if (sweep.name.empty() || sweep.name.size() > 80 ||
      sweep.name.find_first_not_of("0123456789") == std::string::npos) {
    return Status::InvalidArgument(
        std::string(req.name.empty() ? req.spec_path + ": name" : "--name") + ": '" + sweep.name +
        "' is not a sweep name (1 to 80 characters, not all digits)");
  }
  for (const SweepAxis& a : sweep.spec.axes) sweep.keys.push_back(a.key);
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepMember> members, ExpandSweep(sweep.spec));
  BATON_RETURN_IF_ERROR(CheckArraySize(slurm, sweep.spec.path, members.size()));
  Result<std::string> base = ReadRegularFile(sweep.spec.base, kMaxBaseBytes);
  if (!base.ok()) return base.status().Annotate(sweep.spec.path + ": base");
  ScratchDir scratch;
  if (scratch.path().empty()) return Status::Io("cannot create a scratch folder in /tmp");
  std::map<std::string, int64_t> seen;  // config without its name -> first index
  for (const SweepMember& m : members) {
    BATON_ASSIGN_OR_RETURN(PreparedMember p, PrepareMember(req, sweep, *base, m, slurm, store,
                                                           scratch.path(), now, &sweep.warnings));
    RunConfig unnamed = p.config;
    unnamed.run.name.clear();
    const auto [it, fresh] = seen.emplace(ToYaml(unnamed), m.index);
    if (!fresh) {
      return Status::Config(sweep.spec.path + ": members " + std::to_string(it->second) + " and " +
                            std::to_string(m.index) + " have identical configs (" + m.ValuesText() +
                            "); a sweep trains each config once");
    }
    sweep.members.push_back(std::move(p));
  }
  const RunConfig& first = sweep.members.front().config;
  BATON_ASSIGN_OR_RETURN(sweep.cluster, ResolveRunCluster(first.slurm, sweep.spec.path, slurm));
  // One array has one set of resources: every member's #SBATCH lines must be member 0's.
  std::string lines0;
  for (PreparedMember& p : sweep.members) {
    BATON_ASSIGN_OR_RETURN(
        const std::string s,
        RenderSbatchScript(p.config, {"sweep", sweep.name, "/sweep", req.baton_bin, "", ""}));
    if (p.member.index == 0) lines0 = SbatchLines(s);
    if (SbatchLines(s) != lines0) {
      return Status::Config(sweep.spec.path + ": member " + std::to_string(p.member.index) + " (" +
                            p.member.ValuesText() +
                            "): its slurm: resources differ from member 0's; one job array has "
                            "one set of resources");
    }
  }
  sweep.grace_s = sweep.members.front().grace_env;
  BATON_RETURN_IF_ERROR(SweepStorage(req, &sweep));
  return sweep;
}

}  // namespace baton
