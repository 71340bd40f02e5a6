"""Side by side with the official ``create_pretraining_data.py`` on a WordPiece vocabulary: the statistics of the
instances ``albert-pipeline make-pretraining-data`` writes against the official script's, from the same documents.

    .venv/bin/python -m benchmarks.datagen_fidelity --official-albert DIR --vocab FILE --docs FILE --json OUT
        [--build-docs SRC_DIR] [--build-vocab] [--language zh] [--dupe-factor 5] [--seed 12345]

``DIR`` is a google-research/albert checkout holding ``create_pretraining_data.py`` and ``tokenization.py`` (in a
folder named ``albert``, see ``benchmarks/corpus_scale.py``). Both run with the official tokenizer's WordPiece path
(``--vocab_file``, no ``--spm_model_file``) at the same settings: L 128, P 20, masked_lm_prob 0.15, dupe_factor 5,
short_seq_prob 0.1, n-gram 3, ``--do_lower_case``, the official ``do_whole_word_mask`` default (True); ours with
``--set language=<code>`` (zh: ``datagen.word_starts=boundary``, the ``##`` rule that the official
``_is_start_piece_bert`` is) and ``datagen.eval_fraction=--eval-fraction`` (default 0.01: the official script has no
eval split; ours holds that share of the documents out, by hash, and draws random documents per split).

``--docs FILE`` is the official input format (one sentence per line, blank line between documents). With
``--build-docs SRC_DIR`` it is written first from every ``*.txt`` there: a file with chapter headings (``第 N 章``,
the Debian FAQ) becomes one document per chapter, any other file is cut at paragraph boundaries into documents of
about ``--doc-chars`` characters; each part goes through ``book_document_from_bytes(..., splitter="multilingual")``
and ``to_text_block``. With ``--build-vocab`` ``--vocab FILE`` is written first in the BERT-Chinese layout
(``[PAD]``, ``[unused1..99]``, ``[UNK] [CLS] [SEP] [MASK] <S> <T>``, then pieces): every character the official
``BasicTokenizer`` leaves in the documents, every word seen at least twice whole, and ``##`` + every character of a
word, so nothing is ``[UNK]`` and words of several pieces exercise whole-word masking.

The official script runs in a child process through ``official_command`` / ``official_env`` of
``benchmarks/corpus_scale.py`` (its flags, WordPiece settings put over them), with the official ``tokenization``
loaded as ``benchmarks/wordpiece_official.py`` loads it (a stand-in ``tensorflow_hub`` when that does not import)
and NumPy's global generator seeded with ``--seed`` (the official n-gram draw is unseeded; seeding only makes the
run repeatable).

Statistics, from each side's TFRecords (all splits of ours):
- instances per document and pass: each instance is traced to its document by its segment A (masked positions
  restored from ``masked_lm_ids``), which is always a contiguous run of its own document's pieces (A is the first
  part, or after an SOP swap the second part, of the document's chunk; truncation cuts only its ends). The
  standard error comes from the paired per-document differences (both sides read the same documents), so the
  document lengths cancel: SE(diff) = sd(c_ours - c_official) / sqrt(D); each side is given SE(diff) / sqrt(2);
- tokens per instance (``input_mask``), masked per instance (``masked_lm_weights``): mean, SE = sd / sqrt(n);
- the 80/10/10 shares over masked positions ([MASK] / a random piece / the original piece kept; a random draw that
  hits the original piece counts as kept, on both sides) and the SOP label-1 share: p, SE = sqrt(p (1 - p) / n);
- diagnostics: the share of instances whose segment B is not found in A's document (B from a random document).
Standard errors of per-instance statistics are cluster-robust, a cluster being one document in one run (its
instances share the document's sentence lengths and, in each pass, one short-target draw; treating them as
independent understates the error several-fold on a small corpus). ``--seeds`` runs each side once per seed and pools
the instances (more document passes, smaller errors).
z = (ours - official) / sqrt(SE_ours^2 + SE_official^2); |z| <= 2 agrees, 2 < |z| <= 3 borderline.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import datetime
import glob
import json
import math
import os
import re
import runpy
import shlex
import shutil
import sys
import tempfile
from typing import Dict, List, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from benchmarks.corpus_scale import official_command, official_env  # noqa: E402
from benchmarks.datagen_memory import cli_command, peak_rss_run  # noqa: E402
from benchmarks.ingest import cpu_description  # noqa: E402
from benchmarks.wordpiece_official import load_official  # noqa: E402

SETTINGS = {"max_seq_length": 128, "max_predictions_per_seq": 20, "masked_lm_prob": 0.15, "short_seq_prob": 0.1,
            "ngram": 3}
_CHAPTER = re.compile(r"^第\s*\d+\s*章", re.M)
SPECIALS = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"]


# ---------------------------------------------------------------------------------------------------- inputs

def split_text(text: str, doc_chars: int) -> List[str]:
    """Chapters where the text has ``第 N 章`` headings (front matter before the first dropped), else runs of whole
    paragraphs of about ``doc_chars`` characters."""
    starts = [m.start() for m in _CHAPTER.finditer(text)]
    if len(starts) >= 2:
        return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    parts, current, size = [], [], 0
    for paragraph in re.split(r"\n\s*\n", text):
        current.append(paragraph)
        size += len(paragraph)
        if size >= doc_chars:
            parts.append("\n\n".join(current))
            current, size = [], 0
    if current:
        parts.append("\n\n".join(current))
    return parts


def build_documents(src_dir: str, out_path: str, doc_chars: int, splitter: str = "multilingual") -> Dict[str, int]:
    """``out_path`` in the official format from the ``*.txt`` of ``src_dir`` (see the module doc); documents per file."""
    from components.corpus.books import book_document_from_bytes
    from components.text.documents import to_text_block

    counts: Dict[str, int] = {}
    with open(out_path, "w", encoding="utf-8") as out:
        for path in sorted(glob.glob(os.path.join(src_dir, "*.txt"))):
            name = os.path.basename(path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for k, part in enumerate(split_text(text, doc_chars)):
                doc = book_document_from_bytes(part.encode("utf-8"), f"{name}#{k}", splitter=splitter)
                block = to_text_block(doc) if doc is not None else ""
                if block:
                    out.write(block)
                    counts[name] = counts.get(name, 0) + 1
    return counts


def build_vocab(docs_path: str, out_path: str, tokenization) -> Dict[str, int]:
    """A vocab.txt of the BERT-Chinese layout in which nothing of ``docs_path`` is [UNK] (see the module doc)."""
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    chars: collections.Counter = collections.Counter()
    words: collections.Counter = collections.Counter()
    with open(docs_path, encoding="utf-8") as f:
        for line in f:
            for token in basic.tokenize(line.strip()):
                if len(token) > 100:  # the official WordpieceTokenizer makes such words [UNK] anyway
                    continue
                chars.update(token)
                if len(token) > 1:
                    words[token] += 1
    singles = [c for c, _ in chars.most_common()]
    whole = [w for w, n in words.most_common() if n >= 2]
    cont = sorted({"##" + c for w in words for c in w[1:]})
    vocab = SPECIALS + singles + whole + [p for p in cont if p not in set(SPECIALS)]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    return {"size": len(vocab), "characters": len(singles), "whole_words": len(whole), "continuations": len(cont)}


# ---------------------------------------------------------------------------------------------------- the runs

def official_wordpiece_command(albert_dir: str, docs: str, output: str, vocab: str, dupe_factor: int,
                               seed: int, work: str) -> List[str]:
    """``corpus_scale.official_command``'s flags (its documents folder holding ``docs`` alone), WordPiece settings put
    over them, run through this module's ``_official`` launcher."""
    folder = os.path.join(work, "official-input")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "documents.txt")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(docs), link)
    base = official_command(albert_dir, folder, output, vocab)
    flags = {}
    for item in base[2:]:
        key, _, value = item.partition("=")
        flags[key] = value
    flags.pop("--spm_model_file", None)  # the WordPiece path: FullTokenizer(vocab_file=..., spm_model_file=None)
    flags.update({"--vocab_file": vocab, "--max_seq_length": SETTINGS["max_seq_length"],
                  "--max_predictions_per_seq": SETTINGS["max_predictions_per_seq"],
                  "--masked_lm_prob": SETTINGS["masked_lm_prob"], "--short_seq_prob": SETTINGS["short_seq_prob"],
                  "--ngram": SETTINGS["ngram"], "--dupe_factor": dupe_factor, "--random_seed": seed,
                  "--do_lower_case": "true"})
    return [sys.executable, "-m", "benchmarks.datagen_fidelity", "_official", albert_dir, base[1]] + [
        f"{k}={v}" for k, v in flags.items()]


