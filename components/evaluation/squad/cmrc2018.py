"""CMRC2018's official EM / F1 for text without spaces between words (``benchmarks.squad_metric=cmrc2018``).

Restated from the official ``cmrc2018_evaluate.py`` (ymcui/cmrc2018 ``squad-style-data/``, "v5 - special"; the copy
in CLUEbenchmark/CLUE ``baselines/models_pytorch/mrc_pytorch/preprocess/`` is the same rules in Python 3):

* **Segmentation** (``mixed_segmentation``): the text lower-cased and stripped; every CJK character
  (U+4E00–U+9FA5) and every character of the script's punctuation list (:data:`SP_CHAR`) is a segment of its own,
  each run of other characters is cut by NLTK's ``word_tokenize`` (:func:`word_tokenize`). For F1 the punctuation
  list's characters are dropped first. (The list holds ``"……"``, two characters, which a character never equals:
  a single ``…`` is kept, as officially.)
* **F1** (``calc_f1_score``): between the answer's and the prediction's segments, the longest common *substring*
  of segments (``find_lcs``: contiguous, not a subsequence), precision over the prediction's segments, recall over
  the answer's, F1 their harmonic mean; the maximum over the gold answers.
* **EM** (``calc_em_score``): lower-cased, stripped, the punctuation list's characters removed, the strings equal
  (spaces inside count); any gold answer.
* **Totals**: every question of the dataset counts, one without a prediction scores 0 (``SKIP`` in the official
  output, ``missing`` here); percentages; the official ``AVERAGE`` is the mean of EM and F1 (the report's
  headline).

:func:`word_tokenize` restates NLTK's ``NLTKWordTokenizer`` (the "improved Treebank" tokenizer ``word_tokenize``
runs, nltk 3.10.4; Apache-2.0), so scoring needs neither NLTK (about 9 s to import here) nor its data. One
difference: ``word_tokenize`` first cuts a text into sentences with NLTK's Punkt model, a download that a sealed
worker cannot make; here a run of non-Chinese characters is one sentence, so a ``.`` that ends a sentence *inside*
such a run stays on its word (NLTK would split it off). Runs between Chinese characters are short (names, numbers,
English words), so this seldom changes a segment. Pure Python: no TensorFlow, Beam or TFX.
"""
from __future__ import annotations

import re
from typing import Dict, List, Mapping, Sequence, Tuple

from components.evaluation.squad.reading import load_squad_json

__all__ = ["SP_CHAR", "cmrc2018_metrics", "em_score", "f1_score", "find_lcs", "mixed_segmentation",
           "remove_punctuation", "word_tokenize"]

# The official list, as written (``'……'`` is two characters: no single character equals it).
SP_CHAR = ('-', ':', '_', '*', '^', '/', '\\', '~', '`', '+', '=',
           '，', '。', '：', '？', '！', '“', '”', '；', '’', '《', '》', '……', '·', '、',
           '「', '」', '（', '）', '－', '～', '『', '』')
_CJK = re.compile("[\u4e00-\u9fa5]")


# ---------------------------------------------------------------------------------------------
# NLTK's word tokenizer (NLTKWordTokenizer.tokenize), restated

