"""A small GGUF reader and dequantizer in numpy, written from FORMATS.md §1-2 (not from jllm's
C++ code), so that the oracle can load the exact weights of a GGUF file into transformers.

    f = GgufFile("model.gguf")
    f.metadata["qwen3.block_count"]          # -> 28
    w = f.dequantize("blk.0.attn_q.weight")  # float32, PyTorch order (ne reversed): (out, in)

Supported tensor types: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K. The f32 arithmetic keeps ggml's
grouping ((d*sc)*q - dmin*m), so values equal ggml's dequantize_row_* bit for bit.
"""

import struct
import sys

import numpy as np

# GGUF metadata value types (FORMATS.md §1): id -> (struct format, size); 8 STRING, 9 ARRAY.
_SCALAR = {0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
           6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8)}
_NUMPY_ARRAY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
                10: "<u8", 11: "<i8", 12: "<f8"}

# ggml type id -> (name, elements per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144),
              13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2)}
GGML_TYPE_IDS = {v[0]: k for k, v in GGML_TYPES.items()}


class GgufError(Exception):
    pass


class TensorInfo:
    def __init__(self, name, ne, type_id, offset):
        self.name = name
        self.ne = ne            # ne[0] is the contiguous row
        self.type_id = type_id
        self.offset = offset    # relative to the data blob
        if type_id not in GGML_TYPES:
            raise GgufError(f"tensor '{name}': ggml type {type_id} is not supported here")
        self.type_name, block, block_bytes = GGML_TYPES[type_id]
        if ne[0] % block != 0:
            raise GgufError(f"tensor '{name}': ne[0] = {ne[0]} is not a multiple of {block}")
        rows = 1
        for d in ne[1:]:
            rows *= d
        self.n_elements = ne[0] * rows
        self.nbytes = ne[0] // block * block_bytes * rows

    @property
    def torch_shape(self):
        return tuple(reversed(self.ne))