def run_official_here(albert_dir: str, script: str, flags: List[str]) -> None:
    """The child process: the official script as ``__main__`` with its ``tokenization`` pre-loaded."""
    import numpy as np

    sys.modules["tokenization"] = load_official(albert_dir)
    seed = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--random_seed=")), 12345)
    np.random.seed(seed)
    sys.argv = [script] + flags
    runpy.run_path(script, run_name="__main__")


def ours_command(docs: str, vocab: str, output: str, dupe_factor: int, seed: int, language: str,
                 eval_fraction: float) -> List[str]:
    sets = [f"language={language}", f"seed={seed}", "vocab.do_lower_case=true", f"datagen.eval_fraction={eval_fraction}",
            f"datagen.max_seq_length={SETTINGS['max_seq_length']}",
            f"datagen.max_predictions_per_seq={SETTINGS['max_predictions_per_seq']}",
            f"datagen.masked_lm_prob={SETTINGS['masked_lm_prob']}", f"datagen.short_seq_prob={SETTINGS['short_seq_prob']}",
            f"datagen.max_ngram={SETTINGS['ngram']}", f"datagen.dupe_factor={dupe_factor}", "datagen.sop_mode=official"]
    command = cli_command() + ["make-pretraining-data", "--input", docs, "--vocab", vocab, "--output", output]
    for s in sets:
        command += ["--set", s]
    return command


