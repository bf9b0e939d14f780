"""Writes a tiny upstream-style LingBot-VA training set (a LeRobot v2.1 dataset plus the per-camera
latent .pth files and empty_emb.pt that upstream's extract step writes) and, next to it, the
samples upstream's loader would feed, computed by a transcription of its per-sample transform
(_cat_video_latents and _action_post_process; docs/lerobot_import.md).

  /usr/bin/python3 make_upstream_dataset.py OUT [--segments N] [--text-len L] [--text-dim D]

OUT/src/tiny_robotwin/   the LeRobot dataset (3 episodes: ep 0 has two segments, ep 1 one, ep 2
                          one whose right-wrist latent file is missing); OUT/src/empty_emb.pt
OUT/profile.yaml         the import profile (robotwin layout, relative poses, quantiles)
OUT/expected/<id>.pt     per imported segment: latents, actions, actions_mask, text, n_video
OUT/expected/index.json  the expected ids, skips and distinct texts
--segments N (bench): N one-segment episodes instead, two distinct prompts, no expected files.
"""
import argparse
import json
import os

import numpy as np
import torch
from scipy.spatial.transform import Rotation as R

from parquet_writer import write_parquet

CAMS = ["observation.images.cam_high", "observation.images.cam_left_wrist",
        "observation.images.cam_right_wrist"]
C = 4            # latent channels (upstream: 48; small keeps the test fast)
H0, W0 = 4, 4    # cam_high latent size; each wrist is 2 x 2, so the T shape is 6 x 4
HW, WW = 2, 2
STRIDE = 4       # frame_ids step: N = 4 * stride = 16 = robotwin's action_per_frame
D_RAW = 16       # robotwin's raw action: 2 x (xyz, quat xyzw, gripper)
USED = list(range(0, 7)) + [28] + list(range(7, 14)) + [29]
Q01 = [-0.06172713458538055, -3.6716461181640625e-05, -0.08783501386642456, -1, -1, -1, -1,
       -0.3547105032205582, -1.3113021850585938e-06, -0.11975435614585876, -1, -1, -1, -1] + [0.] * 16
Q99 = [0.3462600058317184, 0.39966784834861746, 0.14745532035827624, 1, 1, 1, 1,
       0.034201726913452024, 0.39142737388610793, 0.1792279863357542, 1, 1, 1, 1] + [0.] * 14 + [1.0, 1.0]


def profile_yaml(text_len):
    return (
        "# Test profile: upstream's robotwin settings with a short text.\n"
        "env_type: robotwin_tshape\n"
        f"obs_cam_keys: [{', '.join(CAMS)}]\n"
        f"used_action_channel_ids: {USED}\n"
        "action_dim: 30\n"
        "action_per_frame: 16\n"
        "relative_pose_columns: [0, 8]\n"
        f"text_len: {text_len}\n"
        f"norm_stat:\n  q01: {Q01}\n  q99: {Q99}\n")


def random_actions(rng, rows):
    a = np.zeros((rows, D_RAW), np.float32)
    for s in (0, 8):
        a[:, s:s + 3] = np.cumsum(rng.normal(0, 0.01, (rows, 3)), 0) + rng.uniform(-0.05, 0.3, 3)
        rot = R.from_rotvec(np.cumsum(rng.normal(0, 0.05, (rows, 3)), 0)).as_quat()
        a[:, s + 3:s + 7] = rot
        a[:, s + 7] = rng.uniform(0, 1, rows)
    return a


def text_emb(gen, text_len, text_dim, tokens):
    t = torch.zeros(text_len, text_dim)
    t[:tokens] = torch.randn(tokens, text_dim, generator=gen)
    return t.to(torch.bfloat16)


# --- upstream's per-sample transform, transcribed ----------------------------------------------
def cat_video_latents(cams):
    lat = [d["latent"].reshape(d["latent_num_frames"], d["latent_height"], d["latent_width"], -1)
           for d in cams]
    wrists = torch.cat(lat[1:], dim=2)           # robotwin_tshape: wrists side by side along w
    video = torch.cat([wrists, lat[0]], dim=1)  # ... on top of cam_high along h
    return video.permute(3, 0, 1, 2)            # f h w c -> c f h w


