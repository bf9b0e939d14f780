// Run profile and config keys for the run and compare pages.
//
// ProfileJson: the trainer's `microstep` events (train.profile > 0: tokens, forward+backward
// seconds, peak memory per micro-step) summed per optimizer step and per attempt — tokens/s,
// peak memory, and the distinct micro-step token counts of a step (how many packed-row shapes
// it ran). MFU needs the device's peak FLOP/s, which no config key states yet: it is null.
//
// FlattenConfig: a frozen run.yaml as {"section.key": "value"} (scalars as written, sequences
// and maps below the second level as compact JSON) for the compare page's diff of differing keys.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orchestrator/store/records.h"

namespace baton {

// Steps listed per answer (the first ones in attempt and step order); summaries are exact.
inline constexpr size_t kMaxProfileSteps = 5000;

nlohmann::json ProfileJson(const std::vector<MicrostepRecord>& micro,
                           const std::map<int64_t, int>& attempt_index);

// {} when the text is not a YAML map.
nlohmann::json FlattenConfig(const std::string& yaml_text);

}  // namespace baton