# ---------------------------------------------------------------------------------------------------- reading

def read_records(paths: Sequence[str]):
    """Every ``tf.train.Example`` of the TFRecord files (GZIP or not, told by the magic bytes), as dicts of lists."""
    import tensorflow as tf

    for path in paths:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        for raw in tf.data.TFRecordDataset(path, compression_type="GZIP" if gz else ""):
            ex = tf.train.Example.FromString(raw.numpy())
            out = {}
            for name, feat in ex.features.feature.items():
                out[name] = list(feat.int64_list.value) if feat.HasField("int64_list") else list(feat.float_list.value)
            yield out


class DocumentIndex:
    """Finds which document a run of piece ids comes from: every document's ids, as one string of code points."""

    def __init__(self, documents: List[List[int]]):
        parts, self.starts, at = [], [], 0
        for ids in documents:
            self.starts.append(at)
            s = self.encode(ids)
            parts.append(s + "\x01")
            at += len(s) + 1
        self.text = "".join(parts)

    @staticmethod
    def encode(ids: Sequence[int]) -> str:
        return "".join(chr(0x100 + i) for i in ids)

    def find(self, ids: Sequence[int], limit: int = 4) -> List[int]:
        needle, found, at = self.encode(ids), [], 0
        while len(found) < limit:
            at = self.text.find(needle, at)
            if at < 0:
                break
            doc = bisect.bisect_right(self.starts, at) - 1
            if doc not in found:
                found.append(doc)
            at += 1
        return found

    def inside(self, ids: Sequence[int], doc: int) -> bool:
        end = self.starts[doc + 1] if doc + 1 < len(self.starts) else len(self.text)
        return self.text.find(self.encode(ids), self.starts[doc], end) >= 0


