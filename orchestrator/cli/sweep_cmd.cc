// `baton sweep SPEC [--name N] [--dry-run] [--json] [--strict]`, `baton sweeps [--json]`,
// `baton sweep show S [--json]`, `baton sweep cancel S` and `baton sweep resume S`
// (docs/sweeps.md; sweeper.h does the work, sweep_view.h says what a sweep is now).
#include <cstdio>
#include <iostream>
#include <memory>

#include "orchestrator/alerts/node_refusal_alert.h"
#include "orchestrator/cli/cli_context.h"
#include "orchestrator/cli/commands.h"
#include "orchestrator/history/sweep_view.h"
#include "orchestrator/launcher/launcher.h"
#include "orchestrator/slurm/real_slurm_client.h"
#include "orchestrator/submit/sweeper.h"
#include "schema/clock.h"

namespace baton {

namespace {

struct SweepOptions {
  std::string spec;
  std::string name;
  std::string sweep;  // show / cancel / resume
  bool dry_run = false;
  bool json = false;
  bool strict = false;
};

int RunSweep(const SweepOptions& o) {
  if (o.spec.empty()) {
    return ReportError(Status::InvalidArgument(
        "baton sweep: give a sweep spec (baton sweep SPEC.yaml) or a subcommand (show, cancel, "
        "resume)"));
  }
  SweepRequest req;
  req.spec_path = o.spec;
  req.name = o.name;
  req.dry_run = o.dry_run;
  req.baton_bin = SelfPath();
  req.baton_home = BatonHome();
  req.trainer_bin = FindTrainerBinary();
  req.strict = o.strict;
  RealSlurmClient slurm;
  const double now = UnixTimeNow();
  // Every check before the store: a refused sweep creates nothing, not even the database.
  Result<PreparedSweep> sweep = PrepareSweep(nullptr, slurm, req, now);
  if (!sweep.ok()) return ReportError(sweep.status());
  PrintWarnings(sweep->warnings);
  auto storage_json = [](const std::optional<StorageForecast>& f) {
    return f ? f->ToJson() : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  if (o.dry_run) {
    for (const PreparedMember& p : sweep->members) {
      members.push_back({{"index", p.member.index},
                         {"values", p.member.ValuesJson()},
                         {"name", p.config.run.name},
                         {"storage", storage_json(p.storage)}});
    }
    if (o.json) {
      std::cout << nlohmann::ordered_json{{"sweep_id", nullptr},
                                          {"job_id", nullptr},
                                          {"name", sweep->name},
                                          {"array", sweep->ArraySpec()},
                                          {"members", members},
                                          {"storage", storage_json(sweep->storage)}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << "sweep " << sweep->name << ": " << sweep->members.size()
                << " members, sbatch --array=" << sweep->ArraySpec() << "\n";
      for (const PreparedMember& p : sweep->members)
        std::cout << "  " << p.member.index << "  " << p.member.ValuesText() << "\n";
      if (sweep->storage) std::cout << "  " << sweep->storage->Line() << "\n";
    }
    return 0;
  }
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  const size_t warned = sweep->warnings.size();
  Status st = SubmitSweep(**store, slurm, req, &*sweep, now);
  if (!st.ok()) return ReportError(st);
  PrintWarnings(
      {sweep->warnings.begin() + static_cast<std::ptrdiff_t>(warned), sweep->warnings.end()});
  // One incident for the array, on member 0's run: every member shares the array's node list.
  st = RecordNewJobRefusals(**store, sweep->members.front().run_id, sweep->job_id,
                            sweep->exclusion_refused, now);
  if (!st.ok())
    std::cerr << "baton: warning: exclusion refusal not recorded: " << st.ToString() << "\n";
  nlohmann::json runs = nlohmann::json::array();
  for (const PreparedMember& p : sweep->members) runs.push_back(p.run_id);
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"sweep_id", sweep->sweep_id},
                                        {"job_id", sweep->job_id},
                                        {"name", sweep->name},
                                        {"runs", runs},
                                        {"storage", storage_json(sweep->storage)}}
                     .dump()
              << "\n";
  } else {
    std::cout << "sweep " << sweep->sweep_id << " (" << sweep->name
              << "): " << sweep->members.size() << " runs submitted as SLURM array "
              << sweep->job_id << " (--array=" << sweep->ArraySpec()
              << ")\n  sweep dir: " << sweep->sweep_dir << "\n";
    if (sweep->storage) std::cout << "  " << sweep->storage->Line() << "\n";
  }
  return 0;
}

// The sweep named on the command line, its member runs synced first (as `baton show` does).
Result<SweepView> SyncedSweep(Store& store, const std::string& id_or_name) {
  BATON_ASSIGN_OR_RETURN(const SweepRecord sweep, FindSweep(store, id_or_name));
  BATON_ASSIGN_OR_RETURN(const std::vector<SweepMemberRecord> members,
                         ListSweepMembers(store, sweep.id));
  std::vector<RunRecord> runs;
  for (const SweepMemberRecord& m : members) {
    BATON_ASSIGN_OR_RETURN(RunRecord run, store.GetRun(m.run_id));
    runs.push_back(std::move(run));
  }
  BATON_RETURN_IF_ERROR(SyncQueriedRuns(store, &runs, /*reconcile=*/true));
  return BuildSweepView(store, sweep);
}

std::string Figure(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

int RunSweepShow(const SweepOptions& o) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<SweepView> view = SyncedSweep(**store, o.sweep);
  if (!view.ok()) return ReportError(view.status());
  if (o.json) {
    std::cout << SweepViewJson(*view).dump() << "\n";
    return 0;
  }
  std::cout << "sweep " << view->sweep.id << " (" << view->sweep.name << "), array "
            << view->sweep.job_id << ":";
  for (const auto& [status, n] : view->counts) std::cout << " " << status << " " << n;
  std::cout << "\n";
  std::vector<std::string> header = {"INDEX", "RUN"};
  for (const std::string& k : view->keys) header.push_back(k);
  for (const char* h : {"STATUS", "STEP", "FINAL LOSS", "ETTR", "RESTARTS", "BEST EVAL"})
    header.push_back(h);
  std::vector<std::vector<std::string>> rows;
  for (const SweepMemberView& m : view->members) {
    std::vector<std::string> row = {std::to_string(m.index), std::to_string(m.run_id)};
    for (const std::string& k : view->keys) {
      const auto it = m.values.find(k);
      row.push_back(it == m.values.end() ? "-"
                    : it->is_string()    ? it->get<std::string>()
                                         : it->dump());
    }
    row.push_back(m.status);
    row.push_back((m.last_step ? std::to_string(*m.last_step) : "0") + "/" +
                  std::to_string(m.target_steps));
    row.push_back(Figure(m.final_loss, "%.4f"));
    row.push_back(m.ettr ? Figure(*m.ettr * 100.0, "%.1f%%") : "-");
    row.push_back(std::to_string(m.restarts));
    row.push_back(m.best_eval_loss ? Figure(m.best_eval_loss, "%.4f") + " @" +
                                         std::to_string(m.best_eval_step.value_or(0))
                                   : "-");
    rows.push_back(std::move(row));
  }
  PrintTable(std::cout, header, rows);
  return 0;
}

int RunSweepAction(const SweepOptions& o, bool resume) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<SweepView> view = SyncedSweep(**store, o.sweep);
  if (!view.ok()) return ReportError(view.status());
  RealSlurmClient slurm;
  const double now = UnixTimeNow();
  if (resume) {
    std::vector<std::string> warnings;
    Result<std::vector<int64_t>> r = ResumeSweep(**store, slurm, view->sweep, now, &warnings);
    if (!r.ok()) return ReportError(r.status());
    PrintWarnings(warnings);
    Result<SweepRecord> after = FindSweep(**store, std::to_string(view->sweep.id));
    std::cout << "sweep " << view->sweep.id << " (" << view->sweep.name << "): ";
    if (r->empty()) {
      std::cout << "nothing to resume (every member is COMPLETED or still live)\n";
    } else {
      std::cout << r->size() << " members resumed as SLURM array "
                << (after.ok() ? after->job_id : "?") << "\n";
    }
    return 0;
  }
  Result<int64_t> r = CancelSweep(**store, slurm, view->sweep, now);
  if (!r.ok()) return ReportError(r.status());
  std::cout << "sweep " << view->sweep.id << " (" << view->sweep.name << "): " << *r
            << " members cancelled (scancel " << view->sweep.job_id << ")\n";
  return 0;
}

