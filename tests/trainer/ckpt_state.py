"""Compares the logical state of two checkpoint folders: weights (transformer/ or the master
weights, each one file or per-rank shards with an index) and every parameter's exp_avg / exp_avg_sq / step, read from
optimizer.safetensors or from the per-rank files its index names.

usage: ckpt_state.py A B MAX_ABS   (MAX_ABS 0 = bit for bit); exit 1 naming the first difference."""
import json
import os
import struct
import sys

import numpy as np

DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BF16": np.uint16}


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DT[h["dtype"]]).reshape(h["shape"])
    return out


def weight_files(folder):
    """The master weights when present, else transformer/: one file or an index's shards."""
    for base in ("master_weights.safetensors", "transformer/diffusion_pytorch_model.safetensors"):
        single = os.path.join(folder, base)
        index = single + ".index.json"
        if os.path.exists(index):
            parent = os.path.dirname(single)
            return [os.path.join(parent, f) for f in sorted(set(json.load(open(index))["weight_map"].values()))]
        if os.path.exists(single):
            return [single]
    raise SystemExit(f"{folder}: no weights")


def state(folder):
    tensors = {}
    for w in weight_files(folder):
        for k, v in read(w).items():
            assert "weight." + k not in tensors, f"{k} appears twice in {folder}"
            tensors["weight." + k] = v
    index = os.path.join(folder, "optimizer.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["optimizer.safetensors"]
    for f in files:
        for k, v in read(os.path.join(folder, f)).items():
            assert k not in tensors, f"{k} appears twice in {folder}"
            tensors[k] = v
    return tensors


def main():
    a, b, tol = state(sys.argv[1]), state(sys.argv[2]), float(sys.argv[3])
    if sorted(a) != sorted(b):
        print("tensor names differ:", sorted(set(a) ^ set(b))[:5])
        return 1
    worst, where = 0.0, ""
    for k in sorted(a):
        if a[k].shape != b[k].shape:
            print(f"{k}: shape {a[k].shape} vs {b[k].shape}")
            return 1
        if tol == 0:
            if a[k].tobytes() != b[k].tobytes():
                print(f"{k}: not bit-identical")
                return 1
            continue
        d = float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)))) if a[k].size else 0.0
        if d > worst:
            worst, where = d, k
    if worst > tol:
        print(f"{where}: max abs difference {worst:.3e} > {tol:.0e}")
        return 1
    print(f"{len(a)} tensors agree (max abs difference {worst:.3e})")
    return 0


sys.exit(main())
