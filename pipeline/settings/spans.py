"""Data locations that change over time: TFX's span patterns, resolved when a run starts, and folder fingerprints.

A data location (``corpus.wikipedia_dir``, ``corpus.books_dir``, ``benchmarks.glue_dir`` …) may name its folders
with TFX's patterns (``tfx/components/example_gen/utils.py``): ``{SPAN}`` (or ``{SPAN:n}``, n digits), optionally
``{VERSION}`` (``{VERSION:n}``), or a date ``{YYYY}{MM}{DD}`` (its span is the day's number since 1970-01-01, as TFX
counts). The run reads the latest span (its latest version), or the span ``data.span`` names, or with
``data.span_window`` = N the N latest spans (corpus locations only: a benchmark reads one folder).

Every resolved folder is fingerprinted: its files' relative names, sizes and modification times (on ``gs://`` an
object rewritten in place gets a new time), hashed. The Importer of the location records the folder, the span(s),
the version and the fingerprint as its artifact's custom properties, and TFX's importer reuses an artifact only
when the URI, type and all of these match: new data, new artifact, and every node downstream runs; the same data,
the same artifact, and every node downstream is a cache hit. A folder changed in place is read, never served
from the cache.

Pure and light: local paths go through ``os``; a path with a scheme (``gs://``) through Beam's ``FileSystems``
(imported then), the filesystem layer the Beam nodes read the same data with. An object store has no folders: a
pattern's folders there are the prefixes of the objects under them, and a modification time is the object's
``updated`` time, which Beam gives in seconds to the microsecond (kept as nanoseconds, rounded to the microsecond).
"""
from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from config.errors import MissingInputError
from config.schema import ConfigError

__all__ = ["Snapshot", "has_pattern", "resolve", "resolve_all", "consumer_values", "fingerprint", "describe_change",
           "LISTING_LIMIT"]

_TOKEN = re.compile(r"\{(SPAN|VERSION)(?::(\d+))?\}|\{(YYYY|MM|DD)\}")
_EPOCH = datetime.date(1970, 1, 1)
LISTING_LIMIT = 2000  # files whose listing an artifact keeps (for `plan`'s "N files added"); beyond: counts only


def has_pattern(location: Optional[str]) -> bool:
    return bool(location) and _TOKEN.search(location) is not None


@dataclass(frozen=True)
class Snapshot:
    """What one data location resolved to when the run started."""

    location: str  # as configured (a pattern or a folder)
    uri: str  # the folder the Importer registers: the span's folder, or the common parent of a window's
    folders: Tuple[str, ...]  # the folders read, relative to ``uri`` ("" for ``uri`` itself)
    spans: Tuple[int, ...] = ()  # () without a pattern
    version: Optional[int] = None
    fingerprint: str = ""
    num_files: int = 0
    num_bytes: int = 0
    listing: Dict[str, List[int]] = field(default_factory=dict)  # relative path → [bytes, mtime ns]

    def properties(self) -> Dict[str, Any]:
        """The Importer's custom properties (TFX's importer takes int and str values)."""
        out: Dict[str, Any] = {"data_fingerprint": self.fingerprint, "data_files": self.num_files,
                               "data_bytes": self.num_bytes, "data_location": self.location}
        if self.spans:
            out["span"] = self.spans[-1]
            out["spans"] = json.dumps(list(self.spans))
            out["folders"] = json.dumps(list(self.folders))
        if self.version is not None:
            out["version"] = self.version
        if len(self.listing) <= LISTING_LIMIT:
            out["data_listing"] = json.dumps(self.listing, sort_keys=True, separators=(",", ":"))
        return out

    def summary(self) -> Dict[str, Any]:
        """What a node reading this location is given (its ``data_snapshot`` parameter): where the data is, which
        folders under it, and its fingerprint. Equal exactly when the data is."""
        return {"location": self.location, "uri": self.uri, "folders": list(self.folders), "spans": list(self.spans),
                "version": self.version, "fingerprint": self.fingerprint, "files": self.num_files,
                "bytes": self.num_bytes}


def _is_uri(path: str) -> bool:
    return "://" in path


def _walk(folder: str) -> Dict[str, List[int]]:
    """relative path → [bytes, mtime ns] of every file under ``folder``."""
    out: Dict[str, List[int]] = {}
    if _is_uri(folder):
        prefix = folder.rstrip("/") + "/"
        for meta in _match(prefix + "**"):
            if not meta.path.endswith("/"):  # a zero-byte "folder" placeholder is no file
                out[meta.path[len(prefix):]] = [int(meta.size_in_bytes), _mtime_ns(meta.last_updated_in_seconds)]
        return out
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            stat = os.stat(path)
            out[os.path.relpath(path, folder).replace(os.sep, "/")] = [stat.st_size, stat.st_mtime_ns]
    return out


class _CannotList(Exception):
    """A location with a scheme that this machine cannot list (:func:`resolve` names the setting)."""


