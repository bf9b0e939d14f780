#include "orchestrator/http/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

namespace baton {

namespace {

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Labels(const RunRecord& r, const std::string& extra = "") {
  return "{run=\"" + std::to_string(r.id) + "\",name=\"" + Escape(r.name) + "\",owner=\"" +
         Escape(r.owner) + "\",cluster=\"" + Escape(r.cluster) + "\",partition=\"" +
         Escape(r.partition) + "\"" + extra + "}";
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void Family(std::string& out, const char* name, const char* help) {
  out += std::string("# TYPE ") + name + " gauge\n# HELP " + name + " " + help + "\n";
}

// One gauge family over the runs that have the figure.
void RunFamily(std::string& out, const std::vector<RunMetrics>& runs, const char* name,
               const char* help, const std::function<std::optional<double>(const RunMetrics&)>& f) {
  Family(out, name, help);
  for (const RunMetrics& m : runs) {
    const std::optional<double> v = f(m);
    if (v) out += std::string(name) + Labels(m.run) + " " + Number(*v) + "\n";
  }
}

}  // namespace

std::string MetricsText(const std::vector<RunMetrics>& runs, const ServeFigures& serve,
                        double now) {
  std::string out;
  using M = const RunMetrics&;
  using O = std::optional<double>;
  RunFamily(out, runs, "baton_run_last_step",
            "Steps the run has finished (its last effective step).",
            [](M m) { return m.last_step ? O(static_cast<double>(*m.last_step)) : O(); });
  RunFamily(out, runs, "baton_run_last_step_time_seconds", "Unix time of the run's last step.",
            [](M m) { return m.last_step_time; });
  RunFamily(out, runs, "baton_run_tokens_per_second", "Tokens per second of the run's last step.",
            [](M m) { return m.tokens_per_s; });
  RunFamily(out, runs, "baton_run_loss", "Loss of the run's last step.",
            [](M m) { return m.loss; });
  RunFamily(out, runs, "baton_run_hangs", "Attempts of the run that a hang ended.",
            [](M m) { return O(static_cast<double>(m.hangs)); });
  RunFamily(out, runs, "baton_run_checkpoint_age_seconds",
            "Seconds since the newest valid checkpoint.",
            [now](M m) { return m.checkpoint_time ? O(now - *m.checkpoint_time) : O(); });
  RunFamily(out, runs, "baton_run_requeue_hold_seconds",
            "Seconds between requeued attempts and the next start.",
            [](M m) { return O(m.requeue_hold_s); });
  RunFamily(out, runs, "baton_run_ettr",
            "Effective training time ratio: productive seconds over wall seconds since submit.",
            [](M m) { return m.ettr; });
  RunFamily(out, runs, "baton_run_eval_loss",
            "Held-out eval loss of the run's latest evaluated checkpoint.",
            [](M m) { return m.eval_loss; });
  RunFamily(out, runs, "baton_run_eval_step", "Step of the run's latest evaluated checkpoint.",
            [](M m) { return m.eval_step ? O(static_cast<double>(*m.eval_step)) : O(); });
  RunFamily(out, runs, "baton_run_active", "1 while the run is PENDING, RUNNING or REQUEUED.",
            [](M m) { return O(IsTerminal(m.run.status) ? 0.0 : 1.0); });
  Family(out, "baton_run_attempts", "Attempts of the run by how they ended ('' = not ended).");
  for (const RunMetrics& m : runs) {
    for (const auto& [reason, n] : m.attempts_by_reason) {
      out += "baton_run_attempts" + Labels(m.run, ",cause=\"" + Escape(reason) + "\"") + " " +
             std::to_string(n) + "\n";
    }
  }
  Family(out, "baton_serve_pass_seconds",
         "Seconds the last ingest, reconcile and alerts pass took.");
  out += "baton_serve_pass_seconds " + Number(serve.last_pass_s) + "\n";
  Family(out, "baton_serve_ingest_lag_seconds", "Seconds since the last pass ended.");
  out += "baton_serve_ingest_lag_seconds " +
         Number(serve.last_pass_end > 0 ? now - serve.last_pass_end : 0) + "\n";
  Family(out, "baton_serve_runs", "Runs in this answer (active, plus recent ended up to the cap).");
  out += "baton_serve_runs " + std::to_string(runs.size()) + "\n";
  out += "# EOF\n";
  return out;
}

}  // namespace baton