int RunSweepList(bool json) {
  Result<std::unique_ptr<Store>> store = OpenDefaultStore();
  if (!store.ok()) return ReportError(store.status());
  Result<std::vector<SweepRecord>> sweeps = ListSweeps(**store);
  if (!sweeps.ok()) return ReportError(sweeps.status());
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (const SweepRecord& s : *sweeps) {
    Result<SweepView> view = BuildSweepView(**store, s);
    if (!view.ok()) return ReportError(view.status());
    std::string counts;
    for (const auto& [status, n] : view->counts)
      counts += (counts.empty() ? "" : " ") + status + " " + std::to_string(n);
    out.push_back({{"sweep_id", s.id},
                   {"name", s.name},
                   {"job_id", s.job_id},
                   {"members", view->members.size()},
                   {"counts", view->counts},
                   {"created_at", s.created_at}});
    rows.push_back(
        {std::to_string(s.id), s.name, s.job_id, std::to_string(view->members.size()), counts});
  }
  if (json) {
    std::cout << out.dump() << "\n";
  } else {
    PrintTable(std::cout, {"ID", "NAME", "ARRAY", "MEMBERS", "STATUS"}, rows);
  }
  return 0;
}

}  // namespace

void AddSweepCommands(CLI::App& app, int* rc) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand("sweep", "Submit a sweep spec as one SLURM job array");
  cmd->add_option("spec", o->spec, "Sweep spec (YAML)");
  cmd->add_option("--name", o->name, "Sweep name (default: the spec's name)");
  cmd->add_flag("--dry-run", o->dry_run, "Print the members; create and submit nothing");
  cmd->add_flag("--json", o->json, "Print {\"sweep_id\", \"job_id\", \"runs\"}");
  cmd->add_flag("--strict", o->strict,
                "Refuse members whose stop save does not fit the grace (78), or a sweep whose "
                "storage forecast does not fit the free space or quota (74)");
  cmd->require_subcommand(0, 1);
  CLI::App* show = cmd->add_subcommand("show", "A sweep's members, values and figures");
  show->add_option("sweep", o->sweep, "Sweep id or name")->required();
  show->add_flag("--json", o->json, "Print JSON");
  show->callback([o, rc] { *rc = RunSweepShow(*o); });
  CLI::App* cancel = cmd->add_subcommand("cancel", "Cancel every member of a sweep");
  cancel->add_option("sweep", o->sweep, "Sweep id or name")->required();
  cancel->callback([o, rc] { *rc = RunSweepAction(*o, /*resume=*/false); });
  CLI::App* resume = cmd->add_subcommand("resume", "Resume every member not COMPLETED, exactly");
  resume->add_option("sweep", o->sweep, "Sweep id or name")->required();
  resume->callback([o, rc] { *rc = RunSweepAction(*o, /*resume=*/true); });
  cmd->callback([o, rc, cmd] {
    if (cmd->get_subcommands().empty()) *rc = RunSweep(*o);
  });
  auto json = std::make_shared<bool>(false);
  CLI::App* list = app.add_subcommand("sweeps", "List the sweeps");
  list->add_flag("--json", *json, "Print JSON");
  list->callback([json, rc] { *rc = RunSweepList(*json); });
}

}  // namespace baton
