#!/usr/bin/env python3
"""Overwrites one element of an F32 tensor in a safetensors file, in place.

usage: set_tensor_value.py FILE TENSOR INDEX VALUE   (VALUE: a float, nan, inf or -inf)

The tests use it to plant a NaN or Inf in an episode without any other change to the file (same
size, same header), so exactly the value check has something to find.
"""
import json
import struct
import sys


def main():
    path, name, index, value = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        if header.get(name, {}).get("dtype") != "F32":
            sys.exit(f"{path}: no F32 tensor '{name}'")
        start, end = header[name]["data_offsets"]
        if not 0 <= index < (end - start) // 4:
            sys.exit(f"{path}: index {index} outside tensor '{name}'")
        f.seek(8 + n + start + 4 * index)
        f.write(struct.pack("<f", value))


if __name__ == "__main__":
    main()
