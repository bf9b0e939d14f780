"""A minimal parquet writer for the import tests: LIST<FLOAT> and INT64/FLOAT scalar columns,
data page v1 (dictionary or PLAIN) or v2 (PLAIN), UNCOMPRESSED / SNAPPY / ZSTD (the system's
libsnappy and libzstd through ctypes). Written from the parquet format spec so the tests do not
need pyarrow; the real pyarrow-written files in tests/data/lerobot_g1_v21 check the reader
against an independent writer."""
import ctypes
import ctypes.util
import struct

import numpy as np

FLOAT, INT64 = 4, 2
CODECS = {"UNCOMPRESSED": 0, "SNAPPY": 1, "GZIP": 2, "ZSTD": 6}


def _compress(codec, data):
    if codec == "UNCOMPRESSED":
        return data
    if codec == "GZIP":
        import gzip
        return gzip.compress(data)
    if codec == "SNAPPY":
        lib = ctypes.CDLL(ctypes.util.find_library("snappy") or "libsnappy.so.1")
        lib.snappy_max_compressed_length.restype = ctypes.c_size_t
        cap = lib.snappy_max_compressed_length(ctypes.c_size_t(len(data)))
        out = ctypes.create_string_buffer(cap)
        n = ctypes.c_size_t(cap)
        assert lib.snappy_compress(data, ctypes.c_size_t(len(data)), out, ctypes.byref(n)) == 0
        return out.raw[: n.value]
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compress.restype = ctypes.c_size_t
    cap = lib.ZSTD_compressBound(ctypes.c_size_t(len(data)))
    out = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(out, ctypes.c_size_t(cap), data, ctypes.c_size_t(len(data)), 3)
    return out.raw[:n]


# --- Thrift compact protocol -------------------------------------------------------------------
def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zz(v):
    return _varint((v << 1) ^ (v >> 63))


class I32(int):
    pass


class I64(int):
    pass


class Struct(dict):
    """field id -> value; values are I32, I64, bool, bytes/str, list, Struct."""


def _type(v):
    if isinstance(v, bool):
        return 1 if v else 2
    if isinstance(v, I64):
        return 6
    if isinstance(v, (I32, int)):
        return 5
    if isinstance(v, (bytes, str)):
        return 8
    if isinstance(v, list):
        return 9
    return 12


def _value(v):
    t = _type(v)
    if t in (1, 2):
        return b""
    if t in (5, 6):
        return _zz(int(v))
    if t == 8:
        b = v.encode() if isinstance(v, str) else v
        return _varint(len(b)) + b
    if t == 9:
        et = _type(v[0]) if v else 5
        head = bytes([(len(v) << 4) | et]) if len(v) < 15 else bytes([0xF0 | et]) + _varint(len(v))
        return head + b"".join(_value(x) for x in v)
    return _struct(v)


def _struct(s):
    out = bytearray()
    last = 0
    for fid in sorted(s):
        v = s[fid]
        t = _type(v)
        d = fid - last
        out += bytes([(d << 4) | t]) if 0 < d <= 15 else bytes([t]) + _zz(fid)
        out += _value(v)
        last = fid
    out.append(0)
    return bytes(out)


# --- RLE / bit-packed hybrid -------------------------------------------------------------------
def _rle_runs(values, bit_width):
    out = bytearray()
    i = 0
    nbytes = (bit_width + 7) // 8
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        out += _varint((j - i) << 1) + int(values[i]).to_bytes(nbytes, "little")
        i = j
    return bytes(out)


