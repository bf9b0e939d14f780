#include "schema/alerts_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "schema/strict_yaml.h"
#include "schema/yaml_section.h"

namespace baton {

namespace fs = std::filesystem;
using config_reader::Context;
using config_reader::Section;

const std::vector<std::string>& IncidentKinds() {
  static const std::vector<std::string> kKinds = {"hang",
                                                  "no_progress",
                                                  "diverged",
                                                  "data_error",
                                                  "budget_spent",
                                                  "hold_release_refused",
                                                  "stop_save_over_grace",
                                                  "cannot_exclude",
                                                  "eval_failed",
                                                  "stalled",
                                                  "failed",
                                                  "completed"};
  return kKinds;
}

bool IsIncidentKind(const std::string& kind) {
  const auto& k = IncidentKinds();
  return std::find(k.begin(), k.end(), kind) != k.end();
}

const char* SinkTypeName(SinkType t) {
  switch (t) {
    case SinkType::kWebhook:
      return "webhook";
    case SinkType::kSlack:
      return "slack";
    case SinkType::kEmail:
      return "email";
  }
  return "webhook";
}

namespace {

bool IsReference(const std::string& v) {
  return (v.rfind("env:", 0) == 0 && v.size() > 4) || (v.rfind("file:", 0) == 0 && v.size() > 5);
}

void ReadSink(Context& ctx, const std::string& path, const YAML::Node& node, AlertSink& sink) {
  YAML::Node wrapper;
  wrapper[path] = node;
  Section s(ctx, wrapper, path);
  if (!s.present()) return;
  s.String("name", &sink.name, /*required=*/true);
  s.Enum<SinkType>(
      "type", &sink.type,
      {{"webhook", SinkType::kWebhook}, {"slack", SinkType::kSlack}, {"email", SinkType::kEmail}});
  if (!s.node()["type"]) ctx.Error(node, path + ".type", "required key is missing");
  const YAML::Node url = s.Get("url");
  if (url.IsDefined()) {
    s.String("url", &sink.url);
    if (!IsReference(sink.url)) {
      // The value itself is not repeated: it may be the secret the reference should hide.
      ctx.Error(url, path + ".url",
                "give the URL by reference, env:NAME or file:PATH, never inline (it would be "
                "written into run.yaml)");
    }
  }
  s.String("to", &sink.to);
  s.String("sendmail", &sink.sendmail);
  s.Float("timeout_s", &sink.timeout_s, 0.1, 600);
  s.Finish();
  const bool web = sink.type != SinkType::kEmail;
  if (web && sink.url.empty() && !url.IsDefined()) {
    ctx.Error(
        node, path + ".url",
        "required for a " + std::string(SinkTypeName(sink.type)) + " sink (env:NAME or file:PATH)");
  }
  if (!web && sink.to.empty()) ctx.Error(node, path + ".to", "required for an email sink");
  if (!web && !sink.sendmail.empty() && sink.sendmail[0] != '/') {
    ctx.Error(node, path + ".sendmail", "expected an absolute path, got '" + sink.sendmail + "'");
  }
}

void ReadSection(Context& ctx, const YAML::Node& root, const std::string& name, AlertsSection& out,
                 bool lab_file) {
  Section s(ctx, root, name);
  if (!s.present()) return;
  out.present = true;
  const std::string prefix = name.empty() ? "" : name + ".";
  const YAML::Node sinks = s.Get("sinks");
  std::set<std::string> names;
  if (sinks.IsDefined() && !sinks.IsSequence()) {
    ctx.Error(sinks, prefix + "sinks",
              "expected a list of sinks, got " + config_reader::Describe(sinks));
  } else if (sinks.IsDefined()) {
    for (size_t i = 0; i < sinks.size(); ++i) {
      AlertSink sink;
      const std::string path = prefix + "sinks[" + std::to_string(i) + "]";
      ReadSink(ctx, path, sinks[i], sink);
      if (!sink.name.empty() && !names.insert(sink.name).second) {
        ctx.Error(sinks[i], path + ".name", "sink '" + sink.name + "' is named twice");
      }
      out.sinks.push_back(std::move(sink));
    }
  }
  const YAML::Node sub = s.Get("subscribe");
  if (sub.IsDefined() && !sub.IsSequence()) {
    ctx.Error(sub, prefix + "subscribe",
              "expected a list of incident kinds, got " + config_reader::Describe(sub));
  } else if (sub.IsDefined()) {
    std::string known;
    for (const std::string& k : IncidentKinds()) known += (known.empty() ? "" : ", ") + k;
    for (const YAML::Node& k : sub) {
      const std::string kind = k.IsScalar() ? k.Scalar() : config_reader::Describe(k);
      if (!IsIncidentKind(kind)) {
        ctx.Error(k, prefix + "subscribe",
                  "unknown incident kind '" + kind + "' (known: " + known + ")");
      } else {
        out.subscribe.push_back(kind);
      }
    }
  }
  s.Float("stall_s", &out.stall_s, 1, 30 * 86400.0);
  if (lab_file) s.String("public_url", &out.public_url);
  s.Finish();
}

}  // namespace

namespace config_reader {
void ReadAlerts(Context& ctx, const YAML::Node& root, AlertsSection& out) {
  ReadSection(ctx, root, "alerts", out, /*lab_file=*/false);
}
}  // namespace config_reader

void WriteAlerts(YAML::Emitter& e, const AlertsSection& a) {
  e << YAML::BeginMap << YAML::Key << "sinks" << YAML::Value << YAML::BeginSeq;
  for (const AlertSink& s : a.sinks) {
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << s.name;
    e << YAML::Key << "type" << YAML::Value << SinkTypeName(s.type);
    if (!s.url.empty()) e << YAML::Key << "url" << YAML::Value << s.url;
    if (s.type == SinkType::kEmail) {
      e << YAML::Key << "to" << YAML::Value << s.to;
      e << YAML::Key << "sendmail" << YAML::Value << s.sendmail;
    }
    e << YAML::Key << "timeout_s" << YAML::Value << config_reader::FormatDouble(s.timeout_s);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::Key << "subscribe" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& k : a.subscribe) e << k;
  e << YAML::EndSeq;
  e << YAML::Key << "stall_s" << YAML::Value << config_reader::FormatDouble(a.stall_s);
  e << YAML::EndMap;
}

std::string AppendAlerts(const std::string& frozen, const AlertsSection& a) {
  if (!a.present) return frozen;
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "alerts" << YAML::Value;
  WriteAlerts(e, a);
  e << YAML::EndMap;
  std::string out = frozen;
  if (!out.empty() && out.back() != '\n') out += "\n";
  return out + e.c_str() + "\n";
}

Result<AlertsSection> LoadRunAlerts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Config(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return RunAlertsFromConfig(text.str(), path);
}

Result<AlertsSection> ParseAlertsText(const std::string& text, const std::string& source,
                                      bool lab_file) {
  Context ctx;
  ctx.source = source;
  if (!config_reader::CheckYamlStructure(ctx, text)) return ctx.ToStatus();
  AlertsSection out;
  try {
    YAML::Node doc = YAML::Load(text);
    if (doc.IsNull()) return out;
    YAML::Node root;
    root["alerts"] = doc;  // the lab file is the section itself
    ReadSection(ctx, root, "alerts", out, lab_file);
  } catch (const YAML::Exception& e) {
    return Status::Config(config_reader::MarkText(source, e.mark) + ": malformed YAML: " + e.msg);
  }
  if (!ctx.errors.empty()) return ctx.ToStatus();
  return out;
}

Result<AlertsSection> RunAlertsFromConfig(const std::string& run_yaml, const std::string& source) {
  Context ctx;
  ctx.source = source;
  AlertsSection out;
  try {
    const YAML::Node root = YAML::Load(run_yaml);
    if (!root.IsMap()) return out;
    ReadSection(ctx, root, "alerts", out, /*lab_file=*/false);
  } catch (const YAML::Exception& e) {
    return Status::Config(config_reader::MarkText(source, e.mark) + ": malformed YAML: " + e.msg);
  }
  if (!ctx.errors.empty()) return ctx.ToStatus();
  return out;
}

Result<AlertsSection> LoadLabAlerts(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return AlertsSection{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Config(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1 << 20)) return Status::Config(path + ": larger than 1 MiB");
  return ParseAlertsText(text.str(), path, /*lab_file=*/true);
}

Result<std::string> ResolveReference(const std::string& ref) {
  if (ref.rfind("env:", 0) == 0) {
    const char* v = std::getenv(ref.substr(4).c_str());
    if (v == nullptr || *v == '\0') {
      return Status::Config("reference " + ref + ": the environment variable is not set");
    }
    return std::string(v);
  }
  if (ref.rfind("file:", 0) == 0) {
    std::ifstream in(ref.substr(5));
    std::string line;
    if (!in || !std::getline(in, line)) {
      return Status::Config("reference " + ref + ": the file cannot be read");
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty())
      return Status::Config("reference " + ref + ": the file's first line is empty");
    return line;
  }
  return Status::Config("reference '" + ref + "': expected env:NAME or file:PATH");
}

Status CheckAlertReferences(const AlertsSection& a, const std::string& where) {
  for (const AlertSink& s : a.sinks) {
    if (!s.url.empty()) {
      Result<std::string> v = ResolveReference(s.url);
      if (!v.ok()) {
        return Status::Config(where + ": sink '" + s.name + "': " + v.status().message());
      }
    }
  }
  return Status::Ok();
}

}  // namespace baton
