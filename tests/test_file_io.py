"""components/file_io.py: the tree copy the components and the benchmark runner share, and strict JSON."""
import json
import math
import os

import numpy as np

from components import file_io


def test_copy_tree_copies_nested_files(tmp_path):
    src = tmp_path / "src"
    (src / "dev" / "high").mkdir(parents=True)
    (src / "a.txt").write_text("alpha\n", encoding="utf-8")
    (src / "dev" / "high" / "1.txt").write_bytes(b"\x00\x01binary")
    (src / "empty").mkdir()
    file_io.copy_tree(str(src), str(tmp_path / "dst"))
    found = sorted(os.path.relpath(os.path.join(d, n), tmp_path / "dst")
                   for d, dirs, files in os.walk(tmp_path / "dst") for n in dirs + files)
    assert found == ["a.txt", "dev", os.path.join("dev", "high"), os.path.join("dev", "high", "1.txt"), "empty"]
    assert (tmp_path / "dst" / "dev" / "high" / "1.txt").read_bytes() == b"\x00\x01binary"
    assert (tmp_path / "dst" / "a.txt").read_text(encoding="utf-8") == "alpha\n"


def test_json_safe_is_strict_json():
    value = {1: [np.float32(0.5), np.int64(3), np.bool_(True), math.nan, (math.inf, -1.0)],
             "a": np.array([[1, 2]]), "s": "x"}
    safe = file_io.json_safe(value)
    assert safe == {"1": [0.5, 3, True, None, [None, -1.0]], "a": [[1, 2]], "s": "x"}
    assert type(safe["1"][1]) is int and type(safe["1"][2]) is bool
    json.dumps(safe, allow_nan=False)


def test_local_and_uri_paths(tmp_path):
    assert file_io.is_uri("gs://b/x") and not file_io.is_uri(str(tmp_path))
    assert file_io.join("gs://b/", "/x/", "y.json") == "gs://b/x/y.json"
    path = file_io.join(str(tmp_path), "d", "f.json")
    file_io.makedirs(os.path.dirname(path))
    file_io.write(path, '{"k": 1}')
    assert file_io.read_json(path) == {"k": 1} and file_io.read_json(str(tmp_path / "missing")) is None
