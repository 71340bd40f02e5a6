"""TFRecord features of ALBERT pretraining data, and a TensorFlow-free ``tf.train.Example`` encoder.

Building ``tf.train.Example`` protos costs more than creating the instance; writing the protobuf wire
format directly from NumPy buffers is several times faster and keeps TensorFlow out of the core.
The bytes equal ``tf.train.Example(...).SerializeToString(deterministic=True)``: features in sorted key
order (plain ``SerializeToString()`` writes the map in hash order; parsers accept either).
"""
from __future__ import annotations

import functools
from typing import Dict, List, Mapping, Tuple, Union

import numpy as np

from components.datagen.instances import Instance

INT64, FLOAT32 = "int64", "float32"
# name -> (dtype, length kind): "L" = max_seq_length, "P" = max_predictions_per_seq, 1 = one value.
_LAYOUT: Dict[str, Tuple[str, Union[str, int]]] = {
    "input_ids": (INT64, "L"),
    "input_mask": (INT64, "L"),
    "segment_ids": (INT64, "L"),
    "token_boundary": (INT64, "L"),
    "masked_lm_positions": (INT64, "P"),
    "masked_lm_ids": (INT64, "P"),
    "masked_lm_weights": (FLOAT32, "P"),
    "next_sentence_labels": (INT64, 1),
}
FEATURE_NAMES = tuple(sorted(_LAYOUT))


def feature_spec(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, Dict[str, object]]:
    """``{name: {"dtype": "int64"|"float32", "shape": [n]}}`` of the official features (all fixed length,
    padded with 0); map it to ``tf.io.FixedLenFeature`` where TF is wanted."""
    sizes = {"L": max_seq_length, "P": max_predictions_per_seq, 1: 1}
    return {name: {"dtype": dtype, "shape": [int(sizes[kind])]} for name, (dtype, kind) in sorted(_LAYOUT.items())}


def _varint(n: int) -> bytes:
    """One unsigned varint (lengths, tags)."""
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _small_varint_tables() -> Tuple[np.ndarray, np.ndarray]:
    """For every value below 2^16: its varint bytes packed little-endian in a uint32, and a (4,) mask of
    the bytes used."""
    v = np.arange(1 << 16, dtype=np.int64)
    packed = np.zeros(1 << 16, dtype=np.uint32)
    used = np.zeros((1 << 16, 4), dtype=bool)
    for k in range(3):
        byte = ((v >> (7 * k)) & 0x7F) | (((v >> (7 * (k + 1))) != 0) << 7)
        packed |= (byte << (8 * k)).astype(np.uint32)
        used[:, k] = (v >= (1 << (7 * k))) | (k == 0)
    return packed, used


