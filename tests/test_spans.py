"""pipeline/settings/spans.py on its own: TFX's span patterns and folder fingerprints, on local folders."""
from __future__ import annotations

import json
import os
import re

import pytest

from pipeline.settings import spans


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

    refusals = {  # the pattern's own error, before any folder is looked for (a missing folder's would not match)
        "{SPAN}-{YYYY}{MM}{DD}": r"invalid: \{SPAN\} and a date \{YYYY\}\{MM\}\{DD\} cannot both name the span$",
        "{YYYY}-{MM}": r"invalid: a date span needs \{YYYY\}, \{MM\} and \{DD\}$",
        "v-{VERSION}": r"invalid: \{VERSION\} needs a span \(\{SPAN\} or a date\)$",
        "{SPAN}/{SPAN}": r"invalid: each of \{SPAN\}, \{VERSION\}, \{YYYY\}, \{MM\}, \{DD\} at most once$",
    }
    for bad, message in refusals.items():
        location = str(tmp_path / "books" / bad)
        prefix = r"^config corpus\.books_dir=" + re.escape(repr(location)) + " is "
        with pytest.raises(UserError, match=prefix + message):
            spans.resolve("corpus.books_dir", location)


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


def test_on_gs_the_same_patterns_resolve_through_the_bucket(gcs):
    """``gs://`` goes through Beam's filesystems (served here by tests/gcs_standin.py): a folder there is the prefix
    of its objects, so the first layout of this file gives the same spans, versions, windows and listings."""
    for rel, text in [("span-1/v-1/a.txt", "one"), ("span-2/v-1/a.txt", "two"), ("span-2/v-3/a.txt", "two-3"),
                      ("span-2/v-3/sub/b.txt", "b"), ("span-10/v-1/a.txt", "ten"), ("notes/x.txt", "x"),
                      ("span-x/v-1/a.txt", "not a span"), ("span-3", "an object, not a folder")]:
        _write(str(gcs / "bucket" / "wiki" / rel), text)
    os.makedirs(gcs / "bucket" / "wiki" / "span-11" / "v-1")  # no object under it: no folder on a bucket
    pattern = "gs://bucket/wiki/span-{SPAN}/v-{VERSION}"
    latest = spans.resolve("corpus.wikipedia_dir", pattern)
    assert (latest.uri, latest.spans, latest.version, latest.folders) == \
        ("gs://bucket/wiki/span-10/v-1", (10,), 1, ("",))
    assert (sorted(latest.listing), latest.num_files, latest.num_bytes) == (["a.txt"], 1, 3)
    fixed = spans.resolve("corpus.wikipedia_dir", pattern, span=2)
    assert (fixed.uri, fixed.version, sorted(fixed.listing)) == \
        ("gs://bucket/wiki/span-2/v-3", 3, ["a.txt", "sub/b.txt"])
    window = spans.resolve("corpus.wikipedia_dir", pattern, window=2)
    assert (window.uri, window.folders, window.spans) == ("gs://bucket/wiki", ("span-2/v-3", "span-10/v-1"), (2, 10))
    assert sorted(window.listing) == ["span-10/v-1/a.txt", "span-2/v-3/a.txt", "span-2/v-3/sub/b.txt"]
    with pytest.raises(Exception, match=r"no span 3 \(data.span\); there are spans 1, 2, 10$"):
        spans.resolve("corpus.wikipedia_dir", pattern, span=3)
    with pytest.raises(Exception, match=r"^config corpus\.wikipedia_dir='gs://bucket/books/\{SPAN\}': no folder "
                                        r"matches the pattern$"):
        spans.resolve("corpus.wikipedia_dir", "gs://bucket/books/{SPAN}")
    # A folder's fingerprint: the same objects, the same print; an object's new time, a new one. GCS keeps an
    # object's time to the microsecond: the stand-in's file gets a whole microsecond too (a local file's nanoseconds,
    # read as float seconds, can round the next microsecond onto the same one).
    local = gcs / "bucket" / "wiki" / "notes" / "x.txt"
    stat = os.stat(local)
    os.utime(local, ns=(stat.st_atime_ns, stat.st_mtime_ns // 1_000 * 1_000))
    folder = spans.resolve("benchmarks.glue_dir", "gs://bucket/wiki/notes")
    assert (folder.uri, folder.listing.keys(), folder.num_bytes) == ("gs://bucket/wiki/notes", {"x.txt"}, 1)
    assert spans.resolve("benchmarks.glue_dir", "gs://bucket/wiki/notes/").fingerprint == folder.fingerprint
    stat = os.stat(local)
    os.utime(local, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))  # a microsecond: GCS's resolution
    touched = spans.resolve("benchmarks.glue_dir", "gs://bucket/wiki/notes")
    assert touched.fingerprint != folder.fingerprint
    assert spans.describe_change("glue", touched.properties(), folder.properties()) == \
        "glue: 1 file changed since the last run"
