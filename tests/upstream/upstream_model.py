"""Upstream LingBot-VA's WanTransformer3DModel, as data: its config.json constructor keys, its
state-dict keys and shapes, and a float64 reference of its training forward written from
upstream's module code (model.py: WanTimeTextImageEmbedding, WanRotaryPosEmbed, WanAttention,
WanTransformerBlock, the final layer) and the attention mask rule of docs/model.md. Needs only
torch (1.13 is enough); no diffusers, no einops."""
import math

import torch
import torch.nn.functional as Fn

CONFIG_KEYS = ["patch_size", "num_attention_heads", "attention_head_dim", "in_channels",
               "out_channels", "action_dim", "text_dim", "freq_dim", "ffn_dim", "num_layers",
               "cross_attn_norm", "eps", "rope_max_seq_len", "pos_embed_seq_len", "attn_mode"]


def upstream_keys(cfg):
    """[(key, shape)] of every tensor of upstream's state dict, 29 + 27 * num_layers."""
    D = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    P = cfg["patch_size"][0] * cfg["patch_size"][1] * cfg["patch_size"][2]
    C, A, Tx, Fq, Fd = cfg["in_channels"], cfg["action_dim"], cfg["text_dim"], cfg["freq_dim"], cfg["ffn_dim"]
    keys = []

    def lin(name, i, o):
        keys.append((name + ".weight", [o, i]))
        keys.append((name + ".bias", [o]))

    lin("patch_embedding_mlp", C * P, D)
    lin("action_embedder", A, D)
    for emb in ("condition_embedder", "condition_embedder_action"):
        lin(emb + ".time_embedder.linear_1", Fq, D)
        lin(emb + ".time_embedder.linear_2", D, D)
        lin(emb + ".time_proj", D, 6 * D)
        lin(emb + ".text_embedder.linear_1", Tx, D)
        lin(emb + ".text_embedder.linear_2", D, D)
    for i in range(cfg["num_layers"]):
        b = "blocks.%d." % i
        keys.append((b + "scale_shift_table", [1, 6, D]))
        for a in ("attn1", "attn2"):
            for p in ("to_q", "to_k", "to_v", "to_out.0"):
                lin(b + a + "." + p, D, D)
            keys.append((b + a + ".norm_q.weight", [D]))
            keys.append((b + a + ".norm_k.weight", [D]))
        keys.append((b + "norm2.weight", [D]))
        keys.append((b + "norm2.bias", [D]))
        lin(b + "ffn.net.0.proj", D, Fd)
        lin(b + "ffn.net.2", Fd, D)
    lin("proj_out", D, cfg["out_channels"] * P)
    lin("action_proj_out", D, A)
    keys.append(("scale_shift_table", [1, 2, D]))
    assert len(keys) == 29 + 27 * cfg["num_layers"]
    return keys