# Constant lookup tables: ids, positions and flags are all < 2^16, so encoding is a gather + a mask.
_VARINT_PACKED, _VARINT_USED = _small_varint_tables()
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _varints_generic(v: np.ndarray) -> bytes:
    u = v.astype(np.int64).view(np.uint64)  # two's complement: negatives take 10 bytes
    width = (int(u.max()).bit_length() + 6) // 7 or 1
    nbytes = np.ones(u.shape[0], dtype=np.int64)
    for k in range(1, width):
        nbytes += u >= np.uint64(1 << (7 * k))
    grid = np.empty((u.shape[0], width), dtype=np.uint8)
    for k in range(width):
        grid[:, k] = ((u >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        grid[:, k] |= ((nbytes - 1 > k) * 0x80).astype(np.uint8)
    return grid[np.arange(width) < nbytes[:, None]].tobytes()


def varints(values: np.ndarray) -> bytes:
    """Concatenated protobuf varints of int64 values, vectorised (negatives take 10 bytes, as protobuf does)."""
    v = np.asarray(values).reshape(-1)
    if v.shape[0] == 0:
        return b""
    if v.dtype.kind not in "iu":
        return _varints_generic(v)
    if v.dtype.itemsize == 1 and v.view(np.uint8).max() < 0x80:  # 0/1 flags: one byte each
        return v.view(np.uint8).tobytes()
    if v.dtype.kind == "i" and v.dtype.itemsize < 4:
        v = v.astype(np.int32)
    u = v.view(_UNSIGNED[v.dtype.itemsize]) if v.dtype.kind == "i" else v  # negatives become >= 2^31
    try:
        packed = _VARINT_PACKED.take(u)  # IndexError when a value is >= 2^16 or negative
    except IndexError:
        return _varints_generic(v)
    return packed.view(np.uint8).reshape(-1, 4)[_VARINT_USED.take(u, axis=0)].tobytes()


@functools.lru_cache(maxsize=8192)
def _entry_header(key: bytes, payload_len: int, is_float: bool) -> bytes:
    """Bytes before a packed payload inside ``Features.feature``:
    entry{1: key, 2: Feature{2: FloatList | 3: Int64List {1: packed values}}}.
    An empty packed field is omitted, as protobuf does. Memoised (a pure function of a few thousand
    distinct arguments per run): it would otherwise be a third of the encoding time."""
    if payload_len:
        list_hdr = b"\x0a" + _varint(payload_len)
        list_len = len(list_hdr) + payload_len
    else:
        list_hdr, list_len = b"", 0
    feat_hdr = (b"\x12" if is_float else b"\x1a") + _varint(list_len)
    feat_len = len(feat_hdr) + list_len
    key_part = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(feat_len)
    entry_len = len(key_part) + feat_len
    return b"\x0a" + _varint(entry_len) + key_part + feat_hdr + list_hdr


def _example(parts: List[bytes]) -> bytes:
    """Example{1: Features{...entries}} from the concatenated entry parts."""
    body_len = sum(len(p) for p in parts)
    return b"".join([b"\x0a", _varint(body_len)] + parts)


def serialize_features(features: Mapping[str, np.ndarray]) -> bytes:
    """Any ``{name: 1-D array}`` as a serialized ``tf.train.Example``: float arrays become FloatList (float32),
    everything else Int64List; keys in sorted order."""
    parts: List[bytes] = []
    for name in sorted(features):
        arr = np.asarray(features[name]).reshape(-1)
        is_float = arr.dtype.kind == "f"
        payload = arr.astype("<f4").tobytes() if is_float else varints(arr)
        parts += [_entry_header(name.encode("utf-8"), len(payload), is_float), payload]
    return _example(parts)


_KEYS = {name: name.encode("utf-8") for name in FEATURE_NAMES}
_ONE_F32 = np.float32(1.0).tobytes()


def serialize_instance(instance: Instance, max_seq_length: int, max_predictions_per_seq: int) -> bytes:
    """The instance padded with 0 to L / P as the official features, serialized like TF would.

    Padding encodes as one 0x00 byte per int64 (four per float), so it is appended as constant bytes
    instead of being encoded; 0/1 features are one byte per value.
    """
    n = instance.input_ids.shape[0]
    m = instance.masked_lm_positions.shape[0]
    if n > max_seq_length:
        raise ValueError(f"instance has {n} tokens, more than max_seq_length={max_seq_length}")
    if m > max_predictions_per_seq:
        raise ValueError(f"instance has {m} predictions, more than max_predictions_per_seq={max_predictions_per_seq}")
    pad_l = b"\x00" * (max_seq_length - n)
    pad_p = b"\x00" * (max_predictions_per_seq - m)
    label = int(instance.sop_label)
    payloads = (  # sorted key order
        ("input_ids", varints(instance.input_ids) + pad_l, False),
        ("input_mask", b"\x01" * n + pad_l, False),
        ("masked_lm_ids", varints(instance.masked_lm_ids) + pad_p, False),
        ("masked_lm_positions", varints(instance.masked_lm_positions) + pad_p, False),
        ("masked_lm_weights", _ONE_F32 * m + pad_p * 4, True),
        ("next_sentence_labels", _varint(label) if label >= 0 else varints(np.asarray([label])), False),
        ("segment_ids", varints(instance.segment_ids) + pad_l, False),
        ("token_boundary", varints(instance.token_boundary) + pad_l, False),
    )
    parts: List[bytes] = []
    for key, payload, is_float in payloads:
        parts += [_entry_header(_KEYS[key], len(payload), is_float), payload]
    return _example(parts)


def padded_features(instance: Instance, max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, np.ndarray]:
    """The same features as padded NumPy arrays (int64 / float32), for tests and non-TFRecord sinks."""
    def pad(x: np.ndarray, size: int, dtype) -> np.ndarray:
        out = np.zeros(size, dtype=dtype)
        out[:x.shape[0]] = x
        return out

    n = instance.input_ids.shape[0]
    return {
        "input_ids": pad(instance.input_ids, max_seq_length, np.int64),
        "input_mask": pad(np.ones(n), max_seq_length, np.int64),
        "segment_ids": pad(instance.segment_ids, max_seq_length, np.int64),
        "token_boundary": pad(instance.token_boundary, max_seq_length, np.int64),
        "masked_lm_positions": pad(instance.masked_lm_positions, max_predictions_per_seq, np.int64),
        "masked_lm_ids": pad(instance.masked_lm_ids, max_predictions_per_seq, np.int64),
        "masked_lm_weights": pad(instance.masked_lm_weights, max_predictions_per_seq, np.float32),
        "next_sentence_labels": np.asarray([instance.sop_label], dtype=np.int64),
    }
