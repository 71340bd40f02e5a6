"""The data gate per source location (issue 63, scope 5): a books location with a span pattern
(``books/span-{SPAN}``) beside the sample's Wikipedia dump without one, through ``run`` on
tests/test_change_impact.py's small DAG with every benchmark off.

The Wikipedia dump is read whole on every tick: it is no repeat of the last span, and the previous-span duplicate
checks compare each location with its own documents of the last span that went through. Span 1 (Austen) passes as the
first span; span 2 (Chesterton, a new book) passes against span 1, although the unchanged Wikipedia documents are all
in span 1 (before, both duplicate checks read 0.95 and stopped it); span 3 sends span 2's book again and stops before
the vocabulary, its failed checks naming the books location.
"""
from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import SAMPLE, cli_in_process
from tests.test_change_impact import BASE
from tests.test_data_gate import AFTER_GATE, BENCHMARKS_OFF, GATE, _files, _newest_run, _ran

pytestmark = pytest.mark.slow

BOOKS = os.path.join(SAMPLE, "books")


@pytest.fixture(scope="module")
def ticks(tmp_path_factory):
    """Tick → (exit code, stderr, node states of its run, its gate result)."""
    root = tmp_path_factory.mktemp("locations")
    books = root / "books"
    overrides = BASE + BENCHMARKS_OFF + [f"corpus.wikipedia_dir={os.path.join(SAMPLE, 'wikipedia')}",
                                         f"corpus.books_dir={books / 'span-{SPAN}'}"]
    out = {}
    for span, book in ((1, "austen-persuasion.txt"), (2, "chesterton-thursday.txt"), (3, None)):
        if book is None:
            shutil.copytree(books / "span-2", books / "span-3")  # span 2's book, sent again
        else:
            (books / f"span-{span}").mkdir(parents=True)
            shutil.copy(os.path.join(BOOKS, book), books / f"span-{span}" / book)
        argv = ["run", "--preset", "sample", "--output-dir", root / "out"]
        done = cli_in_process(argv + [a for o in overrides for a in ("--set", o)], root / "logs")
        code, stderr = done.returncode, done.stderr
        out[span] = (code, stderr, *_newest_run(str(root / "out" / "metadata.sqlite")))
    return out


def test_a_new_book_beside_an_unchanged_unpatterned_location_passes(ticks):
    code, stderr, states, result = ticks[2]
    assert code == 0, stderr[-3000:]
    assert GATE | AFTER_GATE <= _ran(states)
    assert (result["span"], result["passed"], result["baseline_span"]) == (2, 1, 1)
    summary = _files(result)[0]
    checks = {c["name"]: c for c in summary["checks"]}
    # The books location against its own span 1: Chesterton repeats nothing of Austen. Wikipedia is not compared.
    assert checks["max_previous_exact_duplicate_share"]["value"] == 0.0
    assert checks["max_previous_exact_duplicate_share"]["message"] == (
        "span 2: check max_previous_exact_duplicate_share = 0, limit <= 0.05: passed (drift against span 1; books "
        "location)")
    assert checks["max_previous_near_duplicate_share"]["value"] == 0.0
    assert sorted(summary["statistics"]["by_source"]) == ["books", "wikipedia"]
    assert summary["statistics"]["by_source"]["books"]["measured_documents"] == 1


def test_the_last_spans_book_again_stops_naming_the_location(ticks):
    code, stderr, states, result = ticks[3]
    assert code == 2
    assert _ran(states) & AFTER_GATE == set()
    assert (result["span"], result["passed"], result["baseline_span"]) == (3, 0, 2)
    assert result["failed"] == "max_previous_exact_duplicate_share,max_previous_near_duplicate_share"
    lines = stderr.splitlines()
    assert ("span 3: check max_previous_exact_duplicate_share = 1, limit <= 0.05: FAILED (drift against span 2; "
            "books location)") in lines
    assert ("span 3: check max_previous_near_duplicate_share = 1, limit <= 0.1: FAILED (drift against span 2; "
            "books location)") in lines
