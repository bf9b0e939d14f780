// The alert rules: who hears about which incidents of a run, and through which sink. One shape
// for the run config's `alerts:` section (checked by ParseRunConfig, kept out of RunConfig so the
// trainer never sees it; submit appends it to the frozen run.yaml) and the lab default,
// $BATON_HOME/alerts.yaml
// (docs/alerts.md). A sink's URL (webhook, slack) is named by reference only, `env:NAME` or
// `file:PATH`, so no secret is ever written into run.yaml, a row or a log; references are checked
// to resolve at submit (CheckAlertReferences) and resolved again at delivery, by watch or serve.
//
// Owns the parsing and checking of the rules; the orchestrator's alerts unit (orchestrator/alerts/)
// acts on them. Value types and pure functions, except the reference readers (environment, files).
#pragma once

#include <string>
#include <vector>

#include "schema/status.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace baton {

// Every incident kind a subscription may name, in the order docs/alerts.md explains them.
const std::vector<std::string>& IncidentKinds();
bool IsIncidentKind(const std::string& kind);

enum class SinkType { kWebhook, kSlack, kEmail };
const char* SinkTypeName(SinkType t);  // webhook | slack | email

struct AlertSink {
  std::string name;  // unique within its rule set; rows and logs name the sink by it
  SinkType type = SinkType::kWebhook;
  std::string url;                              // webhook, slack: `env:NAME` or `file:PATH`
  std::string to;                               // email: the recipient address
  std::string sendmail = "/usr/sbin/sendmail";  // email: the sendmail program
  double timeout_s = 5;                         // one delivery's bound (connect, read, write)
};

// Default of alerts.stall_s: a RUNNING run without a new step this long is `stalled`.
inline constexpr double kDefaultStallS = 1800;

struct AlertsSection {
  bool present = false;  // the section (or the lab file) was given
  std::vector<AlertSink> sinks;
  std::vector<std::string> subscribe;  // incident kinds
  double stall_s = kDefaultStallS;
  std::string public_url;  // lab file only: the run page link's base (serve.public_url)
};

namespace config_reader {
struct Context;
// Reads `alerts:` of a run config into `out` (errors to ctx, file:line:col and key path).
void ReadAlerts(Context& ctx, const YAML::Node& root, AlertsSection& out);
}  // namespace config_reader

// Writes the section back as a YAML map.
void WriteAlerts(YAML::Emitter& e, const AlertsSection& a);
// `frozen` (a run config's ToYaml text, which has no alerts section) with `a` appended as its
// `alerts:` section when present: what submit and resume freeze into run.yaml and the store.
std::string AppendAlerts(const std::string& frozen, const AlertsSection& a);
// The `alerts:` section of the run config file at `path` (not present when it has none).
[[nodiscard]] Result<AlertsSection> LoadRunAlerts(const std::string& path);

// The lab default: $BATON_HOME/alerts.yaml parsed; an absent file gives an empty, not present
// section. kConfig naming the file, line and key on any problem.
[[nodiscard]] Result<AlertsSection> LoadLabAlerts(const std::string& path);
[[nodiscard]] Result<AlertsSection> ParseAlertsText(const std::string& text,
                                                    const std::string& source, bool lab_file);

// The `alerts:` section of a frozen run.yaml (not present when it has none); kConfig when the
// section is bad (a run.yaml written by an older or newer baton).
[[nodiscard]] Result<AlertsSection> RunAlertsFromConfig(const std::string& run_yaml,
                                                        const std::string& source);

// The value behind `env:NAME` (the variable) or `file:PATH` (the file's first line, trimmed).
// kConfig naming the reference when it does not resolve or is empty.
[[nodiscard]] Result<std::string> ResolveReference(const std::string& ref);
// Every sink's reference resolves (submit runs this for the run's and the lab's rules);
// kConfig naming `where`, the sink and the reference otherwise.
[[nodiscard]] Status CheckAlertReferences(const AlertsSection& a, const std::string& where);

}  // namespace baton
