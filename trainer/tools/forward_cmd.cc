// `baton-train forward`: one sample through the model in upstream's tensor layout, for parity
// checks against upstream's own forward (docs/upstream.md, "Checking parity").
//
//   IN:  noisy_latents, clean_latents [C, F, H, W]; timesteps, cond_timesteps,
//        action_timesteps, action_cond_timesteps [F] (t in [0, 1000]); noisy_actions,
//        clean_actions [A, F, N]; text_emb [Lt, text_dim]; chunk_size, window_size int64 [1].
//        Floats in F32, BF16, F16 or F64.
//   OUT: video_pred [C, F, H, W], action_pred [A, F, N] (F32, or F64 with --dtype float64).
// A missing, mis-shaped or empty input (F, H or W of 0) is exit 65 naming it.
#include <chrono>
#include <cstdio>
#include <memory>

#include "schema/exit_codes.h"
#include "schema/safetensors.h"
#include "trainer/ckpt/upstream_io.h"
#include "trainer/fail.h"
#include "trainer/model/packed_layout.h"
#include "trainer/model/video_action_model.h"
#include "trainer/tools/commands.h"
#include "trainer/train/torch_dtype.h"

namespace baton {

namespace {

struct Args {
  std::string init_from, inputs, out, dtype = "float32";
};

class Inputs {
 public:
  explicit Inputs(const std::string& path) : path_(path) {
    auto f = SafetensorsFile::Open(path);
    if (!f.ok()) FailAt(__FILE__, __LINE__, kExitData, f.status().ToString(), "check --inputs");
    file_ = f.value();
  }
  // The named tensor, shape-checked (-1 = any size, which is then reported back), as `dtype`.
  torch::Tensor Get(const std::string& name, std::vector<int64_t> want, torch::Dtype dtype,
                    bool integer = false) {
    const StTensorInfo* t = file_->Find(name);
    if (t == nullptr) {
      BATON_FAIL(kExitData, path_ + ": input tensor '" + name + "' is missing",
                 "baton-train forward --help lists the inputs and their shapes");
    }
    bool ok = t->shape.size() == want.size();
    for (size_t i = 0; ok && i < want.size(); ++i) ok = want[i] < 0 || want[i] == t->shape[i];
    if (!ok) {
      std::string w = "[";
      for (size_t i = 0; i < want.size(); ++i)
        w += (i ? ", " : "") + (want[i] < 0 ? std::string("*") : std::to_string(want[i]));
      BATON_FAIL(kExitData,
                 path_ + ": input tensor '" + name + "' has shape " + ShapeString(t->shape) +
                     ", expected " + w + "]",
                 "sizes come from config.json and noisy_latents / noisy_actions");
    }
    const bool is_float = t->dtype == StDType::kF32 || t->dtype == StDType::kBF16 ||
                          t->dtype == StDType::kF16 || t->dtype == StDType::kF64;
    const bool is_int = t->dtype == StDType::kI64 || t->dtype == StDType::kI32;
    if ((integer && !is_int) || (!integer && !is_float)) {
      BATON_FAIL(kExitData,
                 path_ + ": input tensor '" + name + "' has dtype " + StDTypeName(t->dtype) +
                     (integer ? ", expected I64" : ", expected F32, BF16 or F64"),
                 "write the inputs with the dtypes docs/upstream.md lists");
    }
    return torch::from_blob(const_cast<uint8_t*>(file_->Data(*t)), t->shape, ToTorchDtype(t->dtype))
        .to(dtype);
  }