def action_post_process(start, end, frame_ids, actions):
    actions = torch.from_numpy(actions[start:end].astype(np.float64))
    shift = frame_ids[0] - start
    actions = actions[shift:]
    stride = frame_ids[1] - frame_ids[0]
    a = actions.numpy().copy()
    for s in (0, 8):  # relative to the segment's first row
        a[:, s:s + 3] = a[:, s:s + 3] - a[0, s:s + 3]
        a[:, s + 3:s + 7] = (R.from_quat(a[0, s + 3:s + 7]).inv() * R.from_quat(a[:, s + 3:s + 7])).as_quat()
    actions = torch.from_numpy(a)
    actions = torch.cat([torch.zeros(4 * stride, actions.shape[1], dtype=actions.dtype), actions])
    F = (len(frame_ids) - 1) // 4 + 1
    actions = actions[:F * 4 * stride]
    assert actions.shape[0] == F * 4 * stride
    mask = torch.ones_like(actions)
    actions = torch.cat([actions, torch.zeros(actions.shape[0], 1, dtype=actions.dtype)], 1)
    mask = torch.cat([mask, torch.zeros(mask.shape[0], 1, dtype=mask.dtype)], 1)
    inverse = [len(USED)] * 30
    for i, j in enumerate(USED):
        inverse[j] = i
    actions, mask = actions[:, inverse], mask[:, inverse]
    q01, q99 = torch.tensor(Q01, dtype=torch.float64), torch.tensor(Q99, dtype=torch.float64)
    actions = ((actions - q01) / (q99 - q01 + 1e-6) * 2 - 1).clamp(-1.5, 1.5)
    N = 4 * stride
    actions = actions.reshape(F, N, 30).permute(2, 0, 1)  # (f n) c -> c f n
    mask = mask.reshape(F, N, 30).permute(2, 0, 1)
    return (actions * mask).float(), mask.float()