def rope_freqs(grid, hd, theta=10000.0):
    """WanRotaryPosEmbed: grid [T, 3] (f, h, w) -> complex [T, hd/2]."""
    f_dim = hd - 2 * (hd // 3)
    h_dim = w_dim = hd // 3

    def base(d):
        return 1.0 / (theta ** (torch.arange(0, d, 2)[: d // 2].double() / d))

    f = grid[:, 0:1] * base(f_dim)
    h = grid[:, 1:2] * base(h_dim)
    w = grid[:, 2:3] * base(w_dim)
    ang = torch.cat([f, h, w], dim=-1)
    return torch.polar(torch.ones_like(ang), ang)


def apply_rope(x, freqs):  # x [T, H, hd]
    xc = torch.view_as_complex(x.to(torch.float64).reshape(x.shape[0], x.shape[1], -1, 2))
    return torch.view_as_real(xc * freqs[:, None, :]).flatten(2).to(x.dtype)


def timestep_features(t, dim):
    """diffusers Timesteps(flip_sin_to_cos=True, downscale_freq_shift=0)."""
    half = dim // 2
    exponent = -math.log(10000) * torch.arange(half, dtype=torch.float64) / half
    emb = t.double()[:, None] * torch.exp(exponent)[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    return torch.cat([emb[:, half:], emb[:, :half]], dim=-1)


def lin(sd, name, x):
    return Fn.linear(x, sd[name + ".weight"], sd[name + ".bias"])


def rms(sd, name, x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * sd[name + ".weight"]


def mask_allows(q, k, window):
    """The attention mask rule (docs/model.md): tokens are (clean, frame_id)."""
    (qc, qf), (kc, kf) = q, k
    if abs(qf - kf) > window:
        return False
    if qc:
        return kc and kf <= qf
    if kc:
        return kf < qf
    return kf == qf


def forward(sd, cfg, inp):
    """Upstream's training forward of one sample, float64. `sd`: state dict (any float dtype),
    `inp`: the tensors of `baton-train forward`'s IN file. Returns (video_pred [C,F,H,W],
    action_pred [A,F,N])."""
    sd = {k: v.double() for k, v in sd.items()}
    Hh, hd = cfg["num_attention_heads"], cfg["attention_head_dim"]
    D, eps, p = Hh * hd, cfg["eps"], cfg["patch_size"][1]
    nl = inp["noisy_latents"].double()
    C, F, H, W = nl.shape
    A, _, N = inp["noisy_actions"].shape
    chunk, window = int(inp["chunk_size"][0]), int(inp["window_size"][0])
    Hp, Wp = H // p, W // p

    def patchify(x):  # c (f p1) (h p2) (w p3) -> (f h w) (c p1 p2 p3)
        return x.reshape(C, F, Hp, p, Wp, p).permute(1, 2, 4, 0, 3, 5).reshape(F * Hp * Wp, C * p * p)

    def action_tokens(a):  # c f n 1 -> (f n 1) c
        return a.double().permute(1, 2, 0).reshape(F * N, A)

    # Token streams: (embedded, timesteps, grid, clean, frame_id, embedder)
    streams = []
    vid_grid = torch.tensor([[f, h, w] for f in range(F) for h in range(Hp) for w in range(Wp)], dtype=torch.float64)
    act_grid = torch.tensor([[f + (n + 1) / (N + 1), -1, -1] for f in range(F) for n in range(N)], dtype=torch.float64)
    vid_fid = [2 * (f // chunk) for f in range(F) for _ in range(Hp * Wp)]
    act_fid = [2 * (f // chunk) + 1 for f in range(F) for _ in range(N)]
    for name, clean, t in (("noisy_latents", False, "timesteps"), ("clean_latents", True, "cond_timesteps")):
        x = lin(sd, "patch_embedding_mlp", patchify(inp[name].double()))
        ts = inp[t].double().repeat_interleave(Hp * Wp)
        streams.append((x, ts, vid_grid, clean, vid_fid, "condition_embedder"))
    for name, clean, t in (("noisy_actions", False, "action_timesteps"), ("clean_actions", True, "action_cond_timesteps")):
        x = lin(sd, "action_embedder", action_tokens(inp[name]))
        ts = inp[t].double().repeat_interleave(N)
        streams.append((x, ts, act_grid, clean, act_fid, "condition_embedder_action"))

    xs, tembs, projs, grids, toks = [], [], [], [], []
    for x, ts, grid, clean, fids, emb in streams:
        temb = lin(sd, emb + ".time_embedder.linear_2",
                   Fn.silu(lin(sd, emb + ".time_embedder.linear_1", timestep_features(ts, cfg["freq_dim"]))))
        xs.append(x)
        tembs.append(temb)
        projs.append(lin(sd, emb + ".time_proj", Fn.silu(temb)).reshape(-1, 6, D))
        grids.append(grid)
        toks += [(clean, f) for f in fids]
    x, temb, e0, grid = torch.cat(xs), torch.cat(tembs), torch.cat(projs), torch.cat(grids)
    T = x.shape[0]
    freqs = rope_freqs(grid, hd)
    allowed = torch.tensor([[mask_allows(toks[i], toks[j], window) for j in range(T)] for i in range(T)])
    text = inp["text_emb"].double()
    ctx = lin(sd, "condition_embedder.text_embedder.linear_2",
              Fn.gelu(lin(sd, "condition_embedder.text_embedder.linear_1", text), approximate="tanh"))

    def attention(q, k, v, mask):  # [T, H, hd]
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
        if mask is not None:
            s = s.masked_fill(~mask[None], float("-inf"))
        return torch.einsum("hqk,khd->qhd", torch.softmax(s, -1), v).reshape(-1, D)

    for i in range(cfg["num_layers"]):
        b = "blocks.%d." % i
        e = (sd[b + "scale_shift_table"] + e0).unbind(1)
        h = Fn.layer_norm(x, (D,), eps=eps) * (1 + e[1]) + e[0]
        q = apply_rope(rms(sd, b + "attn1.norm_q", lin(sd, b + "attn1.to_q", h), eps).reshape(T, Hh, hd), freqs)
        k = apply_rope(rms(sd, b + "attn1.norm_k", lin(sd, b + "attn1.to_k", h), eps).reshape(T, Hh, hd), freqs)
        v = lin(sd, b + "attn1.to_v", h).reshape(T, Hh, hd)
        x = x + lin(sd, b + "attn1.to_out.0", attention(q, k, v, allowed)) * e[2]
        h = Fn.layer_norm(x, (D,), sd[b + "norm2.weight"], sd[b + "norm2.bias"], eps=eps)
        q = rms(sd, b + "attn2.norm_q", lin(sd, b + "attn2.to_q", h), eps).reshape(T, Hh, hd)
        k = rms(sd, b + "attn2.norm_k", lin(sd, b + "attn2.to_k", ctx), eps).reshape(-1, Hh, hd)
        v = lin(sd, b + "attn2.to_v", ctx).reshape(-1, Hh, hd)
        x = x + lin(sd, b + "attn2.to_out.0", attention(q, k, v, None))
        h = Fn.layer_norm(x, (D,), eps=eps) * (1 + e[4]) + e[3]
        ff = lin(sd, b + "ffn.net.2", Fn.gelu(lin(sd, b + "ffn.net.0.proj", h), approximate="tanh"))
        x = x + ff * e[5]
    table = sd["scale_shift_table"] + temb[:, None, :]
    shift, scale = table[:, 0], table[:, 1]
    x = Fn.layer_norm(x, (D,), eps=eps) * (1 + scale) + shift
    V = F * Hp * Wp
    video = lin(sd, "proj_out", x[:V])  # (f h w), (n c) with n = (ph, pw)
    video = video.reshape(F, Hp, Wp, p, p, C).permute(5, 0, 1, 3, 2, 4).reshape(C, F, H, W)
    action = lin(sd, "action_proj_out", x[2 * V:2 * V + F * N]).reshape(F, N, A).permute(2, 0, 1)
    return video.contiguous(), action.contiguous()
