"""pipeline/spans.py on its own: TFX's span patterns and folder fingerprints, on local folders."""
from __future__ import annotations

import json
import os

import pytest

from pipeline import spans


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_the_latest_span_and_version_a_fixed_span_and_a_window(tmp_path):
    root = str(tmp_path / "d")
    for rel, text in [("span-1/v-1/a.txt", "one"), ("span-2/v-1/a.txt", "two"), ("span-2/v-3/a.txt", "two-3"),
                      ("span-2/v-3/sub/b.txt", "b"), ("span-10/v-1/a.txt", "ten"), ("notes/x.txt", "x")]:
        _write(os.path.join(root, "bucket", "wiki", rel), text)
    base = os.path.join(root, "bucket") + "/wiki"
    pattern = base + "/span-{SPAN}/v-{VERSION}"
    latest = spans.resolve("corpus.wikipedia_dir", pattern)
    assert (latest.uri, latest.spans, latest.version) == (base + "/span-10/v-1", (10,), 1)
    assert latest.listing.keys() == {"a.txt"} and latest.num_bytes == 3
    fixed = spans.resolve("corpus.wikipedia_dir", pattern, span=2)
    assert (fixed.uri, fixed.spans, fixed.version) == (base + "/span-2/v-3", (2,), 3)
    assert sorted(fixed.listing) == ["a.txt", "sub/b.txt"] and fixed.num_files == 2
    window = spans.resolve("corpus.wikipedia_dir", pattern, window=2)
    assert (window.uri, window.folders, window.spans) == (base, ("span-2/v-3", "span-10/v-1"), (2, 10))
    assert json.loads(window.properties()["folders"]) == ["span-2/v-3", "span-10/v-1"]
    with pytest.raises(Exception, match=r"no span 3 \(data.span\); there are spans 1, 2, 10"):
        spans.resolve("corpus.wikipedia_dir", pattern, span=3)


def test_a_date_span_counts_days_since_1970_and_bad_patterns_are_refused(tmp_path):
    for day in ("2026-11-20", "2026-11-26", "2026-13-01"):  # the last is no date: ignored
        _write(str(tmp_path / "books" / day / "b.txt"), day)
    snap = spans.resolve("corpus.books_dir", str(tmp_path / "books" / "{YYYY}-{MM}-{DD}"))
    assert snap.uri == str(tmp_path / "books" / "2026-11-26") and snap.spans == (20_783,)
    from config import UserError

    for bad in ("{SPAN}-{YYYY}{MM}{DD}", "{YYYY}-{MM}", "v-{VERSION}", "{SPAN}/{SPAN}"):
        with pytest.raises(UserError):
            spans.resolve("corpus.books_dir", str(tmp_path / "books" / bad))


def test_a_fingerprint_changes_exactly_when_a_file_is_added_removed_or_rewritten(tmp_path):
    folder = tmp_path / "glue"
    _write(str(folder / "RTE" / "dev.tsv"), "x")
    first = spans.resolve("benchmarks.glue_dir", str(folder))
    assert spans.resolve("benchmarks.glue_dir", str(folder)).fingerprint == first.fingerprint
    stat = os.stat(folder / "RTE" / "dev.tsv")
    os.utime(folder / "RTE" / "dev.tsv", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    touched = spans.resolve("benchmarks.glue_dir", str(folder))
    assert touched.fingerprint != first.fingerprint
    _write(str(folder / "CoLA" / "dev.tsv"), "y")
    added = spans.resolve("benchmarks.glue_dir", str(folder))
    assert spans.describe_change("glue", added.properties(), touched.properties()) == \
        "glue: 1 file added since the last run"
    assert spans.describe_change("glue", touched.properties(), first.properties()) == \
        "glue: 1 file changed since the last run"
    assert spans.describe_change("glue", added.properties(), added.properties()) == "glue: unchanged"
