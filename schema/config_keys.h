// FlattenConfigKeys: a run config's YAML text as {"section.key": "value"}, the form in which two
// configs are compared (baton resume's "only slurm: may change", the web compare page's table
// of differing keys). Scalars as written, null as "", a sequence or a map below the second level
// as compact flow YAML. Pure; thread-safe.
#pragma once

#include <map>
#include <string>

#include "schema/status.h"

namespace baton {

// kConfig when the text is not YAML; {} when it is not a map.
Result<std::map<std::string, std::string>> FlattenConfigKeys(const std::string& yaml_text);

}  // namespace baton
