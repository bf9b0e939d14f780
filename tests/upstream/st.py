"""Hand-written safetensors reader/writer (no safetensors package needed): an 8-byte
little-endian header length, a JSON header, then raw little-endian tensor bytes."""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.bfloat16: "BF16",
          torch.float16: "F16", torch.int64: "I64", torch.int32: "I32"}
TORCH = {v: k for k, v in DTYPES.items()}


def tensor_bytes(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write(path, tensors, metadata=None):
    """tensors: list of (name, tensor) in file order, or a dict."""
    items = list(tensors.items()) if isinstance(tensors, dict) else list(tensors)
    header, blobs, offset = {}, [], 0
    for name, t in items:
        b = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read(path):
    """{name: tensor} in the stored dtype, plus the header's __metadata__."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + e])
        dt = TORCH[info["dtype"]]
        if dt in (torch.bfloat16, torch.float16):
            t = torch.frombuffer(raw, dtype=torch.int16).view(dt) if raw else torch.empty(0, dtype=dt)
        else:
            t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        out[name] = t.reshape(info["shape"]).clone()
    return out, meta
