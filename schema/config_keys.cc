#include "schema/config_keys.h"

#include <yaml-cpp/yaml.h>

namespace baton {

namespace {

void Flatten(const YAML::Node& n, const std::string& prefix, int depth,
             std::map<std::string, std::string>* out) {
  if (n.IsMap() && depth < 2) {
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>("");
      Flatten(kv.second, prefix.empty() ? key : prefix + "." + key, depth + 1, out);
    }
    return;
  }
  if (n.IsScalar()) {
    (*out)[prefix] = n.Scalar();
  } else if (n.IsNull()) {
    (*out)[prefix] = "";
  } else {
    YAML::Emitter e;
    e << YAML::Flow << n;
    (*out)[prefix] = e.c_str();
  }
}

}  // namespace

Result<std::map<std::string, std::string>> FlattenConfigKeys(const std::string& yaml_text) {
  std::map<std::string, std::string> out;
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    if (root.IsMap()) Flatten(root, "", 0, &out);
  } catch (const YAML::Exception& e) {
    return Status::Config(std::string("not YAML: ") + e.what());
  }
  return out;
}

}  // namespace baton
