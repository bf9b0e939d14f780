"""Writes the hostile latent files of hostile_test.sh.

  hostile_pth.py set FILE KEY EXPR     torch.load FILE, d[KEY] = eval(EXPR) (d, torch, math in
                                       scope), torch.save it back
  hostile_pth.py pickle FILE HEX       a zip laid out as torch.save's, holding the pickle HEX
  hostile_pth.py nest FILE N           ... holding N nested lists
  hostile_pth.py overrun FILE ROWS     FILE's dict with its latent claiming ROWS rows over its
                                       own, smaller storage (what torch.save never writes)
  hostile_pth.py shrink FILE           FILE's tensor (empty_emb.pt) over a storage of half its
                                       elements
"""
import collections
import math
import pickle
import sys
import zipfile

torch = None  # imported by the commands that need it (it takes seconds)


def write_zip(path, pkl, storages=()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        for key, data in storages:
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")


class Storage:
    def __init__(self, key, numel, cls):
        self.key, self.numel, self.cls = key, numel, cls


class Tensor:
    """Pickles as torch.save writes a tensor, with sizes of our choosing."""
    def __init__(self, storage, sizes, strides):
        self.storage, self.sizes, self.strides = storage, sizes, strides

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, 0, self.sizes, self.strides, False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.cls, obj.key, "cpu", obj.numel)
        return None


def main():
    global torch
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd not in ("pickle", "nest"):
        import torch
    if cmd == "set":
        d = torch.load(path)
        d[sys.argv[3]] = eval(sys.argv[4], {"d": d, "torch": torch, "math": math})
        torch.save(d, path)
    elif cmd == "pickle":
        write_zip(path, bytes.fromhex(sys.argv[3]))
    elif cmd == "nest":
        n = int(sys.argv[3])
        write_zip(path, b"\x80\x02" + b"]" * n + b"a" * (n - 1) + b".")
    elif cmd == "overrun":
        d = torch.load(path)
        lat = d["latent"].contiguous()
        data = lat.view(torch.int16).numpy().tobytes()
        storages = [("0", data)]
        out = {}
        for k, v in d.items():
            if k == "latent":
                out[k] = Tensor(Storage("0", lat.numel(), torch.BFloat16Storage),
                                (int(sys.argv[3]), lat.shape[1]), (lat.shape[1], 1))
            elif isinstance(v, torch.Tensor):
                key = str(len(storages))
                t = v.contiguous()
                cls = {torch.bfloat16: torch.BFloat16Storage, torch.int64: torch.LongStorage,
                       torch.float32: torch.FloatStorage}[t.dtype]
                raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
                storages.append((key, raw))
                out[k] = Tensor(Storage(key, t.numel(), cls), tuple(t.shape),
                                tuple(t.stride()))
            else:
                out[k] = v
        buf = __import__("io").BytesIO()
        Pickler(buf, protocol=2).dump(out)
        write_zip(path, buf.getvalue(), storages)
    elif cmd == "shrink":
        t = torch.load(path).contiguous()
        half = t.view(torch.int16).flatten()[: t.numel() // 2].numpy().tobytes()
        buf = __import__("io").BytesIO()
        Pickler(buf, protocol=2).dump(
            Tensor(Storage("0", t.numel() // 2, torch.BFloat16Storage), tuple(t.shape), tuple(t.stride())))
        write_zip(path, buf.getvalue(), [("0", half)])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