def write_dataset(root, episodes, text_len, text_dim, gen, rng, codecs):
    """episodes: list of (length, [segment dicts]) with segment: start, end, shift, n, prompt,
    ids_as ('list'|'tensor'), missing (camera index or None)."""
    os.makedirs(f"{root}/meta", exist_ok=True)
    os.makedirs(f"{root}/data/chunk-000", exist_ok=True)
    info = {"codebase_version": "v2.1", "robot_type": "tiny", "total_episodes": len(episodes),
            "total_frames": sum(e[0] for e in episodes), "total_tasks": 1, "total_videos": 3 * len(episodes),
            "total_chunks": 1, "chunks_size": 1000, "fps": 20, "splits": {"train": f"0:{len(episodes)}"},
            "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
            "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
            "features": {"action": {"dtype": "float32", "shape": [D_RAW], "names": None},
                         "frame_index": {"dtype": "int64", "shape": [1], "names": None},
                         "timestamp": {"dtype": "float32", "shape": [1], "names": None},
                         **{c: {"dtype": "video", "shape": [64, 64, 3], "names": ["height", "width", "channel"]}
                            for c in CAMS}}}
    json.dump(info, open(f"{root}/meta/info.json", "w"), indent=4)
    open(f"{root}/meta/tasks.jsonl", "w").write('{"task_index": 0, "task": "tiny"}\n')
    prompts = {}
    samples = []
    with open(f"{root}/meta/episodes.jsonl", "w") as ej, open(f"{root}/meta/episodes_stats.jsonl", "w") as es:
        for ep, (length, segs) in enumerate(episodes):
            actions = random_actions(rng, length)
            frame_index = np.arange(length, dtype=np.int64)
            timestamp = (frame_index / 20.0).astype(np.float32)
            codec, page, dictionary, packed = codecs[ep % len(codecs)]
            write_parquet(f"{root}/data/chunk-000/episode_{ep:06d}.parquet",
                          [("action", actions), ("frame_index", frame_index), ("timestamp", timestamp)],
                          codec=codec, page=page, dictionary=dictionary, bit_packed=packed)
            stats = {}
            for name, arr in (("action", actions), ("frame_index", frame_index[:, None]),
                              ("timestamp", timestamp[:, None])):
                # numpy on the stored dtype, as LeRobot's compute_episode_stats does
                stats[name] = {"min": arr.min(0).tolist(), "max": arr.max(0).tolist(),
                               "mean": arr.mean(0).tolist(), "std": arr.std(0).tolist(), "count": [length]}
            es.write(json.dumps({"episode_index": ep, "stats": stats}) + "\n")
            ej.write(json.dumps({"episode_index": ep, "tasks": ["tiny"], "length": length,
                                 "action_config": [{"start_frame": s["start"], "end_frame": s["end"],
                                                    "action_text": s["prompt"]} for s in segs]}) + "\n")
            for c in CAMS:
                os.makedirs(f"{root}/videos/chunk-000/{c}", exist_ok=True)
                open(f"{root}/videos/chunk-000/{c}/episode_{ep:06d}.mp4", "wb").close()
            for s in segs:
                if s["prompt"] not in prompts:
                    prompts[s["prompt"]] = text_emb(gen, text_len, text_dim, 3 + len(prompts))
                first = s["start"] + s["shift"]
                frame_ids = list(range(first, first + STRIDE * s["n"], STRIDE))
                F = (len(frame_ids) - 1) // 4 + 1
                cams = []
                for k, cam in enumerate(CAMS):
                    h, w = (H0, W0) if k == 0 else (HW, WW)
                    d = {"latent": torch.randn(F * h * w, C, generator=gen).to(torch.bfloat16),
                         "latent_num_frames": F, "latent_height": h, "latent_width": w,
                         "video_num_frames": len(frame_ids), "video_height": 64, "video_width": 64,
                         "text_emb": prompts[s["prompt"]], "text": s["prompt"],
                         "frame_ids": frame_ids if s["ids_as"] == "list" else torch.tensor(frame_ids),
                         "start_frame": s["start"], "end_frame": s["end"], "fps": 20, "ori_fps": 20}
                    cams.append(d)
                    if s.get("missing") == k:
                        continue
                    d_dir = f"{root}/latents/chunk-000/{cam}"
                    os.makedirs(d_dir, exist_ok=True)
                    torch.save(d, f"{d_dir}/episode_{ep:06d}_{s['start']}_{s['end']}.pth")
                samples.append((ep, s, cams, actions, frame_ids))
    return samples


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--segments", type=int, default=0)
    ap.add_argument("--text-len", type=int, default=8)
    ap.add_argument("--text-dim", type=int, default=16)
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(7)
    rng = np.random.default_rng(7)
    os.makedirs(f"{a.out}/src", exist_ok=True)
    open(f"{a.out}/profile.yaml", "w").write(profile_yaml(a.text_len))
    torch.save(text_emb(gen, a.text_len, a.text_dim, 0), f"{a.out}/src/empty_emb.pt")
    if a.segments:
        eps = [(45, [dict(start=0, end=45, shift=1, n=9, prompt=f"task {e % 2}", ids_as="list")])
               for e in range(a.segments)]
        write_dataset(f"{a.out}/src/bench", eps, a.text_len, a.text_dim, gen, rng,
                      [("SNAPPY", "v1", True, False)])
        return
    episodes = [
        # ep 0: two segments, frame_ids as a list and as a tensor, a shift of 1 and of 2
        (100, [dict(start=0, end=45, shift=1, n=9, prompt="pick the cup", ids_as="list"),
               dict(start=45, end=100, shift=2, n=11, prompt="place the cup", ids_as="tensor")]),
        # ep 1: the first prompt again (its text is stored once), F = 2
        (60, [dict(start=0, end=60, shift=0, n=5, prompt="pick the cup", ids_as="tensor")]),
        # ep 2: the right wrist's latent file is missing: skipped and counted
        (50, [dict(start=0, end=50, shift=0, n=9, prompt="lift", ids_as="list", missing=2)]),
    ]
    codecs = [("SNAPPY", "v1", True, False), ("ZSTD", "v2", False, True), ("UNCOMPRESSED", "v1", False, True)]
    samples = write_dataset(f"{a.out}/src/tiny_robotwin", episodes, a.text_len, a.text_dim, gen, rng, codecs)
    os.makedirs(f"{a.out}/expected", exist_ok=True)
    index = {"imported": [], "skipped": [], "distinct_texts": 2}
    for ep, s, cams, actions, frame_ids in samples:
        sid = f"src/tiny_robotwin/{ep}_{s['start']}_{s['end']}"
        if s.get("missing") is not None:
            index["skipped"].append({"id": sid, "check": "missing_camera"})
            continue
        acts, mask = action_post_process(s["start"], s["end"], frame_ids, actions)
        torch.save({"latents": cat_video_latents(cams).contiguous(), "actions": acts, "actions_mask": mask,
                    "text": cams[0]["text_emb"], "n_video": len(frame_ids)},
                   f"{a.out}/expected/{sid.replace('/', '__')}.pt")
        index["imported"].append(sid)
    json.dump(index, open(f"{a.out}/expected/index.json", "w"), indent=1)


if __name__ == "__main__":
    main()
