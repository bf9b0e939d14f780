"""Compares a baton dataset written by `baton-train import-lerobot` with the samples upstream's
transform gives (make_upstream_dataset.py's OUT/expected): latents and text bit-exact, actions
within 1e-6, masks exact, n_video and the index as expected, each distinct text stored once.

  /usr/bin/python3 check_import.py EXPECTED_DIR DATASET_DIR REPORT_JSON
"""
import json
import os
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def read_safetensors(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[t["dtype"]]).reshape(t["shape"]) if raw else \
            torch.zeros(t["shape"], dtype=DTYPES[t["dtype"]])
    return out


def main():
    expected_dir, dataset, report_path = sys.argv[1:4]
    index = json.load(open(f"{expected_dir}/index.json"))
    report = json.load(open(report_path))
    errors = []
    lines = [json.loads(l) for l in open(f"{dataset}/meta/episodes.jsonl") if l.strip()]
    ids = [l["id"] for l in lines]
    if ids != index["imported"]:
        errors.append(f"index ids {ids} != expected {index['imported']}")
    skipped = [{"id": s["id"], "check": s["check"]} for s in report["skips"]]
    if skipped != index["skipped"]:
        errors.append(f"skips {skipped} != expected {index['skipped']}")
    texts = {l["text"] for l in lines}
    if len(texts) != index["distinct_texts"] or len(os.listdir(f"{dataset}/texts")) != len(texts):
        errors.append(f"distinct texts {texts}, expected {index['distinct_texts']}")
    info = json.load(open(f"{dataset}/meta/info.json"))
    if info.get("version") != 2:
        errors.append(f"info.json version {info.get('version')}, expected 2")
    for line in lines:
        want = torch.load(f"{expected_dir}/{line['id'].replace('/', '__')}.pt")
        got = read_safetensors(f"{dataset}/{line['file']}")
        text = read_safetensors(f"{dataset}/{line['text']}")["text"]
        where = line["id"]
        if line["n_video"] != want["n_video"]:
            errors.append(f"{where}: n_video {line['n_video']} != {want['n_video']}")
        if got["latents"].dtype != torch.bfloat16 or got["latents"].shape != want["latents"].shape or \
                not torch.equal(got["latents"].view(torch.int16), want["latents"].view(torch.int16)):
            errors.append(f"{where}: latents differ ({tuple(got['latents'].shape)} vs {tuple(want['latents'].shape)})")
        if not torch.equal(text.view(torch.int16), want["text"].view(torch.int16)):
            errors.append(f"{where}: text differs")
        if got["actions"].shape != want["actions"].shape:
            errors.append(f"{where}: actions {tuple(got['actions'].shape)} vs {tuple(want['actions'].shape)}")
            continue
        d = (got["actions"].double() - want["actions"].double()).abs().max().item()
        if d > 1e-6:
            errors.append(f"{where}: actions differ by up to {d:.3g} (> 1e-6)")
        if not torch.equal(got["actions_mask"], want["actions_mask"]):
            errors.append(f"{where}: actions_mask differs")
        print(f"{where}: latents {tuple(got['latents'].shape)} exact, actions max |diff| {d:.2e}")
    empty = read_safetensors(f"{dataset}/meta/empty_text.safetensors")
    if list(empty) != ["text"]:
        errors.append(f"meta/empty_text.safetensors holds {list(empty)}, expected one tensor 'text'")
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print(f"import matches upstream's transform: {len(lines)} episodes")


if __name__ == "__main__":
    main()