def _bit_packed(values, bit_width):
    vals = list(values) + [0] * (-len(values) % 8)
    bits = 0
    nbits = 0
    out = bytearray(_varint(((len(vals) // 8) << 1) | 1))
    for v in vals:
        bits |= int(v) << nbits
        nbits += bit_width
        while nbits >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            nbits -= 8
    assert nbits == 0
    return bytes(out)


def _bw(m):
    return int(m).bit_length()


def write_parquet(path, columns, codec="SNAPPY", page="v1", dictionary=True, bit_packed=False):
    """columns: list of (name, np.ndarray [rows] int64/float32 or [rows, D] float32)."""
    rows = len(columns[0][1])
    body = bytearray(b"PAR1")
    schema = [Struct({4: "schema", 5: I32(len(columns))})]
    chunks = []
    enc_levels = _bit_packed if bit_packed else _rle_runs
    for name, arr in columns:
        is_list = arr.ndim == 2
        ptype = FLOAT if arr.dtype == np.float32 else INT64
        if is_list:
            schema += [Struct({3: I32(1), 4: name, 5: I32(1), 6: I32(3)}),
                       Struct({3: I32(2), 4: "list", 5: I32(1)}),
                       Struct({1: I32(ptype), 3: I32(1), 4: "element"})]
            max_def, max_rep = 3, 1
            flat = arr.reshape(-1)
            reps = [0 if k % arr.shape[1] == 0 else 1 for k in range(flat.size)]
            path_in_schema = [name, "list", "element"]
        else:
            schema += [Struct({1: I32(ptype), 3: I32(1), 4: name})]
            max_def, max_rep = 1, 0
            flat = arr
            reps = []
            path_in_schema = [name]
        n = flat.size
        defs = [max_def] * n
        fmt = "<f" if ptype == FLOAT else "<q"
        start = len(body)
        dict_offset = None
        use_dict = dictionary and page == "v1"
        if use_dict:
            uniq, idx = np.unique(flat, return_inverse=True)
            plain = b"".join(struct.pack(fmt, x) for x in uniq.tolist())
            comp = _compress(codec, plain)
            hdr = _struct(Struct({1: I32(2), 2: I32(len(plain)), 3: I32(len(comp)),
                                  7: Struct({1: I32(len(uniq)), 2: I32(0)})}))
            dict_offset = len(body)
            body += hdr + comp
            bw = max(1, _bw(len(uniq) - 1))
            values = bytes([bw]) + _bit_packed(idx.tolist(), bw)
            encoding = 8
        else:
            values = b"".join(struct.pack(fmt, x) for x in flat.tolist())
            encoding = 0
        data_offset = len(body)
        rep_b = enc_levels(reps, _bw(max_rep)) if max_rep else b""
        def_b = enc_levels(defs, _bw(max_def))
        if page == "v1":
            levels = (struct.pack("<I", len(rep_b)) + rep_b if max_rep else b"") + \
                struct.pack("<I", len(def_b)) + def_b
            raw = levels + values
            comp = _compress(codec, raw)
            hdr = _struct(Struct({1: I32(0), 2: I32(len(raw)), 3: I32(len(comp)),
                                  5: Struct({1: I32(n), 2: I32(encoding), 3: I32(3), 4: I32(3)})}))
        else:
            comp_vals = _compress(codec, values)
            comp = rep_b + def_b + comp_vals
            raw_len = len(rep_b) + len(def_b) + len(values)
            hdr = _struct(Struct({1: I32(3), 2: I32(raw_len), 3: I32(len(comp)),
                                  8: Struct({1: I32(n), 2: I32(0), 3: I32(rows), 4: I32(encoding),
                                             5: I32(len(def_b)), 6: I32(len(rep_b)),
                                             7: codec != "UNCOMPRESSED"})}))
        body += hdr + comp
        meta = Struct({1: I32(ptype), 2: [I32(0), I32(3)] + ([I32(8)] if use_dict else []),
                       3: path_in_schema, 4: I32(CODECS[codec]), 5: I64(n),
                       6: I64(len(body) - start), 7: I64(len(body) - start), 9: I64(data_offset)})
        if dict_offset is not None:
            meta[11] = I64(dict_offset)
        chunks.append(Struct({2: I64(start), 3: meta}))
    fmd = Struct({1: I32(1), 2: schema, 3: I64(rows),
                  4: [Struct({1: chunks, 2: I64(len(body)), 3: I64(rows)})],
                  6: "baton tests parquet_writer"})
    footer = _struct(fmd)
    body += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(body)
