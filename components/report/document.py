"""The report as a document: sections of paragraphs, tables and images, and its two renderers.

One model, two writers: :func:`to_markdown` and :func:`to_html` (self-contained: inline CSS, images embedded as
data URIs, every value HTML-escaped). What the report says is built in :mod:`.sections`.
"""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import FrozenSet, List, Mapping, Optional, Sequence, Union

__all__ = ["Table", "Image", "Block", "Section", "Document", "to_markdown", "to_html"]


@dataclass(frozen=True)
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]


@dataclass(frozen=True)
class Image:
    path: str  # relative to the report, as the Markdown links it
    alt: str


Block = Union[str, Table, Image]  # a str is a paragraph


@dataclass(frozen=True)
class Section:
    heading: str
    blocks: List[Block]


@dataclass(frozen=True)
class Document:
    title: str
    sections: List[Section]
    # A table row whose first cell is one of these is a published reference row (italic in HTML).
    reference_labels: FrozenSet[str] = field(default_factory=frozenset)


def _md_cell(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def to_markdown(doc: Document) -> str:
    lines = [f"# {doc.title}", ""]
    for section in doc.sections:
        lines += [f"## {section.heading}", ""]
        for block in section.blocks:
            if isinstance(block, str):
                lines += [block, ""]
            elif isinstance(block, Table):
                lines.append("| " + " | ".join(_md_cell(h) for h in block.header) + " |")
                lines.append("|" + "|".join("---" for _ in block.header) + "|")
                for r in block.rows:
                    lines.append("| " + " | ".join(_md_cell(c) for c in r) + " |")
                lines.append("")
            elif isinstance(block, Image):
                lines += [f"![{block.alt}]({block.path})", ""]
    return "\n".join(lines)


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1em}th,td{border:1px solid #ccc;padding:4px 8px;"
        "text-align:left;vertical-align:top}th{background:#f3f3f3}tr.paper td{font-style:italic;color:#555}"
        "img{max-width:100%}")


def to_html(doc: Document, images: Optional[Mapping[str, bytes]] = None) -> str:
    """The page; ``images`` {Image.path: PNG bytes} are embedded, an image without bytes is left out."""
    e = html.escape
    images = images or {}
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{e(doc.title)}</title><style>{_CSS}</style></head><body>", f"<h1>{e(doc.title)}</h1>"]
    for section in doc.sections:
        out.append(f"<h2>{e(section.heading)}</h2>")
        for block in section.blocks:
            if isinstance(block, str):
                out.append(f"<p>{e(block)}</p>")
            elif isinstance(block, Table):
                out.append("<table><thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in block.header)
                           + "</tr></thead><tbody>")
                for r in block.rows:
                    cls = " class=\"paper\"" if str(r[0]) in doc.reference_labels else ""
                    out.append(f"<tr{cls}>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
                out.append("</tbody></table>")
            elif isinstance(block, Image) and images.get(block.path):
                data = base64.b64encode(images[block.path]).decode("ascii")
                out.append(f"<img alt=\"{e(block.alt)}\" src=\"data:image/png;base64,{data}\">")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