_STARTING_QUOTES = [
    (re.compile("([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r'^"'), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"), r"\1 "),
]
_PUNCTUATION = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile("[\u2012-\u2015]"), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
]
_PARENS_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_DOUBLE_DASHES = (re.compile(r"--"), r" -- ")
_ENDING_QUOTES = [
    (re.compile("([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_CONTRACTIONS = [re.compile(p) for p in (
    r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b", r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b", r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)",
    r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")]


def word_tokenize(text: str) -> List[str]:
    """NLTK's ``NLTKWordTokenizer().tokenize(text)`` (the Treebank rules ``nltk.word_tokenize`` applies to each
    sentence), without Punkt's sentence split (see the module)."""
    for regexp, substitution in _STARTING_QUOTES:
        text = regexp.sub(substitution, text)
    for regexp, substitution in _PUNCTUATION:
        text = regexp.sub(substitution, text)
    for regexp, substitution in (_PARENS_BRACKETS, _DOUBLE_DASHES):
        text = regexp.sub(substitution, text)
    text = " " + text + " "
    for regexp, substitution in _ENDING_QUOTES:
        text = regexp.sub(substitution, text)
    for regexp in _CONTRACTIONS:
        text = regexp.sub(r" \1 \2 ", text)
    return text.split()


# ---------------------------------------------------------------------------------------------
# The official rules


def mixed_segmentation(text: str, rm_punc: bool = False) -> List[str]:
    """The official ``mixed_segmentation``: each CJK character and listed punctuation character a segment, each
    run of other characters NLTK's words; ``rm_punc`` drops the listed punctuation first."""
    text = str(text).lower().strip()
    segments: List[str] = []
    run = ""
    for char in text:
        if rm_punc and char in SP_CHAR:
            continue
        if _CJK.search(char) or char in SP_CHAR:
            if run != "":
                segments.extend(word_tokenize(run))
                run = ""
            segments.append(char)
        else:
            run += char
    if run != "":
        segments.extend(word_tokenize(run))
    return segments


def remove_punctuation(text: str) -> str:
    """The official ``remove_punctuation``: lower-cased, stripped, the listed punctuation characters dropped."""
    return "".join(char for char in str(text).lower().strip() if char not in SP_CHAR)


def find_lcs(s1: Sequence[str], s2: Sequence[str]) -> Tuple[Sequence[str], int]:
    """The official ``find_lcs``: the longest common contiguous run of ``s1`` and ``s2`` (the first one found
    in ``s1`` order) and its length."""
    previous = [0] * (len(s2) + 1)
    best = end = 0
    for i in range(len(s1)):
        current = [0] * (len(s2) + 1)
        for j in range(len(s2)):
            if s1[i] == s2[j]:
                current[j + 1] = previous[j] + 1
                if current[j + 1] > best:
                    best, end = current[j + 1], i + 1
        previous = current
    return s1[end - best:end], best


def f1_score(answers: Sequence[str], prediction: str) -> float:
    """The official ``calc_f1_score``: the best over ``answers`` of the segments' F1 (0 without answers)."""
    scores = []
    prediction_segments = mixed_segmentation(prediction, rm_punc=True)
    for answer in answers:
        answer_segments = mixed_segmentation(answer, rm_punc=True)
        _, length = find_lcs(answer_segments, prediction_segments)
        if length == 0:
            scores.append(0.0)
            continue
        precision, recall = length / len(prediction_segments), length / len(answer_segments)
        scores.append(2 * precision * recall / (precision + recall))
    return max(scores, default=0.0)


def em_score(answers: Sequence[str], prediction: str) -> int:
    """The official ``calc_em_score``: 1 when the prediction equals a gold answer, punctuation removed."""
    prediction = remove_punctuation(prediction)
    return int(any(remove_punctuation(answer) == prediction for answer in answers))


def cmrc2018_metrics(dataset, predictions: Mapping[str, str]) -> Dict[str, float]:
    """The official ``evaluate``: ``exact_match`` and ``f1`` (percent) over every question of the dataset (a
    path, a dataset dict or its ``data`` list), ``total`` questions and ``missing`` (without a prediction,
    scored 0)."""
    em = f1 = 0.0
    total = missing = 0
    for article in load_squad_json(dataset):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                qid = str(qa["id"]).strip()
                if qid not in predictions:
                    missing += 1
                    continue
                answers = [a["text"] for a in qa["answers"]]
                prediction = str(predictions[qid])
                f1 += f1_score(answers, prediction)
                em += em_score(answers, prediction)
    if total == 0:
        return {"exact_match": float("nan"), "f1": float("nan"), "total": 0, "missing": 0}
    return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total, "total": total, "missing": missing}
