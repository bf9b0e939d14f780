// Run profile and config keys for the run and compare pages.
//
// ProfileJson: the trainer's `microstep` events (train.profile > 0: tokens, forward+backward
// seconds, peak memory per micro-step) summed per optimizer step and per attempt — tokens/s,
// peak memory, and the distinct micro-step token counts of a step (how many packed-row shapes
// it ran), and MFU: achieved model FLOP/s over train.device_peak_tflops (null when the config
// does not state the peak). Model FLOPs per token are those of the linear layers in forward and
// backward, 6 x their weights a token passes through (ModelFlopsPerToken); attention scores are
// left out, so MFU reads a little low for long rows.
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

// What MFU needs from a run's frozen config; zeros when it does not say.
struct ProfileModel {
  double flops_per_token = 0;  // model FLOPs of one token's forward + backward
  double peak_flops = 0;       // the device's peak FLOP/s (train.device_peak_tflops x 1e12)
};
// 6 x the weights of the linear layers a token passes through: per block the self-attention's
// q, k, v, out (4 D^2), cross-attention's q and out (2 D^2; its k and v act on the text, once per
// sample) and the FFN (2 D F).
double ModelFlopsPerToken(int64_t dim, int64_t layers, int64_t ffn_dim);
ProfileModel ProfileModelFromConfig(const std::string& yaml_text);

nlohmann::json ProfileJson(const std::vector<MicrostepRecord>& micro,
                           const std::map<int64_t, int>& attempt_index,
                           const ProfileModel& model = {});

// {} when the text is not a YAML map.
nlohmann::json FlattenConfig(const std::string& yaml_text);

}  // namespace baton