def tokenized_documents(docs_path: str, tokenizer) -> List[List[int]]:
    from components.text.documents import parse_text_blocks

    with open(docs_path, encoding="utf-8") as f:
        blocks = list(parse_text_blocks(f))
    out = []
    for sentences in blocks:
        ids = [i for s in sentences for i in tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s))]
        if ids:
            out.append(ids)
    return out


def collect(paths: Sequence[str], index: DocumentIndex, mask_id: int, cls_id: int, sep_id: int,
            run: int = 0) -> Dict:
    """One row per instance of one side's output: its length, masked count, 80/10/10 counts, SOP label, document
    (``run``, index; -1 when not found), whether its B is from elsewhere; and the per-document counts."""
    per_doc = [0.0] * len(index.starts)
    rows = []
    for ex in read_records(paths):
        n = int(sum(ex["input_mask"]))
        ids = list(ex["input_ids"][:n])
        k = int(sum(1 for w in ex["masked_lm_weights"] if w > 0))
        kinds = collections.Counter()
        for pos, label in zip(ex["masked_lm_positions"][:k], ex["masked_lm_ids"][:k]):
            shown = ids[pos]
            kinds["mask" if shown == mask_id else "keep" if shown == label else "random"] += 1
            ids[pos] = label
        seg = ex["segment_ids"][:n]
        a = [t for t, s in zip(ids, seg) if s == 0 and t not in (cls_id, sep_id)]
        b = [t for t, s in zip(ids, seg) if s == 1 and t != sep_id]
        docs = index.find(a)
        for d in docs:
            per_doc[d] += 1.0 / len(docs)
        rows.append({"length": n, "masked": k, "mask": kinds["mask"], "random": kinds["random"],
                     "keep": kinds["keep"], "sop": int(ex["next_sentence_labels"][0]),
                     "doc": (run, docs[0]) if docs else (run, -1 - len(rows)), "ambiguous": len(docs) > 1,
                     "b_elsewhere": None if not docs else int(bool(b) and not index.inside(b, docs[0]))})
    return {"rows": rows, "per_doc": per_doc}


def ratio_se(num: Sequence[float], den: Sequence[float], clusters: Sequence) -> Tuple[float, float]:
    """sum(num) / sum(den) and its standard error with the instances of one document (in one run) as one cluster
    (the linearised, cluster-robust estimate): instances of a document share its sentence lengths and, within a
    pass, its one short-target draw, so they are not independent draws."""
    total = sum(den)
    r = sum(num) / total
    sums: Dict = collections.defaultdict(float)
    for x, m, g in zip(num, den, clusters):
        sums[g] += x - r * m
    g = len(sums)
    var = g / (g - 1) * sum(v * v for v in sums.values()) / total ** 2 if g > 1 else 0.0
    return r, math.sqrt(var)