class GgufFile:
    def __init__(self, path):
        self.path = path
        self.data = np.memmap(path, dtype=np.uint8, mode="r")
        self.pos = 0
        self.metadata = {}
        self.tensors = {}       # name -> TensorInfo, in file order
        self._parse()

    # --- the byte cursor: every read checks the bytes left
    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise GgufError(f"{self.path}: need {n} bytes at offset {self.pos}, file has {len(self.data)}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def _unpack(self, fmt, size):
        return struct.unpack(fmt, self._take(size).tobytes())[0]

    def _string(self):
        n = self._unpack("<Q", 8)
        return self._take(n).tobytes().decode("utf-8", errors="replace")

    def _value(self, vtype):
        if vtype in _SCALAR:
            return self._unpack(*_SCALAR[vtype])
        if vtype == 8:
            return self._string()
        if vtype == 9:
            etype = self._unpack("<I", 4)
            count = self._unpack("<Q", 8)
            if etype == 8:
                return [self._string() for _ in range(count)]
            if etype not in _NUMPY_ARRAY:
                raise GgufError(f"{self.path}: array of value type {etype} is not supported")
            dt = np.dtype(_NUMPY_ARRAY[etype])
            return np.frombuffer(self._take(count * dt.itemsize).tobytes(), dtype=dt)
        raise GgufError(f"{self.path}: unknown value type {vtype} at offset {self.pos}")

    def _parse(self):
        if self._take(4).tobytes() != b"GGUF":
            raise GgufError(f"{self.path}: not a GGUF file")
        version = self._unpack("<I", 4)
        if version not in (2, 3):
            raise GgufError(f"{self.path}: GGUF version {version} is not supported")
        n_tensors = self._unpack("<q", 8)
        n_kv = self._unpack("<q", 8)
        for _ in range(n_kv):
            key = self._string()
            self.metadata[key] = self._value(self._unpack("<I", 4))
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._unpack("<I", 4)
            if n_dims > 4:
                raise GgufError(f"{self.path}: tensor '{name}' has {n_dims} dims")
            ne = [self._unpack("<q", 8) for _ in range(n_dims)]
            type_id = self._unpack("<I", 4)
            offset = self._unpack("<Q", 8)
            self.tensors[name] = TensorInfo(name, ne, type_id, offset)
        align = int(self.metadata.get("general.alignment", 32))
        self.data_offset = (self.pos + align - 1) // align * align
        for t in self.tensors.values():
            if self.data_offset + t.offset + t.nbytes > len(self.data):
                raise GgufError(f"{self.path}: tensor '{t.name}' runs past the end of the file")

    def raw(self, name):
        t = self.tensors[name]
        start = self.data_offset + t.offset
        return self.data[start:start + t.nbytes]

    def dequantize(self, name):
        """The tensor as float32, in PyTorch order (ne reversed)."""
        t = self.tensors[name]
        flat = dequantize_bytes(t.type_name, np.asarray(self.raw(name)), t.n_elements)
        return flat.reshape(t.torch_shape)


def _f16(block_bytes):
    return np.ascontiguousarray(block_bytes).view("<f2").astype(np.float32)


def _scale_min_k4(scales):
    """(nblocks, 12) packed 6-bit scales/mins -> two (nblocks, 8) uint8 arrays (FORMATS.md §2)."""
    s = scales.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    m = np.empty((s.shape[0], 8), np.uint8)
    sc[:, :4] = s[:, 0:4] & 63
    m[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _k4_values(nibbles, d, dmin, scales):
    """nibbles: (nblocks, 256) q values in element order; x = (d*sc)*q - dmin*m per sub-block."""
    sc, m = _scale_min_k4(scales)
    d1 = (d[:, None] * sc.astype(np.float32)).astype(np.float32)       # (nb, 8)
    m1 = (dmin[:, None] * m.astype(np.float32)).astype(np.float32)
    q = nibbles.reshape(-1, 8, 32).astype(np.float32)
    return (d1[:, :, None] * q - m1[:, :, None]).astype(np.float32).reshape(-1)


def dequantize_bytes(type_name, raw, n):
    raw = np.asarray(raw, dtype=np.uint8)
    if type_name == "F32":
        return raw.view("<f4").astype(np.float32)
    if type_name == "F16":
        return raw.view("<f2").astype(np.float32)
    if type_name == "BF16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    if type_name == "Q8_0":
        b = raw.reshape(-1, 34)
        d = _f16(b[:, 0:2]).reshape(-1, 1)
        q = b[:, 2:34].view(np.int8).astype(np.float32)
        return (q * d).astype(np.float32).reshape(-1)
    if type_name == "Q4_K":
        b = raw.reshape(-1, 144)
        d, dmin = _f16(b[:, 0:2]).reshape(-1), _f16(b[:, 2:4]).reshape(-1)
        qs = b[:, 16:144].reshape(-1, 4, 32)
        # element 64c+l: low nibble of qs[32c+l]; element 64c+32+l: its high nibble
        nib = np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 256)
        return _k4_values(nib, d, dmin, b[:, 4:16])
    if type_name == "Q5_K":
        b = raw.reshape(-1, 176)
        d, dmin = _f16(b[:, 0:2]).reshape(-1), _f16(b[:, 2:4]).reshape(-1)
        qh = b[:, 16:48]                                   # (nb, 32)
        qs = b[:, 48:176].reshape(-1, 4, 32)
        c = np.arange(4, dtype=np.uint8).reshape(1, 4, 1)
        lo = (qs & 15) + 16 * ((qh[:, None, :] >> (2 * c)) & 1)
        hi = (qs >> 4) + 16 * ((qh[:, None, :] >> (2 * c + 1)) & 1)
        nib = np.stack([lo, hi], axis=2).reshape(-1, 256)
        return _k4_values(nib, d, dmin, b[:, 4:16])
    if type_name == "Q6_K":
        b = raw.reshape(-1, 210)
        ql = b[:, 0:128].reshape(-1, 2, 64)
        qh = b[:, 128:192].reshape(-1, 2, 32)
        scales = b[:, 192:208].view(np.int8).astype(np.float32)      # (nb, 16)
        d = _f16(b[:, 208:210]).reshape(-1, 1)
        lo, hi = ql[:, :, :32], ql[:, :, 32:]
        q = np.stack([
            (lo & 15) | ((qh & 3) << 4),
            (hi & 15) | (((qh >> 2) & 3) << 4),
            (lo >> 4) | (((qh >> 4) & 3) << 4),
            (hi >> 4) | (((qh >> 6) & 3) << 4),
        ], axis=2).reshape(-1, 256).astype(np.float32) - 32.0        # element 128h + 32k + l
        dsc = (d * scales).astype(np.float32)                        # (nb, 16): x = (d*sc)*q
        return (np.repeat(dsc, 16, axis=1) * q).astype(np.float32).reshape(-1)
    raise GgufError(f"type {type_name} is not supported")


def main(argv):
    """gguf_reader.py FILE [TENSOR]: lists the tensors, or prints one tensor's first row."""
    f = GgufFile(argv[1])
    if len(argv) > 2:
        print(" ".join(repr(float(x)) for x in f.dequantize(argv[2]).reshape(-1, f.tensors[argv[2]].ne[0])[0]))
        return 0
    for t in f.tensors.values():
        print(f"{t.name:40s} {t.type_name:5s} {t.ne}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
