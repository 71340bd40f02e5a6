"""Spill files → shuffled TFRecord shards, the last stage of pretraining-data generation
(``components/datagen/datagen_beam.py``).

Serialized records never become Beam elements: the generating stage appends each, with its deterministic shuffle key,
to a spill file of its (split, shard) in the ``_SPILL_HEADER`` framing. The per-shard writer reads the keys and
offsets of its spill files (24 bytes a record), sorts them and copies the payloads in key order into the TFRecord
file: a global shuffle in bounded memory, with no per-record Beam cost. TFRecords are framed here (CRC-32C from
``google_crc32c``, GZIP via zlib) so workers need no TensorFlow.
"""
from __future__ import annotations

import posixpath
import struct
import zlib
from array import array
from collections import OrderedDict
from typing import Dict, Iterable, List, Tuple

import apache_beam as beam
import google_crc32c
import numpy as np
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


_SPILL_HEADER = struct.Struct("<QI")  # shuffle key, payload length


def _masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord_frame(payload: bytes) -> bytes:
    """One TFRecord: length (u64), masked CRC-32C of the length, data, masked CRC-32C of the data."""
    length = struct.pack("<Q", len(payload))
    return b"".join((length, struct.pack("<I", _masked_crc32c(length)), payload,
                     struct.pack("<I", _masked_crc32c(payload))))


class _WriteTFRecordShard(beam.DoFn):
    """One (split, shard): read the record index of its spill files (keys and offsets only, 24 bytes a record),
    sort by shuffle key (ties, which need a 64-bit hash collision, by payload) and write the payloads in that
    order as TFRecords. TensorFlow is not needed: framing is CRC-32C, GZIP is zlib with a fixed header."""

    _OPEN_FILES = 64

    def __init__(self, output_dirs: Dict[str, str], shards: Dict[str, int], compression: str,
                 compression_level: int = 6):
        self._output_dirs = dict(output_dirs)
        self._shards = dict(shards)
        self._compression = compression
        self._level = compression_level

    def process(self, element: Tuple[Tuple[str, int], Iterable[str]]):
        (split, shard), paths = element
        paths = sorted(set(paths))
        keys, files, offsets, lengths = array("Q"), array("I"), array("Q"), array("I")
        for fi, path in enumerate(paths):
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                pos = 0
                while True:
                    header = f.read(_SPILL_HEADER.size)
                    if not header:
                        break
                    key, length = _SPILL_HEADER.unpack(header)
                    pos += _SPILL_HEADER.size
                    keys.append(key)
                    files.append(fi)
                    offsets.append(pos)
                    lengths.append(length)
                    pos += length
                    f.seek(pos)
        keys_np = np.frombuffer(keys, dtype=np.uint64) if len(keys) else np.zeros(0, np.uint64)
        order = np.argsort(keys_np, kind="stable").tolist()
        handles: "OrderedDict[int, object]" = OrderedDict()

        def payload(r: int) -> bytes:
            fi = files[r]
            f = handles.pop(fi, None)
            if f is None:
                if len(handles) >= self._OPEN_FILES:
                    handles.popitem(last=False)[1].close()
                f = FileSystems.open(paths[fi], compression_type=CompressionTypes.UNCOMPRESSED)
            handles[fi] = f
            f.seek(offsets[r])
            return f.read(lengths[r])

        n = self._shards[split]
        suffix = ".gz" if self._compression == "GZIP" else ""
        out_path = posixpath.join(self._output_dirs[split], f"data_tfrecord-{shard:05d}-of-{n:05d}{suffix}")
        gz = zlib.compressobj(self._level, zlib.DEFLATED, 31) if self._compression == "GZIP" else None
        try:
            with FileSystems.create(out_path, compression_type=CompressionTypes.UNCOMPRESSED) as out:
                buf: List[bytes] = []
                size = 0
                i = 0
                while i < len(order):
                    j = i + 1
                    while j < len(order) and keys[order[j]] == keys[order[i]]:
                        j += 1
                    records = [payload(r) for r in order[i:j]]
                    if j - i > 1:
                        records.sort()
                    for rec in records:
                        frame = tfrecord_frame(rec)
                        buf.append(frame)
                        size += len(frame)
                    if size >= 1 << 20:
                        data = b"".join(buf)
                        out.write(gz.compress(data) if gz else data)
                        buf, size = [], 0
                    i = j
                data = b"".join(buf)
                out.write((gz.compress(data) + gz.flush()) if gz else data)
        finally:
            for f in handles.values():
                f.close()
        yield split, shard


def _remove_spill_dir(_, spill_dir: str) -> None:
    try:
        found = FileSystems.match([posixpath.join(spill_dir, "*")])[0].metadata_list
        if found:
            FileSystems.delete([m.path for m in found])
        if FileSystems.exists(spill_dir):
            FileSystems.delete([spill_dir])
    except Exception:  # best effort: a leftover spill folder is harmless
        pass


def shard_path_glob(split_dir: str, compression: str) -> str:
    return posixpath.join(split_dir, "data_tfrecord-*" + (".gz" if compression == "GZIP" else ""))
