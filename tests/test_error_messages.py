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


# -- every user error names what to change or look at --------------------------------------------------------------
# Besides naming no Python keyword, a user error must name something the user can act on: a setting (``vocab.kind``,
# ``benchmarks.tasks.{}.format``: checked against the config's own fields, so a misspelt key does not count), a
# command-line flag or argument the CLI has (``--set``, ``--vocab``, ``SRC``), an environment variable
# (``ALBERT_TFX_DATA_DIR``), or a file or folder: a path or file name in the text (``vocab.txt``, ``gs://``,
# ``dev/``), a formatted value that holds one (``{path}``, ``{output_dir}``, ``{self.where}``: by this code's names for
# such values) or follows a word that says it is one (``output folder {}``), or the ``path`` argument of an error
# class that formats it itself (``CorruptInputError(path, detail)``), or a value the function assigned a joined path
# to. ``config {}`` is config.schema's form, whose value is the setting's key; ``environment {}`` names an entry of
# infra/environments.yaml (chosen with ``--env``); ``environment variable {}`` a variable. Literal text only: a message
# passed in a variable is judged where it is written (the raise of a variable's text is not read).
SETTING_TEXT = re.compile(r"(?<![\w./{}-])([a-z_][a-z0-9_]*(?:\.(?:\{\}|[A-Za-z0-9_-]+))+)")
FLAG_TEXT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
ENV_VAR_TEXT = re.compile(r"(?<![\w.])\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
FILE_TEXT = re.compile(r"gs://|(?<![\w<])[\w{}*.-]*[\w}*]/[\w{}*.-]|(?<![\w<])[\w{}*-]+/(?![\w/])|"
                       r"\b[\w{}*-]+(?:\.[\w{}*-]+)*\.(?:txt|json|jsonl|model|vocab|ya?ml|py|pb|csv|tsv|tfrecord|gz|"
                       r"bz2|xz|sqlite|md|html|png|index|h5|safetensors|bin|zip|whl|toml|xml)\b")
PATH_VALUE = re.compile(r"(?:path|paths|dir|dirs|directory|file|files|uri|folder|root|output|source|where|dataset|"
                        r"predictions|patterns?|destination|src|dst|checkpoint)$", re.I)
PATH_CALLS = {"join", "abspath", "realpath", "Path"}  # os.path.join(...), posixpath.join(...), pathlib.Path(...)
PATH_NOUN = re.compile(r"\b(?:file|files|folder|directory|input|output) (?:match )?\{\}")
SETTING_CALLS = {"setting", "key"}  # components/evaluation/glue/task_spec.py's and task_spec_reader.py's setting names


def _parts(node: ast.AST) -> List[tuple]:
    """A message as ("text", literal) and ("value", expression) parts, in order: string constants, an f-string's
    pieces, the operands of ``+``, the items of a list and the arguments of a call such as ``", ".join(...)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [("text", node.value)]
    if isinstance(node, ast.JoinedStr):
        return [p for v in node.values for p in (_parts(v) if isinstance(v, ast.Constant) else [("value", v.value)])]
    if isinstance(node, ast.BinOp):
        return _parts(node.left) + _parts(node.right)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [p for item in node.elts for p in _parts(item)]
    if isinstance(node, ast.Call) and any(_parts(a) != [("value", a)] for a in node.args):
        return [p for a in node.args for p in _parts(a)]
    return [("value", node)]


def _value_name(node: ast.AST) -> str:
    """The name a value goes by: ``self.where`` → ``where``, ``list(file_patterns)`` → ``file_patterns``,
    ``spec.setting("x")`` → ``setting``, ``x[:80]`` → ``x``."""
    while isinstance(node, (ast.Subscript, ast.Starred)):
        node = node.value
    if isinstance(node, ast.Call):  # a setting name's call, else what the call formats (its first argument)
        return _name(node.func) if _name(node.func) in SETTING_CALLS or not node.args else _value_name(node.args[0])
    return _name(node)


@dataclasses.dataclass(frozen=True)
class Names:
    """What a message may name: the config's settings (a dotted path → whether below it is a mapping of the
    user's keys), the CLI's flags and positional arguments."""

    settings: dict  # dotted path -> a mapping of the user's keys below it
    flags: Set[str]
    arguments: Set[str]

    def is_setting(self, dotted: str) -> bool:
        parts = dotted.split(".")
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            if path not in self.settings and not ("{}" in parts[i - 1] and ".".join(parts[:i - 1]) in self.settings):
                return False
            if self.settings.get(path):  # a mapping of the user's keys (benchmarks.tasks, benchmarks.hparams)
                return True
        return True


def _names() -> Names:
    import argparse

    from pipeline.cli import build_parser
    from pipeline.settings.configs import PipelineConfig

    settings = {}

    def walk(section, prefix):
        for f in dataclasses.fields(section):
            value = getattr(section, f.name)
            settings[prefix + f.name] = isinstance(value, dict)
            if dataclasses.is_dataclass(value):
                walk(value, f"{prefix}{f.name}.")

    walk(PipelineConfig(), "")
    flags, arguments, parsers = set(), set(), [build_parser()]
    while parsers:
        for action in parsers.pop()._actions:
            flags.update(o for o in action.option_strings if o.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
            elif not action.option_strings:
                arguments.add(action.metavar or action.dest.upper())
    return Names(settings, flags, arguments)


def _path_first_classes(trees) -> Set[str]:
    """Error classes whose ``__init__`` takes the offending file first (``CorruptInputError(path, detail)``) and puts
    it in the message."""
    out = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (isinstance(item, ast.FunctionDef) and item.name == "__init__" and len(item.args.args) > 1
                            and item.args.args[1].arg == "path"):
                        out.add(node.name)
    return out


def what_it_names(parts: List[tuple], names: Names) -> List[str]:
    """What a message (:func:`_parts`) names, as ``kind: name`` strings; empty when it names nothing."""
    text = "".join(t if kind == "text" else "{}" for kind, t in parts)
    found = []
    for m in SETTING_TEXT.finditer(text):
        dotted = m.group(1).rstrip(".")
        if names.is_setting(dotted):
            found.append(f"setting: {dotted}")
    found += [f"setting: {m.group(1)}" for m in re.finditer(r"(?<![\w.-])([a-z_]+)(?:=| \{\})", text)
              if m.group(1) in names.settings]
    found += [f"flag: {m.group(0)}" for m in FLAG_TEXT.finditer(text) if m.group(0) in names.flags]
    found += [f"argument: {w}" for w in re.findall(r"\b[A-Z]+\b", text) if w in names.arguments]
    found += [f"environment variable: {m.group(0)}" for m in ENV_VAR_TEXT.finditer(text)]
    found += [f"file: {m.group(0).strip()}" for m in FILE_TEXT.finditer(text)]
    found += [f"file: {m.group(0)}" for m in PATH_NOUN.finditer(text)]
    if re.search(r"\bconfig (?:key\(s\): )?\{\}", text):
        found.append("setting: config {}")
    if re.search(r"\benvironment variable \{\}", text):
        found.append("environment variable: {}")
    if re.search(r"\benvironment \{\}", text):
        found.append("environment: {} (an entry of infra/environments.yaml, chosen with --env)")
    for kind, value in parts:
        if kind == "value":
            name = _value_name(value)
            if name in SETTING_CALLS:
                found.append(f"setting: {{{ast.unparse(value)}}}")
            elif PATH_VALUE.search(name):
                found.append(f"file: {{{ast.unparse(value)}}}")
    return found


def _outermost_functions(tree) -> Iterator[ast.AST]:
    """The module's functions and its classes' methods (each with what is nested in it); the module itself last, for
    the raises outside any function."""
    rest = []
    for node in tree.body:
        body = node.body if isinstance(node, ast.ClassDef) else [node]
        for item in body:
            (rest.append(item) if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield item
    yield ast.Module(body=rest, type_ignores=[])


def _path_names(scope: ast.AST) -> Set[str]:
    """Names a scope assigns a joined path to (``index = os.path.join(directory, "model.safetensors.index.json")``)."""
    return {target.id for node in ast.walk(scope) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and _name(node.value.func) in PATH_CALLS for target in node.targets if isinstance(target, ast.Name)}


def user_error_messages(tree, family: Set[str], path_first: Set[str]
                        ) -> Iterator[Tuple[str, int, List[tuple]]]:
    """(error class, line, :func:`_parts`) of every user error raised in ``tree`` with a message written out. The path
    argument of a class of ``path_first`` (:func:`_path_first_classes`), and a value the function assigned a joined
    path to, are the part ("value", path)."""
    for scope in _outermost_functions(tree):
        paths = _path_names(scope)
        for node in ast.walk(scope):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and _name(node.exc.func) in family:
                parts = [p for arg in node.exc.args for p in _parts(arg)]
                if _name(node.exc.func) in path_first and node.exc.args:
                    parts = [("value", ast.Name(id="path"))] + parts[len(_parts(node.exc.args[0])):]
                parts = [("value", ast.Name(id="path")) if kind == "value" and isinstance(v, ast.Name) and v.id in paths
                         else (kind, v) for kind, v in parts]
                if any(kind == "text" and t.strip() for kind, t in parts):
                    yield _name(node.exc.func), node.lineno, parts


def test_user_errors_name_a_setting_a_flag_or_a_file():
    trees = _trees()
    family = _user_error_classes(tree for _, tree in trees)
    path_first = _path_first_classes(tree for _, tree in trees)
    names = _names()
    assert {"vocab.kind", "benchmarks.tasks", "gate.accept"} <= set(names.settings)
    assert {"--set", "--vocab", "--output-dir"} <= names.flags
    nameless, seen = [], 0
    for path, tree in trees:
        for cls, line, parts in user_error_messages(tree, family, path_first):
            seen += 1
            text = "".join(t if kind == "text" else "{}" for kind, t in parts)
            if what_it_names(parts, names):
                continue
            nameless.append(f"{path}:{line}: {cls}: {text!r}")
    assert seen > 250  # the walk reached the raises of every package
    assert not nameless, ("user errors that name no setting, flag or file (name one, e.g. `vocab.kind`, `--vocab` "
                          "or the file):\n" + "\n".join(nameless))


def test_the_naming_check_passes_what_names_a_thing_and_catches_what_does_not():
    code = ast.parse('''
def f(path, count, directory, args, spec):
    index = os.path.join(directory, "model.safetensors.index.json")
    raise ConfigError("set vocab.kind to wordpiece for a vocab.txt")
    raise ConfigError(f"benchmarks.tasks.{name}.format must be jsonl")
    raise ConfigError("pass --set gate.accept=3 to let it through")
    raise ConfigError(f"--vocab {v}: pass a model file")
    raise InputError(f"{path}: not valid UTF-8")
    raise InputError(f"{args.dataset}: not a SQuAD file")
    raise InputError(f"{index}: not a safetensors index")
    raise InputError("the examples folder holds no Split-train/ folder")
    raise CorruptInputError(name, "empty input")
    raise ClusterError(f"environment variable {name} is not valid JSON")
    raise ConfigError(f"config {key('labels')} lists {label} twice")
    raise MissingInputError(f"output folder {out} exists")
    raise InputError("SRC and DST must be different directories")
    raise ConfigError("set vocab.kindd to wordpiece")
    raise ConfigError(f"pass --no-such-flag {v}")
    raise InputError(f"{count} records, e.g. the first, are empty")
    raise InputError(f"{what} holds {n} tokens")
    raise InputError(f"task {name}: index {index_number} is out of range")
''')
    names = _names()
    got = [bool(what_it_names(parts, names))
           for _, _, parts in user_error_messages(code, {"ConfigError", "InputError", "CorruptInputError",
                                                         "ClusterError", "MissingInputError"}, {"CorruptInputError"})]
    assert got == [True] * 13 + [False] * 5
