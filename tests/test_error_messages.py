"""Every user-facing error names the setting (``section.key``, as ``--set`` and the YAML spell it) or the CLI flag
(``--vocab``) that changes the behaviour, never a Python keyword argument or parameter (docs/cli.md, "Naming
settings in errors").

A heuristic over the source, no imports of the modules it reads: each ``raise`` of a :class:`config.UserError`
subclass and each config ``check(ok, key, value, expected)`` has its message's literal text searched for a bare
lower-case identifier right before ``=`` (``encoding_fallback='latin-1'``, ``vocab_size=30000``). Not counted: a
dotted config key (``corpus.book_encoding_fallback=latin-1``), a flag (``--set``, ``--env-set PATH=...``), an
upper-case placeholder (``KEY=VALUE``, ``TZ=Area/City``), a top-level config key (``mode=benchmark``), code the user
types, quoted in backticks, and XML as the input holds it (``<doc id=12 title='A'>``).
"""
from __future__ import annotations

import ast
import dataclasses
import pathlib
import re
from typing import Iterator, List, Set, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("config", "trainer", "components", "pipeline")
BARE_KEYWORD = re.compile(r"(?<![\w.\-{}/$])([a-z_][a-z0-9_]*)=(?!=)")
QUOTED = re.compile(r"`[^`]*`|<[^<>]*>")  # code the user types; XML tags as the input file holds them


def _top_level_keys() -> Set[str]:
    from pipeline.settings.configs import PipelineConfig  # dataclasses only: cheap

    return {f.name for f in dataclasses.fields(PipelineConfig)}


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _user_error_classes(trees) -> Set[str]:
    """``UserError`` and every class defined in the tree that derives from one of them (by name)."""
    family, grew = {"UserError"}, True
    while grew:
        grew = False
        for tree in trees:
            for node in ast.walk(tree):
                if (isinstance(node, ast.ClassDef) and node.name not in family
                        and any(_name(base) in family for base in node.bases)):
                    family.add(node.name)
                    grew = True
    return family


def _literal_text(node: ast.AST) -> str:
    """The message as written: string constants, an f-string's fixed parts (each value as ``{}``), the operands of
    ``+`` and the arguments of a call such as ``", ".join(...)``; anything else is ``{}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp):
        return _literal_text(node.left) + _literal_text(node.right)
    if isinstance(node, ast.Call):
        return " ".join(_literal_text(arg) for arg in node.args)
    return "{}"


def messages(tree: ast.AST, family: Set[str]) -> Iterator[Tuple[int, str]]:
    """(line, literal text) of every user-error message in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and _name(node.exc.func) in family:
            yield node.lineno, " ".join(_literal_text(arg) for arg in node.exc.args)
        elif isinstance(node, ast.Call) and _name(node.func) == "check" and len(node.args) == 4:
            yield node.lineno, _literal_text(node.args[3])  # config.schema.check(ok, key, value, expected)


def bare_keywords(text: str, allowed: Set[str]) -> List[str]:
    return [m.group(1) for m in BARE_KEYWORD.finditer(QUOTED.sub(" ", text)) if m.group(1) not in allowed]


def _trees():
    files = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    return [(p.relative_to(ROOT), ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in files]


def test_user_errors_name_settings_and_flags_not_python_keywords():
    trees = _trees()
    family = _user_error_classes(tree for _, tree in trees)
    assert {"ConfigError", "InputError", "CorruptInputError", "VocabSizeMismatchError"} <= family
    allowed = _top_level_keys()
    found, seen = [], 0
    for path, tree in trees:
        for line, text in messages(tree, family):
            seen += 1
            found += [f"{path}:{line}: {word}= in {text!r}" for word in bare_keywords(text, allowed)]
    assert seen > 200  # the walk reached the raises (and config checks) of every package
    assert not found, "user errors naming a Python keyword instead of the setting or flag:\n" + "\n".join(found)


def test_the_heuristic_catches_keyword_hints_and_passes_settings():
    old = ast.parse('''
raise CorruptInputError(path, f"not valid UTF-8 at byte offset {at}{of}; "
                        "pass encoding_fallback='latin-1' to read such files as Latin-1")
raise VocabSizeMismatchError(f"{source} has {n} pieces but the config says vocab_size={expected} (vocab.vocab_size)")
check(ok, "train.grad_accum_steps", value, f">= 1 and dividing train_batch_size={batch}")
''')
    family = {"CorruptInputError", "VocabSizeMismatchError"}
    assert [bare_keywords(text, set()) for _, text in messages(old, family)] == [
        ["encoding_fallback"], ["vocab_size"], ["train_batch_size"]]
    for fine in ("pass --set corpus.book_encoding_fallback=latin-1 to read such files as Latin-1",
                 "--label {} must be KEY=VALUE", "weights with mode=benchmark", "cron {} (TZ=Area/City)",
                 "re-save it (transformers: `model.save_pretrained(dir, safe_serialization=True)`)",
                 "<doc id={} title={}> opened at line {} has no </doc>", "export {}=... or use --env-set {}=...",
                 "{} holds {} tokens but {} says \"vocab_size\": {}"):
        assert bare_keywords(fine, {"mode"}) == [], fine
