"""Regenerates the codec fixtures that test_compress.c decompresses.

Every compressed file is produced by pyarrow's own codecs (an independent
implementation of each format), except the Hadoop-framed LZ4 buffers, which
pyarrow no longer writes: those wrap pyarrow's raw LZ4 blocks in the Hadoop
framing by hand. Run from the repository root:

    .venv/bin/python lake/tests/data/codec/generate.py
"""
import gzip
import os
import struct
import zlib

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))


def payload():
    # Compressible text followed by incompressible bytes, so every codec
    # exercises both literal and match paths.
    rng = np.random.default_rng(20240601)
    words = [b"tier", b"lake", b"parquet", b"iceberg", b"postgres", b"page", b"row"]
    text = b" ".join(words[i] for i in rng.integers(0, len(words), 3000))
    noise = rng.integers(0, 256, 4000, dtype=np.uint8).tobytes()
    return text + noise


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def hadoop_lz4(data, frame):
    out = b""
    for start in range(0, len(data), frame):
        piece = data[start:start + frame]
        block = pa.compress(piece, codec="lz4_raw", asbytes=True)
        out += struct.pack(">II", len(piece), len(block)) + block
    return out


def main():
    data = payload()
    write("input.bin", data)
    for codec in ("snappy", "gzip", "brotli", "zstd", "lz4_raw"):
        write("input." + codec, pa.compress(data, codec=codec, asbytes=True))
    # GZIP pages may come with zlib framing or as several gzip members.
    write("input.zlib", zlib.compress(data, 6))
    half = len(data) // 2
    write("input.gzip_members", gzip.compress(data[:half]) + gzip.compress(data[half:]))
    write("input.lz4_hadoop", hadoop_lz4(data, 8192))
    write("empty.zstd", pa.compress(b"", codec="zstd", asbytes=True))
    write("empty.snappy", pa.compress(b"", codec="snappy", asbytes=True))


if __name__ == "__main__":
    main()
