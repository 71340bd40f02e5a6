"""The report's languages table (issue 63): the documents, sentences and characters of each language of a run of
several languages, as CorpusGen recorded them on its Documents artifact, and the documents dropped in no listed
language.

Kept apart from the report's other sections so the report can add it in one line: ``languages_section(
languages_from_properties(props))``, ``props`` the Documents artifact's int custom properties (a single-language run
records none, and the section is None). ``instances``: the pretraining instances per language where datagen counts
them (a column of its own when given).
"""
from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Optional

from components.report.document import Section, Table

_PROPERTY = re.compile(r"language_([a-z]{2})_(documents|sentences|characters)")
_UNLISTED = re.compile(r"unlisted_language_([a-z]+)_documents")


def languages_from_properties(props: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{"per_language": {code: {documents, sentences, characters}}, "unlisted": {code: documents}} from the Documents
    artifact's properties (``language_<code>_<key>``, ``unlisted_language_<code>_documents``,
    components/corpus/corpus_component.py)."""
    per_language: Dict[str, Dict[str, int]] = {}
    unlisted: Dict[str, int] = {}
    for name, value in props.items():
        match = _PROPERTY.fullmatch(name)
        if match:
            per_language.setdefault(match.group(1), {})[match.group(2)] = int(value)
            continue
        match = _UNLISTED.fullmatch(name)
        if match:
            unlisted[match.group(1)] = int(value)
    return {"per_language": dict(sorted(per_language.items())), "unlisted": dict(sorted(unlisted.items()))}


def languages_section(languages: Mapping[str, Mapping[str, Any]],
                      instances: Optional[Mapping[str, int]] = None) -> Optional[Section]:
    """"Languages": one row per language (documents, sentences, characters and its share of the characters; the
    pretraining instances and their share when ``instances`` is given), and a line on what was dropped; None for a
    run whose documents carry no language."""
    per_language = languages.get("per_language") or {}
    if not per_language:
        return None
    total_chars = sum(c.get("characters", 0) for c in per_language.values()) or 1
    total_instances = sum((instances or {}).values()) or 1
    header = ["language", "documents", "sentences", "characters", "share of characters"]
    if instances is not None:
        header += ["instances", "share of instances"]
    rows = []
    for code, c in per_language.items():
        row = [code, f"{c.get('documents', 0):,}", f"{c.get('sentences', 0):,}", f"{c.get('characters', 0):,}",
               f"{c.get('characters', 0) / total_chars:.1%}"]
        if instances is not None:
            row += [f"{instances.get(code, 0):,}", f"{instances.get(code, 0) / total_instances:.1%}"]
        rows.append(row)
    unlisted = languages.get("unlisted") or {}
    dropped = (f"Dropped in no listed language: {', '.join(f'{n:,} {code}' for code, n in unlisted.items())} "
               "document(s) (corpus.max_unlisted_language_share limits their share)." if unlisted else
               "No document was in a language the run does not list.")
    return Section("Languages", [Table(header, rows), dropped])
