#include "orchestrator/slurm/slurm_client.h"

#include <cctype>

namespace baton {

namespace {

// "Key=" at `pos`: returns the length of Key, or 0.
size_t FieldKeyLength(const std::string& s, size_t pos) {
  size_t i = pos;
  while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == ':' ||
                          s[i] == '/' || s[i] == '_')) {
    ++i;
  }
  return (i > pos && i < s.size() && s[i] == '=') ? i - pos : 0;
}

int64_t ToInt(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (...) {
    return 0;
  }
}

}  // namespace

JobInfo ParseScontrolJob(const std::string& line) {
  JobInfo info;
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t pos = 0;
  std::string key;
  size_t value_start = 0;
  auto flush = [&](size_t value_end) {
    if (!key.empty()) {
      std::string v = text.substr(value_start, value_end - value_start);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      info.fields[key] = v;
    }
  };
  while (pos < text.size()) {
    const bool at_token = pos == 0 || text[pos - 1] == ' ';
    const size_t klen = at_token ? FieldKeyLength(text, pos) : 0;
    if (klen > 0) {
      flush(pos);
      key = text.substr(pos, klen);
      value_start = pos + klen + 1;
      pos = value_start;
      continue;
    }
    ++pos;
  }
  flush(text.size());
  info.job_id = info.fields["JobId"];
  info.state = info.fields["JobState"];
  info.reason = info.fields["Reason"];
  info.restarts = ToInt(info.fields["Restarts"]);
  info.exit_code = info.fields["ExitCode"];
  info.nodes = info.fields["NodeList"];
  info.partition = info.fields["Partition"];
  if (info.nodes == "(null)") info.nodes.clear();
  return info;
}

bool LooksLikeControllerDown(const std::string& s) {
  for (const char* needle :
       {"Unable to contact slurm controller", "Socket timed out", "Connection refused",
        "connect failure", "Could not establish a configuration source",
        "Zero Bytes were transmitted", "Communication connection failure",
        "Unable to establish controller machine"}) {
    if (s.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace baton