def mean_se(values: Sequence[float]) -> Tuple[float, float]:
    n = len(values)
    m = sum(values) / n
    var = sum((v - m) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return m, math.sqrt(var / n)


def compare(official: Dict, ours: Dict, dupe_factor: int) -> List[Dict]:
    out = []

    def row(name, a, b, note=""):
        (ma, sa), (mb, sb) = a, b
        se = math.hypot(sa, sb)
        z = (mb - ma) / se if se > 0 else (0.0 if mb == ma else float("inf"))
        out.append({"statistic": name, "official": round(ma, 5), "official_se": round(sa, 5), "ours": round(mb, 5),
                    "ours_se": round(sb, 5), "z": round(z, 2),
                    "verdict": "agrees" if abs(z) <= 2 else "borderline" if abs(z) <= 3 else "differs",
                    **({"note": note} if note else {})})

    def per_instance(side, key, den=None, where=None):
        rows = [r for r in side["rows"] if where is None or where(r)]
        return ratio_se([float(r[key]) for r in rows], [float(r[den]) if den else 1.0 for r in rows],
                        [r["doc"] for r in rows])

    pairs = len(official["per_doc"])  # (run, document) pairs
    diffs = [(b - a) / dupe_factor for a, b in zip(official["per_doc"], ours["per_doc"])]
    _, se_diff = mean_se(diffs)
    per_pass = lambda side: sum(side["per_doc"]) / pairs / dupe_factor  # noqa: E731
    row("instances per document and pass", (per_pass(official), se_diff / math.sqrt(2)),
        (per_pass(ours), se_diff / math.sqrt(2)), "SE from the paired per-document differences / sqrt 2")
    row("tokens per instance", per_instance(official, "length"), per_instance(ours, "length"))
    row("masked per instance", per_instance(official, "masked"), per_instance(ours, "masked"))
    for kind, label in (("mask", "[MASK] share"), ("random", "random-piece share"), ("keep", "kept share")):
        row(label, per_instance(official, kind, "masked"), per_instance(ours, kind, "masked"))
    row("SOP label-1 share", per_instance(official, "sop"), per_instance(ours, "sop"))
    found = lambda r: r["b_elsewhere"] is not None  # noqa: E731
    row("B from another document (diagnostic)", per_instance(official, "b_elsewhere", where=found),
        per_instance(ours, "b_elsewhere", where=found))
    for side in (official, ours):
        for r in side["rows"]:
            r["short"] = int(r["length"] < SETTINGS["max_seq_length"] // 2)
    row("instances under L/2 tokens (diagnostic)", per_instance(official, "short"), per_instance(ours, "short"))
    return out


def markdown(rows: List[Dict]) -> str:
    lines = ["| statistic | official | ours | z | verdict |", "|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['statistic']} | {r['official']:.4f} ± {r['official_se']:.4f} | "
                     f"{r['ours']:.4f} ± {r['ours_se']:.4f} | {r['z']:+.2f} | {r['verdict']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_official"]:
        return run_official_here(argv[1], argv[2], argv[3:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official-albert", required=True, help="google-research/albert checkout, in a folder `albert`")
    ap.add_argument("--vocab", required=True, help="WordPiece vocab.txt (written first with --build-vocab)")
    ap.add_argument("--docs", required=True, help="documents in the official format (written first with --build-docs)")
    ap.add_argument("--json", required=True, help="write the result here")
    ap.add_argument("--build-docs", metavar="SRC_DIR", help="write --docs from the *.txt of this folder first")
    ap.add_argument("--doc-chars", type=int, default=1500, help="document size for files without chapters")
    ap.add_argument("--build-vocab", action="store_true", help="write --vocab from --docs first (see above)")
    ap.add_argument("--language", default="zh")
    ap.add_argument("--dupe-factor", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[12345],
                    help="one run of each side per seed (random_seed / seed); the instances are pooled")
    ap.add_argument("--eval-fraction", type=float, default=0.01,
                    help="ours: datagen.eval_fraction (the official script has no eval split; 0.01 is the least "
                         "allowed, the CLI's sample preset has 0.1)")
    ap.add_argument("--keep", help="keep the outputs in this folder (default: a temporary one, removed)")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.official_albert, "create_pretraining_data.py")):
        ap.error(f"--official-albert {args.official_albert} holds no create_pretraining_data.py")
    tokenization = load_official(args.official_albert)
    built = {}
    if args.build_docs:
        built["documents_per_source"] = build_documents(args.build_docs, args.docs, args.doc_chars)
    if args.build_vocab:
        built["vocab"] = build_vocab(args.docs, args.vocab, tokenization)
    tokenizer = tokenization.FullTokenizer(vocab_file=args.vocab, do_lower_case=True, spm_model_file=None)
    documents = tokenized_documents(args.docs, tokenizer)
    index = DocumentIndex(documents)
    mask_id, cls_id, sep_id, unk = tokenizer.convert_tokens_to_ids(["[MASK]", "[CLS]", "[SEP]", "[UNK]"])
    pieces = sum(len(d) for d in documents)
    work = args.keep or tempfile.mkdtemp(prefix="datagen_fidelity_")
    os.makedirs(work, exist_ok=True)
    official: Dict = {"rows": [], "per_doc": []}
    ours: Dict = {"rows": [], "per_doc": []}
    runs: List[Dict] = []
    try:
        for run, seed in enumerate(args.seeds):
            off_out = os.path.join(work, f"official-{seed}.tfrecord")
            our_out = os.path.join(work, f"ours-{seed}")
            for path in (off_out, our_out):
                if os.path.isdir(path):
                    shutil.rmtree(path)
                elif os.path.exists(path):
                    os.remove(path)
            off_cmd = official_wordpiece_command(args.official_albert, args.docs, off_out, args.vocab,
                                                 args.dupe_factor, seed, work)
            off_run = peak_rss_run(off_cmd, os.path.join(work, f"official-{seed}.log"),
                                   env=official_env(args.official_albert))
            our_cmd = ours_command(args.docs, args.vocab, our_out, args.dupe_factor, seed, args.language,
                                   args.eval_fraction)
            our_run = peak_rss_run(our_cmd, os.path.join(work, f"ours-{seed}.log"))
            got = {"official": collect([off_out], index, mask_id, cls_id, sep_id, run),
                   "ours": collect(sorted(p for p in glob.glob(os.path.join(our_out, "Split-*", "*"))
                                          if os.path.isfile(p)), index, mask_id, cls_id, sep_id, run)}
            with open(os.path.join(our_out, "stats.json")) as f:
                our_stats = json.load(f)
            for side, into in (("official", official), ("ours", ours)):
                into["rows"] += got[side]["rows"]
                into["per_doc"] += got[side]["per_doc"]
            runs.append({"seed": seed, "official_command": " ".join(shlex.quote(a) for a in off_cmd),
                         "ours_command": " ".join(shlex.quote(a) for a in our_cmd),
                         **{f"{side}_{k}": v for side, r in (("official", off_run), ("ours", our_run))
                            for k, v in r.items()},
                         **{f"{side}_instances": len(got[side]["rows"]) for side in got},
                         **{f"{side}_unmatched": sum(r["doc"][1] < 0 for r in got[side]["rows"]) for side in got},
                         **{f"{side}_ambiguous": sum(r["ambiguous"] for r in got[side]["rows"]) for side in got},
                         "ours_splits": {k: {"instances": v.get("instances"), "doc_passes": v.get("doc_passes"),
                                             "random_next_share": v.get("sop_random_next_share"),
                                             "short_target_share_doc_passes": v.get("short_target_share_doc_passes")}
                                         for k, v in our_stats.get("splits", {}).items()}})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    rows = compare(official, ours, args.dupe_factor)
    result = {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(shlex.quote(a) for a in [".venv/bin/python", "-m", "benchmarks.datagen_fidelity"] + argv),
        "cpu": cpu_description(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "official_source": "google-research/albert create_pretraining_data.py and tokenization.py",
        "settings": {**SETTINGS, "dupe_factor": args.dupe_factor, "seeds": args.seeds, "do_lower_case": True,
                     "do_whole_word_mask": True, "language": args.language,
                     "ours_eval_fraction": args.eval_fraction},
        "corpus": {"docs": args.docs, "documents": len(documents), "pieces": pieces,
                   "unk_share": round(sum(i == unk for d in documents for i in d) / max(pieces, 1), 5),
                   "vocab": args.vocab, "vocab_size": len(tokenizer.vocab), **built},
        "runs": runs,
        "instances": {"official": len(official["rows"]), "ours": len(ours["rows"])},
        "rows": rows,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"CPU: {result['cpu']}; load {result['load_average_at_end']}")
    print(json.dumps({"corpus": result["corpus"], "instances": result["instances"]}, ensure_ascii=False))
    print(markdown(rows))


if __name__ == "__main__":
    main()
