#include "orchestrator/submit/grace_check.h"

#include "orchestrator/store/stop_save_summary.h"
#include "orchestrator/submit/write_probe.h"
#include "schema/grace_seconds.h"

namespace baton {

bool PlausibleWriteRate(double gbps) { return gbps >= kMinWriteGbps && gbps <= kMaxWriteGbps; }

Result<StopSaveBudgetRecord> PlanStopSave(const RunConfig& config, int64_t bytes_per_rank,
                                          SlurmClient& slurm, Store* store,
                                          const std::string& probe_folder, double now) {
  StopSaveBudgetRecord b;
  b.bytes_per_rank = bytes_per_rank;
  b.checked_at = now;
  if (config.slurm.preempt_grace_s > 0) {
    b.grace_s = config.slurm.preempt_grace_s;
    b.grace_source = "slurm.preempt_grace_s";
  } else {
    BATON_ASSIGN_OR_RETURN(const PreemptGrace g, slurm.GetPreemptGrace(config.slurm.partition));
    b.grace_s = double(g.total_s());
    b.grace_source = "partition " + g.partition + ": GraceTime " + std::to_string(g.grace_time_s) +
                     " s + KillWait " + std::to_string(g.kill_wait_s) + " s";
  }
  if (config.checkpoint.write_gbps > 0) {
    b.write_gbps = config.checkpoint.write_gbps;
    b.write_source = "checkpoint.write_gbps";
  } else {
    std::optional<WriteProbeRecord> cached;
    std::string refused;  // a cached rate that is no measurement, in words
    if (store != nullptr) {
      BATON_ASSIGN_OR_RETURN(cached, store->GetWriteProbe(probe_folder));
      if (cached && !(now - cached->measured_at <= kWriteProbeMaxAgeS)) cached.reset();
      if (cached && !PlausibleWriteRate(cached->gbps)) {
        refused = "; the cached " + Fixed(cached->gbps, 3) + " GB/s is outside [" +
                  Fixed(kMinWriteGbps, 4) + ", " + Fixed(kMaxWriteGbps, 0) +
                  "] GB/s and was measured again";
        cached.reset();
      }
    }
    if (!cached) {
      BATON_ASSIGN_OR_RETURN(const double gbps, ProbeWriteRate(probe_folder));
      if (!PlausibleWriteRate(gbps)) {
        return Status::Io(probe_folder + ": the checkpoint write probe measured " + Fixed(gbps, 3) +
                          " GB/s, which no storage gives; set " +
                          "checkpoint.write_gbps to the folder's rate");
      }
      cached = WriteProbeRecord{probe_folder, gbps, kWriteProbeBytes, now};
      if (store != nullptr) BATON_RETURN_IF_ERROR(store->PutWriteProbe(*cached));
    }
    b.write_gbps = cached->gbps;
    b.write_source = "probe of " + probe_folder + " (" + std::to_string(cached->bytes >> 20) +
                     " MiB fsync'd" + refused + ")";
  }
  b.predicted_s = double(bytes_per_rank) / 1e9 / b.write_gbps;
  b.fits = b.predicted_s * kGraceMargin <= b.grace_s;
  return b;
}

std::string StopSaveWarning(const StopSaveBudgetRecord& b, const RunConfig& config) {
  if (b.fits) return "";
  const int64_t world = config.slurm.nodes * config.slurm.ntasks_per_node;
  return "the stop save may not fit the preemption grace: " +
         Fixed(double(b.bytes_per_rank) / 1e9, 2) + " GB per rank at " + Fixed(b.write_gbps, 2) +
         " GB/s (" + b.write_source + ") takes " + Fixed(b.predicted_s, 1) +
         " s, and the grace is " + Fixed(b.grace_s, 0) + " s (" + b.grace_source +
         "); with the margin (x" + Fixed(kGraceMargin, 1) + ") it needs " +
         Fixed(b.predicted_s * kGraceMargin, 1) +
         " s. A preemption would then fall back to the last periodic checkpoint. Levers: more " +
         "ranks (each writes 1/W; now " + std::to_string(world) +
         "), async periodic saves (checkpoint.async) so less is lost, a faster checkpoint " +
         "folder (run.dir), or a partition with a longer GraceTime (slurm.preempt_grace_s if " +
         "the site gives more)";
}

Status CheckGrace(const RunConfig& config, const std::string& config_path, bool strict,
                  const MemoryPlanReport* plan, const std::string& no_plan, SlurmClient& slurm,
                  Store* store, const std::string& probe_folder, double now, GraceCheck* out) {
  // A check that could not be made: a warning, or under --strict a refusal.
  auto unchecked = [&](const std::string& why) {
    const std::string what = "the stop save was not weighed against the preemption grace: " + why;
    if (strict) return Status::Config(config_path + ": " + what + " (--strict)");
    out->warnings.push_back(what);
    return Status::Ok();
  };
  if (plan == nullptr) return unchecked(no_plan);
  Result<StopSaveBudgetRecord> b =
      PlanStopSave(config, plan->checkpoint.bytes_per_rank_max, slurm, store, probe_folder, now);
  if (!b.ok()) {
    if (b.status().code() == Code::kIo) return b.status();  // the folder cannot take checkpoints
    return unchecked(b.status().message() +
                     "; set slurm.preempt_grace_s (and checkpoint.write_gbps) to say them");
  }
  out->budget = *b;
  const std::string warning = StopSaveWarning(*b, config);
  if (warning.empty()) return Status::Ok();
  if (strict) return Status::Config(config_path + ": " + warning + " (--strict refuses it)");
  out->warnings.push_back(warning);
  return Status::Ok();
}

std::string GraceEnvValue(const GraceCheck& check) {
  return check.budget ? GraceSecondsText(check.budget->grace_s) : "";
}

}  // namespace baton
