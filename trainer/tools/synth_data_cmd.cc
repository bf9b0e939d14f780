// `baton-train synth-data`: writes a learnable synthetic dataset (see synth_dataset.h).
#include <iostream>
#include <memory>
#include <regex>

#include "trainer/data/synth_dataset.h"
#include "trainer/fail.h"
#include "trainer/tools/commands.h"

namespace baton {

void RegisterSynthData(CLI::App& app, CommandFn* selected) {
  auto opt = std::make_shared<SynthOptions>();
  auto frames = std::make_shared<std::string>("103:362");
  CLI::App* cmd =
      app.add_subcommand("synth-data", "Write a synthetic dataset with learnable structure");
  cmd->add_option("--out", opt->out, "Dataset folder to write")->required();
  cmd->add_option("--episodes", opt->episodes, "Number of episodes")->required();
  cmd->add_option("--seed", opt->seed, "Random seed")->required();
  cmd->add_option("--frames", *frames, "Latent frame range MIN:MAX")->capture_default_str();
  cmd->add_option("--channels", opt->shape.channels, "Latent channels C")->capture_default_str();
  cmd->add_option("--height", opt->shape.height, "Latent height H")->capture_default_str();
  cmd->add_option("--width", opt->shape.width, "Latent width W")->capture_default_str();
  cmd->add_option("--action-dim", opt->shape.action_dim, "Action channels A")
      ->capture_default_str();
  cmd->add_option("--action-steps", opt->shape.action_steps, "Action sub-steps per frame N")
      ->capture_default_str();
  cmd->add_option("--text-len", opt->shape.text_len, "Text tokens L")->capture_default_str();
  cmd->add_option("--text-dim", opt->shape.text_dim, "Text embedding size Dt")
      ->capture_default_str();
  cmd->add_flag("--overwrite", opt->overwrite, "Replace a dataset already in --out");
  cmd->callback([=] {
    *selected = [=]() -> int {
      std::smatch m;
      static const std::regex kRange("([0-9]+):([0-9]+)");
      if (!std::regex_match(*frames, m, kRange)) {
        std::cerr << "baton-train synth-data: --frames expects MIN:MAX, got '" << *frames << "'\n";
        return kExitUsage;
      }
      opt->min_frames = std::stoll(m[1]);
      opt->max_frames = std::stoll(m[2]);
      for (int64_t v :
           {opt->shape.channels, opt->shape.height, opt->shape.width, opt->shape.action_dim,
            opt->shape.action_steps, opt->shape.text_len, opt->shape.text_dim}) {
        if (v < 1) {
          std::cerr << "baton-train synth-data: every size must be >= 1\n";
          return kExitUsage;
        }
      }
      const Status st = WriteSynthDataset(*opt);
      if (!st.ok()) {
        std::cerr << "baton-train synth-data: " << st.ToString() << "\n";
        return st.exit_code();
      }
      std::cout << "wrote " << opt->episodes << " episodes (F " << opt->min_frames << ".."
                << opt->max_frames << ", " << opt->shape.ToString() << ") to " << opt->out << "\n";
      return kExitOk;
    };
  });
}

}  // namespace baton