def _match(pattern: str) -> list:
    """Beam's ``FileMetadata`` of every object matching ``pattern`` (``*`` within a path segment, ``**`` across).

    On Google Cloud Storage the credentials are looked up first: without any, Beam's client retries for two minutes
    before it fails, so a machine without them (a laptop, CI) gets the reason at once instead."""
    from apache_beam.io.filesystem import BeamIOError  # lazy: apache_beam (1.7 s)
    from apache_beam.io.filesystems import FileSystems  # lazy: apache_beam (1.7 s)
    from apache_beam.io.gcp.gcsfilesystem import GCSFileSystem  # lazy: apache_beam (1.7 s)

    if isinstance(FileSystems.get_filesystem(pattern), GCSFileSystem):
        import google.auth  # lazy: on one branch; google.auth (0.006 s)
        from google.auth.exceptions import DefaultCredentialsError  # lazy: on one branch; google.auth (0.006 s)

        try:
            google.auth.default()
        except DefaultCredentialsError:
            raise _CannotList("this machine has no Google Cloud credentials (`gcloud auth application-default "
                              "login`, or GOOGLE_APPLICATION_CREDENTIALS)") from None
    try:
        return FileSystems.match([pattern])[0].metadata_list
    except BeamIOError as exc:
        reasons = getattr(exc, "exception_details", None) or {}
        raise _CannotList("; ".join(str(r).splitlines()[0][:200] for r in reasons.values()) or str(exc)[:200]) from None


def _mtime_ns(seconds: Optional[float]) -> int:
    return int(round((seconds or 0.0) * 1_000_000)) * 1000


def fingerprint(listing: Dict[str, List[int]]) -> str:
    """sha256 of the sorted ``name, bytes, mtime`` lines: equal exactly when no file was added, removed or changed."""
    h = hashlib.sha256()
    for name in sorted(listing):
        size, mtime = listing[name]
        h.update(f"{name}\t{size}\t{mtime}\n".encode())
    return h.hexdigest()


def _glob(pattern: str, regex: str) -> List[str]:
    """The folders matching ``pattern`` (``*`` for each token) whose path matches ``regex``. On a URI, the folders
    holding at least one object (an object store has no others)."""
    if _is_uri(pattern):
        folder = re.compile(regex + "(?=/)")
        found = {m.group(0) for m in (folder.match(meta.path) for meta in _match(pattern.rstrip("/") + "/**")) if m}
        return sorted(found)

    return [p for p in glob.glob(pattern) if os.path.isdir(p)]


def _candidates(location: str) -> List[Tuple[int, Optional[int], str]]:
    """(span, version, folder) of every folder the pattern matches."""
    regex, groups = "", []
    pos = 0
    for m in _TOKEN.finditer(location):
        regex += re.escape(location[pos:m.start()])
        name = m.group(1) or m.group(3)
        digits = m.group(2) or {"YYYY": "4", "MM": "2", "DD": "2"}.get(name)
        regex += f"(\\d{{{digits}}})" if digits else r"(\d+)"
        groups.append(name)
        pos = m.end()
    regex += re.escape(location[pos:])
    found = []
    for folder in _glob(_TOKEN.sub("*", location), regex):
        m = re.fullmatch(regex, folder.rstrip("/"))
        if m is None:
            continue
        values = dict(zip(groups, (int(v) for v in m.groups())))
        if "YYYY" in values:
            try:
                day = datetime.date(values["YYYY"], values.get("MM", 1), values.get("DD", 1))
            except ValueError:
                continue
            span = (day - _EPOCH).days
        else:
            span = values.get("SPAN", 0)
        found.append((span, values.get("VERSION"), folder.rstrip("/")))
    return found


def _check_pattern(setting: str, location: str) -> None:
    names = [m.group(1) or m.group(3) for m in _TOKEN.finditer(location)]
    has_date = any(n in ("YYYY", "MM", "DD") for n in names)
    if has_date and "SPAN" in names:
        raise ConfigError(f"config {setting}={location!r} is invalid: {{SPAN}} and a date {{YYYY}}{{MM}}{{DD}} "
                          "cannot both name the span")
    if has_date and not all(n in names for n in ("YYYY", "MM", "DD")):
        raise ConfigError(f"config {setting}={location!r} is invalid: a date span needs {{YYYY}}, {{MM}} and {{DD}}")
    if "VERSION" in names and "SPAN" not in names and not has_date:
        raise ConfigError(f"config {setting}={location!r} is invalid: {{VERSION}} needs a span ({{SPAN}} or a date)")
    if any(names.count(n) > 1 for n in set(names)):
        raise ConfigError(f"config {setting}={location!r} is invalid: each of {{SPAN}}, {{VERSION}}, {{YYYY}}, {{MM}}, "
                          "{DD} at most once")


