"""The Unicode character classes the text code uses, as code point ranges, stored for this Python's Unicode data.

Each class is a property of single code points that Python's ``unicodedata`` / ``str`` methods define: letters
(``str.isalpha``), whitespace (``str.isspace``), combining marks (nonzero canonical combining class), digits,
category Mn, BERT's controls, punctuation and CJK ideographs (:func:`compute`). Enumerating them walks every code
point (about 0.1 s of CPU a class, 0.55 s for all nine; reading the file 0.001 s, 2-core AMD EPYC), which was paid in
each process that normalised non-ASCII text, measured documents for the data gate or built a text graph (Beam
workers, pipeline tasks, pushes).

:data:`RANGES_FILE` holds them, computed once for the Unicode version (and build width) it names; :func:`ranges`
reads it when it was written for this Python's Unicode data and computes the classes otherwise, so the result is
always this Python's. ``python -m components.text.unicode_ranges`` rewrites the file;
tests/test_graph_tokenizer.py checks that it equals the computation.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import unicodedata
from typing import Dict, Iterable, List, Optional

RANGES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_ranges.json")


def _ranges(chars: Iterable[int]) -> List[List[int]]:
    """The code points ``chars`` (surrogates left out) as sorted inclusive ranges ``[lo, hi]``."""
    cps = sorted(set(c for c in chars if not 0xD800 <= c <= 0xDFFF))
    out: List[List[int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def version() -> Dict[str, object]:
    """What the stored ranges depend on: the Unicode version of ``unicodedata`` and the build's widest code point."""
    return {"unidata_version": unicodedata.unidata_version, "maxunicode": sys.maxunicode}


def compute() -> Dict[str, List[List[int]]]:
    """Every class, as code point ranges, from this Python's ``unicodedata``."""
    from components.text import wordpiece  # lazy: only when the stored file is not this Python's

    alpha, space, digit, combining, mn, control, punct = [], [], [], [], [], [], []
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if ch.isalpha():
            alpha.append(cp)
        if ch.isspace():
            space.append(cp)
        if ch.isdigit():
            digit.append(cp)
        if unicodedata.combining(ch):
            combining.append(cp)
        cat = unicodedata.category(ch)
        if cat == "Mn":
            mn.append(cp)
        if cat in ("Cc", "Cf") and ch not in "\t\n\r":
            control.append(cp)
        if wordpiece.is_punctuation(ch):
            punct.append(cp)
    splitting = {ord(c) for c in wordpiece.SPLITTING_CONTROLS}
    cjk = [cp for lo, hi in wordpiece.CJK_RANGES for cp in range(lo, hi + 1)]
    return {
        "alpha": _ranges(alpha),  # str.isalpha (Unicode categories L*)
        "space": _ranges(space),  # str.isspace (str.split's separators)
        "wp_space": _ranges(c for c in space if c not in splitting),  # what BERT turns into a space
        "combining": _ranges(combining),  # nonzero canonical combining class
        "digit": _ranges(digit),
        "mn": _ranges(mn),
        "wp_drop": _ranges(control + [0xFFFD]),  # BERT's _clean_text drops these (NUL is Cc)
        "punct": _ranges(punct),
        "cjk": _ranges(cjk),
    }


def stored() -> Optional[Dict[str, List[List[int]]]]:
    """The ranges of :data:`RANGES_FILE` when it was written for this Python's Unicode data, else None."""
    try:
        with open(RANGES_FILE, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data["ranges"] if {k: data.get(k) for k in version()} == version() else None


@functools.lru_cache(maxsize=1)
def all_ranges() -> Dict[str, List[List[int]]]:
    """Every class: the stored ranges where they are this Python's, else computed (once per process)."""
    return stored() or compute()


def ranges(name: str) -> List[List[int]]:
    """One class's code point ranges ``[lo, hi]`` (inclusive, sorted): ``alpha``, ``space``, ``combining``, ..."""
    return all_ranges()[name]


def code_points(name: str) -> Iterable[int]:
    """Every code point of one class, in order."""
    return (cp for lo, hi in ranges(name) for cp in range(lo, hi + 1))


if __name__ == "__main__":  # rewrite RANGES_FILE for this Python's Unicode data
    with open(RANGES_FILE, "w", encoding="utf-8") as f:
        json.dump({**version(), "ranges": compute()}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
