"""The report's languages table (issue 63): each language of a run of several languages, from the ``per_language``
block PretrainingDataGen writes into ``stats.json`` (components/datagen/datagen_beam_languages.py): its documents
and characters, the sampling rule's target share of the pretraining instances beside the share realised, its
passes, instances and tokens. A single-language run's statistics hold no such block, and the section is None.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from components.report.document import Section, Table


def _rule_text(sampling: Mapping[str, Any]) -> str:
    method = sampling.get("method", "none")
    if method == "exponent":
        return f"an exponent, q ∝ n^α with α = {sampling.get('alpha')} (`datagen.language_alpha`)"
    if method == "unimax":
        return f"UniMax, at most {sampling.get('max_epochs')} epochs a language (`datagen.language_max_epochs`)"
    return "none: each language's natural share (`datagen.language_sampling`)"


def languages_section(per_language: Optional[Mapping[str, Any]]) -> Optional[Section]:
    """"Languages": one row per language of ``per_language`` (``stats.json``'s block), or None without one."""
    languages = (per_language or {}).get("languages") or {}
    if not languages:
        return None
    header = ["language", "documents", "characters", "target share", "realised share", "passes", "instances",
              "tokens"]
    rows = []
    for code, c in sorted(languages.items()):
        rows.append([code, f"{int(c.get('documents', 0)):,}", f"{int(c.get('characters', 0)):,}",
                     f"{float(c.get('target_share', 0.0)):.2%}", f"{float(c.get('realised_share', 0.0)):.2%}",
                     f"{float(c.get('passes', 0.0)):.2f}", f"{int(c.get('instances', 0)):,}",
                     f"{int(c.get('tokens', 0)):,}"])
    split = per_language.get("split", "train")
    rule = (f"Languages sampled by {_rule_text(per_language.get('sampling') or {})}; the {split} split's instances. "
            "Documents dropped in no listed language are counted on the Documents artifact "
            "(`unlisted_language_<code>_documents`).")
    return Section("Languages", [rule, Table(header, rows)])