def resolve(setting: str, location: str, *, span: int = 0, window: int = 1) -> Snapshot:
    """The folder(s) ``location`` names now, fingerprinted. ``span``: a fixed span (0: the latest); ``window``: how
    many of the latest spans (from ``span`` back, when fixed). A pattern that matches no folder, or a fixed span
    that is not there, is a :class:`MissingInputError` naming the setting and the spans there are; so is a location
    with a scheme that cannot be listed here (no credentials, no access)."""
    try:
        return _resolve(setting, location, span, window)
    except _CannotList as exc:
        raise MissingInputError(f"config {setting}={location!r}: cannot be listed here: {exc}") from None


def _resolve(setting: str, location: str, span: int, window: int) -> Snapshot:
    if not has_pattern(location):
        listing = _walk(location)
        return Snapshot(location, location.rstrip("/") or location, ("",), fingerprint=fingerprint(listing),
                        num_files=len(listing), num_bytes=sum(s for s, _ in listing.values()), listing=listing)
    _check_pattern(setting, location)
    found = _candidates(location)
    if not found:
        raise MissingInputError(f"config {setting}={location!r}: no folder matches the pattern")
    spans = sorted({s for s, _, _ in found})
    last = span or spans[-1]
    if last not in spans:
        raise MissingInputError(f"config {setting}={location!r}: no span {span} (data.span); there are spans "
                                f"{', '.join(map(str, spans))}")
    chosen = [s for s in spans if s <= last][-window:]
    picked = []
    for s in chosen:  # each span's latest version
        picked.append(max((f for f in found if f[0] == s), key=lambda f: (f[1] or 0, f[2])))
    folders = [f[2] for f in picked]
    uri = folders[0] if len(folders) == 1 else _common_folder(folders)
    listing: Dict[str, List[int]] = {}
    relative = []
    for folder in folders:
        rel = "" if folder == uri else posixpath.relpath(folder, uri)
        relative.append(rel)
        for name, value in _walk(folder).items():
            listing[posixpath.join(rel, name) if rel else name] = value
    return Snapshot(location, uri, tuple(relative), tuple(chosen), picked[-1][1], fingerprint(listing),
                    len(listing), sum(s for s, _ in listing.values()), listing)


def resolve_all(locations: Dict[str, Tuple[str, str]], *, span: int, window: int,
                corpus_keys: Sequence[str]) -> Dict[str, Snapshot]:
    """Every data location of a run, resolved when it starts: data key → :class:`Snapshot`. ``locations``: data key →
    (its config key, its location); ``window`` applies to the corpus's keys (a benchmark reads one folder)."""
    return {key: resolve(setting, location, span=span, window=window if key in corpus_keys else 1)
            for key, (setting, location) in locations.items()}


def consumer_values(summaries: Dict[str, Dict[str, Any]],
                    consumers: Dict[str, Dict[str, str]]) -> Dict[str, str]:
    """Node id → its ``data_snapshot`` parameter: the canonical JSON of {input key: :meth:`Snapshot.summary`} of the
    data locations it reads (``consumers``: node id → {input key: data key}). A node's cache key thus holds the
    fingerprint of every folder it reads, however the backend's importer matches artifacts."""
    return {node: json.dumps({name: summaries[key] for name, key in inputs.items()}, sort_keys=True,
                             separators=(",", ":"))
            for node, inputs in consumers.items()}


def _common_folder(folders: Sequence[str]) -> str:
    """The deepest folder holding every one of ``folders`` (local paths or URIs of one bucket)."""
    scheme, _, _ = folders[0].partition("://") if _is_uri(folders[0]) else ("", "", "")
    strip = len(scheme) + 3 if scheme else 0
    common = posixpath.commonpath([f[strip:] for f in folders])
    return (scheme + "://" if scheme else "") + common


def describe_change(key: str, new: Dict[str, Any], old: Optional[Dict[str, Any]]) -> str:
    """``plan``'s line for one data location: its Importer's properties now (:meth:`Snapshot.properties`) against
    those of the artifact the last run read (None: never read)."""
    if old is None:
        return f"{key}: first read" + (f" (span {new['span']})" if "span" in new else "")
    if "span" in new and old.get("span") != new["span"]:
        return f"{key}: new span {new['span']} (last run read {old.get('span', 'no span')})"
    if old.get("data_fingerprint") == new["data_fingerprint"]:
        return f"{key}: unchanged"
    if not new.get("data_listing") or not old.get("data_listing"):
        return (f"{key}: changed in place ({new['data_files']} files, {new['data_bytes']} bytes; before "
                f"{old.get('data_files')} files, {old.get('data_bytes')} bytes)")
    now, before = json.loads(new["data_listing"]), json.loads(old["data_listing"])
    added = sorted(set(now) - set(before))
    removed = sorted(set(before) - set(now))
    changed = sorted(n for n in set(now) & set(before) if now[n] != before[n])
    parts = [f"{len(names)} file{'s' if len(names) != 1 else ''} {what}" for names, what in
             ((added, "added"), (removed, "removed"), (changed, "changed")) if names]
    return f"{key}: {', '.join(parts)} since the last run"
