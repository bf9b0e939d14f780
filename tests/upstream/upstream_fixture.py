#!/usr/bin/env python3
"""Fixtures and checks for baton's upstream compatibility (docs/upstream.md), with nothing but
python3-torch:

  checkpoint OUT [options]    a tiny upstream-layout transformer/ folder: config.json (the 15
                              constructor keys, _class_name, attn_mode "flex"), seeded weights in
                              bf16 as 2 shards + diffusers' index (a weight and its bias split
                              across the shards), plus Wan2.2's extra patch_embedding.{weight,bias}
  inputs CKPT OUT [options]   an IN file for `baton-train forward`
  reference CKPT IN OUT       upstream's training forward (float64 reference) on IN -> OUT
  check-export DIR [options]  a baton-written transformer/ folder has exactly upstream's keys,
                              shapes and config keys (and, with --like, the fixture's values)
  keys OUT                    upstream's key list of CKPT's config, one "key shape" per line
  write-v1 CKPT DIR           a format-version-1 baton checkpoint (baton's old names) holding
                              CKPT's weights, for `baton-train ckpt upgrade`
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402
import upstream_model as um  # noqa: E402


def tiny_config(a):
    return {
        "_class_name": "WanTransformer3DModel",
        "_diffusers_version": "0.36.0",
        "patch_size": [1, 2, 2],
        "num_attention_heads": a.heads,
        "attention_head_dim": a.head_dim,
        "in_channels": 4,
        "out_channels": 4,
        "action_dim": 8,
        "text_dim": 16,
        "freq_dim": 32,
        "ffn_dim": a.ffn_dim,
        "num_layers": a.layers,
        "cross_attn_norm": True,
        "eps": 1e-6,
        "rope_max_seq_len": 1024,
        "pos_embed_seq_len": None,
        "attn_mode": "flex",
    }


def transformer_dir(path):
    return path if os.path.exists(os.path.join(path, "config.json")) else os.path.join(path, "transformer")


def load_folder(path):
    """(config, {key: tensor}) of a transformer/ folder (single file or index + shards)."""
    d = transformer_dir(path)
    cfg = json.load(open(os.path.join(d, "config.json")))
    index = os.path.join(d, "diffusion_pytorch_model.safetensors.index.json")
    sd = {}
    if os.path.exists(index):
        for shard in sorted(set(json.load(open(index))["weight_map"].values())):
            sd.update(st.read(os.path.join(d, shard))[0])
    else:
        sd = st.read(os.path.join(d, "diffusion_pytorch_model.safetensors"))[0]
    return cfg, sd


def cmd_checkpoint(a):
    cfg = tiny_config(a)
    g = torch.Generator().manual_seed(a.seed)
    sd = {}
    for key, shape in um.upstream_keys(cfg):
        if key.endswith("norm_q.weight") or key.endswith("norm_k.weight") or key.endswith("norm2.weight"):
            t = 1 + 0.1 * torch.randn(shape, generator=g)
        elif key.endswith("scale_shift_table"):
            t = torch.randn(shape, generator=g) / shape[-1] ** 0.5
        elif key.endswith(".bias"):
            t = 0.05 * torch.randn(shape, generator=g)
        else:
            t = torch.randn(shape, generator=g) / shape[1] ** 0.5
        sd[key] = t
    D = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    extra = {"patch_embedding.weight": torch.randn([D, 4, 1, 2, 2], generator=g),
             "patch_embedding.bias": torch.randn([D], generator=g)}
    if a.drop:
        del sd[a.drop]
    if a.reshape:
        sd[a.reshape] = torch.zeros([s + 1 for s in sd[a.reshape].shape])
    if a.extra:
        sd[a.extra] = torch.zeros([3])
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
    items = [(k, v.to(dtype)) for k, v in sd.items()]
    if not a.no_patch_embedding:
        items += [(k, v.to(dtype)) for k, v in extra.items()]
    d = os.path.join(a.out, "transformer")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    if a.shards == 1:
        st.write(os.path.join(d, "diffusion_pytorch_model.safetensors"), items, {"format": "pt"})
        return
    # Split between a weight and its own bias (shards ignore module boundaries), into parts of
    # about equal bytes.
    total_bytes = sum(v.numel() * v.element_size() for _, v in items)
    parts, current, acc = [], [], 0
    for i, (k, v) in enumerate(items):
        current.append((k, v))
        acc += v.numel() * v.element_size()
        nxt = items[i + 1][0] if i + 1 < len(items) else ""
        if (len(parts) < a.shards - 1 and acc >= total_bytes * (len(parts) + 1) / a.shards
                and k.endswith(".weight") and nxt.endswith(".bias")):
            parts.append(current)
            current = []
    parts.append(current)
    weight_map, total = {}, 0
    for i, part in enumerate(parts):
        name = "diffusion_pytorch_model-%05d-of-%05d.safetensors" % (i + 1, len(parts))
        st.write(os.path.join(d, name), part, {"format": "pt"})
        for k, v in part:
            weight_map[k] = name
            total += v.numel() * v.element_size()
    with open(os.path.join(d, "diffusion_pytorch_model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)


def cmd_inputs(a):
    cfg, _ = load_folder(a.ckpt)
    g = torch.Generator().manual_seed(a.seed)
    C, A, Tx = cfg["in_channels"], cfg["action_dim"], cfg["text_dim"]
    F, H, W, N = a.frames, a.height, a.width, a.steps
    clean = torch.randn([C, F, H, W], generator=g)
    sigma = torch.rand([F], generator=g)
    noise = torch.randn([C, F, H, W], generator=g)
    acts = torch.randn([A, F, N], generator=g).clamp(-1.5, 1.5)
    asig = torch.rand([F], generator=g)
    text = torch.zeros([a.text_len, Tx])
    text[: a.text_len - 2] = torch.randn([a.text_len - 2, Tx], generator=g)  # zero pad rows
    tensors = {
        "noisy_latents": (1 - sigma[None, :, None, None]) * clean + sigma[None, :, None, None] * noise,
        "clean_latents": clean,
        "timesteps": 1000 * sigma,
        "cond_timesteps": torch.zeros([F]),
        "noisy_actions": (1 - asig[None, :, None]) * acts + asig[None, :, None] * torch.randn([A, F, N], generator=g),
        "clean_actions": acts,
        "action_timesteps": 1000 * asig,
        "action_cond_timesteps": torch.zeros([F]),
        "text_emb": text,
        "chunk_size": torch.tensor([a.chunk], dtype=torch.int64),
        "window_size": torch.tensor([a.window], dtype=torch.int64),
    }
    if a.drop:
        del tensors[a.drop]
    if a.reshape:
        tensors[a.reshape] = torch.zeros([s + 1 for s in tensors[a.reshape].shape])
    st.write(a.out, tensors)


def cmd_reference(a):
    cfg, sd = load_folder(a.ckpt)
    inp, _ = st.read(a.inputs)
    video, action = um.forward(sd, cfg, inp)
    st.write(a.out, {"video_pred": video, "action_pred": action})


def fail(msg):
    print("check-export: " + msg, file=sys.stderr)
    sys.exit(1)


def cmd_check_export(a):
    d = transformer_dir(a.dir)
    cfg = json.load(open(os.path.join(d, "config.json")))
    for k in um.CONFIG_KEYS + ["_class_name", "_diffusers_version"]:
        if k not in cfg:
            fail("config.json lacks " + k)
    if cfg["_class_name"] != "WanTransformer3DModel":
        fail("_class_name " + repr(cfg["_class_name"]))
    if not (isinstance(cfg["patch_size"], list) and len(cfg["patch_size"]) == 3 and cfg["patch_size"][0] == 1):
        fail("patch_size " + repr(cfg["patch_size"]))
    for k in ("num_attention_heads", "attention_head_dim", "in_channels", "out_channels", "action_dim",
              "text_dim", "freq_dim", "ffn_dim", "num_layers", "rope_max_seq_len"):
        if not isinstance(cfg[k], int) or isinstance(cfg[k], bool):
            fail("%s is not an integer: %r" % (k, cfg[k]))
    if cfg["cross_attn_norm"] is not True or not isinstance(cfg["eps"], float):
        fail("cross_attn_norm / eps: %r / %r" % (cfg["cross_attn_norm"], cfg["eps"]))
    unknown = [k for k in cfg if k not in um.CONFIG_KEYS and k not in ("_class_name", "_diffusers_version")
               and not k.startswith("_baton_")]
    if unknown:
        fail("config.json has keys upstream does not know: %s" % unknown)
    index = os.path.join(d, "diffusion_pytorch_model.safetensors.index.json")
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    if a.shards > 1:
        if not os.path.exists(index):
            fail("no index json")
        idx = json.load(open(index))
        if "total_size" not in idx.get("metadata", {}):
            fail("index metadata lacks total_size")
        shards = sorted(set(idx["weight_map"].values()))
        want = ["diffusion_pytorch_model-%05d-of-%05d.safetensors" % (i + 1, len(shards)) for i in range(len(shards))]
        if shards != want or files != want:
            fail("shards %s, files %s, want %s" % (shards, files, want))
        if len(shards) < a.shards:
            fail("%d shards, want at least %d" % (len(shards), a.shards))
        total = 0
        for s in shards:
            t, meta = st.read(os.path.join(d, s))
            if meta.get("format") != "pt":
                fail(s + ": __metadata__ format is not pt")
            for k, v in t.items():
                if idx["weight_map"].get(k) != s:
                    fail("%s holds %s but the index says %s" % (s, k, idx["weight_map"].get(k)))
                total += v.numel() * v.element_size()
        if total != idx["metadata"]["total_size"]:
            fail("total_size %d vs %d" % (idx["metadata"]["total_size"], total))
    elif files != ["diffusion_pytorch_model.safetensors"] or os.path.exists(index):
        fail("want one diffusion_pytorch_model.safetensors and no index, got %s" % files)
    _, sd = load_folder(a.dir)
    want = um.upstream_keys(cfg)
    if sorted(sd) != sorted(k for k, _ in want):
        fail("keys differ: missing %s, extra %s" % (sorted(set(k for k, _ in want) - set(sd)),
                                                    sorted(set(sd) - set(k for k, _ in want))))
    for k, shape in want:
        if list(sd[k].shape) != shape:
            fail("%s has shape %s, upstream %s" % (k, list(sd[k].shape), shape))
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    if any(v.dtype != dt for v in sd.values()):
        fail("dtypes %s, want %s" % (sorted(set(str(v.dtype) for v in sd.values())), dt))
    if a.like:
        _, ref = load_folder(a.like)
        for k, _ in want:
            same = torch.equal(sd[k].float(), ref[k].float())
            frozen = any(k.startswith(p) for p in a.same)
            if (frozen or not a.same) and not same:
                fail("%s differs from %s" % (k, a.like))
            if a.same and not frozen and a.changed and same:
                fail("%s did not change" % k)
    print("ok: %s: %d upstream keys, shapes, %d config keys, %s" % (d, len(want), len(cfg), a.dtype))


def cmd_keys(a):
    cfg, _ = load_folder(a.ckpt)
    for k, shape in um.upstream_keys(cfg):
        print(k, shape)


# Version-1 baton names (the inverse of `baton-train ckpt upgrade`'s table).
def v1_name(k):
    import re
    rules = [
        (r"patch_embedding_mlp\.(.*)", r"patch_embedding.\1"),
        (r"action_embedder\.(.*)", r"action_embedding.\1"),
        (r"condition_embedder\.time_embedder\.linear_1\.(.*)", r"time_embedding_video.0.\1"),
        (r"condition_embedder\.time_embedder\.linear_2\.(.*)", r"time_embedding_video.2.\1"),
        (r"condition_embedder_action\.time_embedder\.linear_1\.(.*)", r"time_embedding_action.0.\1"),
        (r"condition_embedder_action\.time_embedder\.linear_2\.(.*)", r"time_embedding_action.2.\1"),
        (r"condition_embedder\.time_proj\.(.*)", r"time_projection.\1"),
        (r"condition_embedder\.text_embedder\.linear_1\.(.*)", r"text_embedding.0.\1"),
        (r"condition_embedder\.text_embedder\.linear_2\.(.*)", r"text_embedding.2.\1"),
        (r"blocks\.(\d+)\.scale_shift_table", r"blocks.\1.modulation"),
        (r"blocks\.(\d+)\.attn1\.to_out\.0\.(.*)", r"blocks.\1.self_attn_o.\2"),
        (r"blocks\.(\d+)\.attn1\.to_([qkv])\.(.*)", r"blocks.\1.self_attn_\2.\3"),
        (r"blocks\.(\d+)\.attn1\.norm_([qk])\.(.*)", r"blocks.\1.self_attn_norm_\2.\3"),
        (r"blocks\.(\d+)\.attn2\.to_out\.0\.(.*)", r"blocks.\1.cross_attn_o.\2"),
        (r"blocks\.(\d+)\.attn2\.to_([qkv])\.(.*)", r"blocks.\1.cross_attn_\2.\3"),
        (r"blocks\.(\d+)\.attn2\.norm_([qk])\.(.*)", r"blocks.\1.cross_attn_norm_\2.\3"),
        (r"blocks\.(\d+)\.norm2\.(.*)", r"blocks.\1.norm3.\2"),
        (r"blocks\.(\d+)\.ffn\.net\.0\.proj\.(.*)", r"blocks.\1.ffn_0.\2"),
        (r"blocks\.(\d+)\.ffn\.net\.2\.(.*)", r"blocks.\1.ffn_2.\2"),
        (r"proj_out\.(.*)", r"head_video.\1"),
        (r"action_proj_out\.(.*)", r"head_action.\1"),
        (r"scale_shift_table", r"head_modulation"),
    ]
    for pat, rep in rules:
        if re.fullmatch(pat, k):
            return re.sub(pat, rep, k)
    return None  # condition_embedder_action.time_proj / text_embedder: not in version 1


def cmd_write_v1(a):
    """Weights of CKPT under version-1 names (float64), zero AdamW moments, a trainer state
    taken from TEMPLATE (a version-2 checkpoint of the same run); the caller writes the
    manifest (baton manifest write) and patches its version."""
    cfg, sd = load_folder(a.ckpt)
    C, P = cfg["in_channels"], cfg["patch_size"][1] * cfg["patch_size"][2]
    w, o = {}, {}
    for k, v in sd.items():
        n = v1_name(k)
        if n is None:
            continue
        v = v.double()
        if n.endswith("modulation"):
            v = v[0]
        if n.startswith("head_video"):  # upstream row k*C + c -> version-1 row c*P + k
            perm = torch.arange(C * P).reshape(P, C).t().reshape(-1)
            v = v[perm]
        w[n] = v
        o["exp_avg." + n] = torch.full_like(v, 0.25)
        o["exp_avg_sq." + n] = torch.full_like(v, 0.5)
        o["step." + n] = torch.tensor([3], dtype=torch.int64)
    os.makedirs(os.path.join(a.dir, "transformer"), exist_ok=True)
    st.write(os.path.join(a.dir, "transformer", "diffusion_pytorch_model.safetensors"), w, {"format": "pt"})
    st.write(os.path.join(a.dir, "optimizer.safetensors"), o)
    v1cfg = {"_class_name": "BatonVideoActionModel", "in_channels": C, "patch_size": cfg["patch_size"][1],
             "action_dim": cfg["action_dim"], "action_steps": a.action_steps, "text_dim": cfg["text_dim"],
             "dim": cfg["num_attention_heads"] * cfg["attention_head_dim"],
             "num_heads": cfg["num_attention_heads"], "num_layers": cfg["num_layers"], "ffn_dim": cfg["ffn_dim"],
             "freq_dim": cfg["freq_dim"], "rope_theta": 10000.0, "eps": cfg["eps"]}
    json.dump(v1cfg, open(os.path.join(a.dir, "transformer", "config.json"), "w"), indent=2)
    state = json.load(open(os.path.join(a.template, "trainer_state.json")))
    state["format_version"] = 1
    json.dump(state, open(os.path.join(a.dir, "trainer_state.json"), "w"), indent=2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("checkpoint")
    c.add_argument("out")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--heads", type=int, default=2)
    c.add_argument("--head-dim", type=int, default=24)
    c.add_argument("--layers", type=int, default=2)
    c.add_argument("--ffn-dim", type=int, default=96)
    c.add_argument("--shards", type=int, default=2)
    c.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    c.add_argument("--drop", help="leave this key out")
    c.add_argument("--reshape", help="give this key a wrong shape")
    c.add_argument("--extra", help="add this unexpected key")
    c.add_argument("--no-patch-embedding", action="store_true")
    c = sub.add_parser("inputs")
    c.add_argument("ckpt")
    c.add_argument("out")
    c.add_argument("--seed", type=int, default=2)
    c.add_argument("--frames", type=int, default=3)
    c.add_argument("--height", type=int, default=4)
    c.add_argument("--width", type=int, default=4)
    c.add_argument("--steps", type=int, default=3)
    c.add_argument("--text-len", type=int, default=6)
    c.add_argument("--chunk", type=int, default=1)
    c.add_argument("--window", type=int, default=3)
    c.add_argument("--drop")
    c.add_argument("--reshape")
    c = sub.add_parser("reference")
    c.add_argument("ckpt")
    c.add_argument("inputs")
    c.add_argument("out")
    c = sub.add_parser("check-export")
    c.add_argument("dir")
    c.add_argument("--shards", type=int, default=1)
    c.add_argument("--dtype", default="fp32")
    c.add_argument("--like", help="fixture folder whose values must be equal")
    c.add_argument("--same", action="append", default=[], help="with --like: only keys with this prefix must be equal")
    c.add_argument("--changed", action="store_true", help="with --same: every other key must differ")
    c = sub.add_parser("keys")
    c.add_argument("ckpt")
    c = sub.add_parser("write-v1")
    c.add_argument("ckpt")
    c.add_argument("dir")
    c.add_argument("--template", required=True)
    c.add_argument("--action-steps", type=int, default=3)
    a = p.parse_args()
    {"checkpoint": cmd_checkpoint, "inputs": cmd_inputs, "reference": cmd_reference,
     "check-export": cmd_check_export, "keys": cmd_keys, "write-v1": cmd_write_v1}[a.cmd](a)


if __name__ == "__main__":
    main()