 private:
  std::string path_;
  std::shared_ptr<const SafetensorsFile> file_;
};

int RunForward(const Args& a) {
  const torch::Dtype dtype = TorchDtype(Parse<DType>(a.dtype).value());
  const std::string tdir = FindTransformerDir(a.init_from);
  ModelDims d = ReadUpstreamDims(tdir);
  CheckTransformerWeights(tdir, d);  // before a model of these sizes is allocated
  Inputs in(a.inputs);
  const int64_t C = d.channels, A = d.action_dim;
  auto noisy = in.Get("noisy_latents", {C, -1, -1, -1}, dtype);
  const int64_t F = noisy.size(1), H = noisy.size(2), W = noisy.size(3);
  if (F < 1 || H < 1 || W < 1) {
    BATON_FAIL(kExitData,
               a.inputs + ": noisy_latents has shape " + ShapeString(noisy.sizes().vec()) +
                   ": an empty sample (F " + std::to_string(F) + ", H " + std::to_string(H) +
                   ", W " + std::to_string(W) + ")",
               "the sample needs at least one frame (F >= 1) and a height and width of at least "
               "one patch");
  }
  if (H % d.patch != 0 || W % d.patch != 0) {
    BATON_FAIL(kExitData,
               a.inputs + ": noisy_latents is " + std::to_string(H) + "x" + std::to_string(W) +
                   ", not divisible by the patch size " + std::to_string(d.patch),
               "the latents' height and width must be multiples of the model's patch size");
  }
  auto noisy_actions = in.Get("noisy_actions", {A, F, -1}, dtype);
  const int64_t N = noisy_actions.size(2);
  d.action_steps = N;
  ModelInputs x;
  x.video_noisy = noisy.unsqueeze(0);
  x.video_clean = in.Get("clean_latents", {C, F, H, W}, dtype).unsqueeze(0);
  x.action_noisy = noisy_actions.unsqueeze(0);
  x.action_clean = in.Get("clean_actions", {A, F, N}, dtype).unsqueeze(0);
  x.t_video_noisy = in.Get("timesteps", {F}, dtype).unsqueeze(0);
  x.t_video_clean = in.Get("cond_timesteps", {F}, dtype).unsqueeze(0);
  x.t_action_noisy = in.Get("action_timesteps", {F}, dtype).unsqueeze(0);
  x.t_action_clean = in.Get("action_cond_timesteps", {F}, dtype).unsqueeze(0);
  x.text = in.Get("text_emb", {-1, d.text_dim}, dtype).unsqueeze(0);
  const int64_t chunk = in.Get("chunk_size", {1}, torch::kInt64, true).item<int64_t>();
  const int64_t window = in.Get("window_size", {1}, torch::kInt64, true).item<int64_t>();
  if (chunk < 1 || window < 0) {
    BATON_FAIL(kExitData,
               a.inputs + ": chunk_size " + std::to_string(chunk) + " / window_size " +
                   std::to_string(window) + " out of range (chunk_size >= 1, window_size >= 0)",
               "write chunk_size >= 1 and window_size >= 0 into the inputs file");
  }

  VideoActionModel model(d);
  model->to(dtype);
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t bytes = LoadTransformerWeights(tdir, model);
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  torch::NoGradGuard no_grad;
  const PackedLayout layout =
      BuildPackedLayout(F, H / d.patch, W / d.patch, N, {{F, chunk, window}});
  const LayoutTensors lt =
      MakeLayoutTensors(layout, d.head_dim(), d.rope_theta, torch::kCPU, dtype);
  const ModelOutputs out = model->forward(x, layout, lt);
  auto video = out.video.squeeze(0).contiguous(), action = out.action.squeeze(0).contiguous();
  const StDType st = dtype == torch::kFloat64 ? StDType::kF64 : StDType::kF32;
  BATON_CHECK_OK(
      WriteSafetensors(a.out, {{"video_pred", st, video.sizes().vec(), video.data_ptr()},
                               {"action_pred", st, action.sizes().vec(), action.data_ptr()}}),
      "check the --out folder");
  std::printf(
      "forward: %s -> %s (F %lld, %lldx%lld, N %lld, chunk %lld, window %lld, %s)\n"
      "weights: %.1f MB read from %s in %.3f s\n",
      a.inputs.c_str(), a.out.c_str(), (long long)F, (long long)H, (long long)W, (long long)N,
      (long long)chunk, (long long)window, a.dtype.c_str(), bytes / 1e6, tdir.c_str(), load_s);
  return kExitOk;
}

}  // namespace

void RegisterForward(CLI::App& app, CommandFn* selected) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "forward",
      "One sample through the model in upstream's layout. IN: noisy_latents, clean_latents "
      "[C,F,H,W]; timesteps, cond_timesteps, action_timesteps, action_cond_timesteps [F]; "
      "noisy_actions, clean_actions [A,F,N]; text_emb [Lt,text_dim]; chunk_size, window_size "
      "int64 [1]. OUT: video_pred [C,F,H,W], action_pred [A,F,N]");
  cmd->add_option("--init-from", a->init_from, "Upstream transformer/ folder (or its parent)")
      ->required();
  cmd->add_option("--inputs", a->inputs, "Input safetensors file")->required();
  cmd->add_option("--out", a->out, "Output safetensors file")->required();
  cmd->add_option("--dtype", a->dtype, "Compute and output dtype")
      ->check(CLI::IsMember({"float32", "float64"}))
      ->capture_default_str();
  cmd->callback([=] { *selected = [=] { return RunForward(*a); }; });
}

}  // namespace baton
