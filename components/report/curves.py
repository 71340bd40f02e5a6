"""The report's plots, each one PNG: the pretraining curves (MLM and sentence-task loss and accuracy vs step, train
and eval) and the data gate's distributions (document lengths and token frequencies, the span over its baseline)."""
from __future__ import annotations

import io
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from components.file_io import write
from trainer.formatting import number

__all__ = ["CURVES_PNG", "DATA_GATE_PNG", "plot_curves", "plot_data_gate"]

CURVES_PNG = "pretraining_curves.png"
DATA_GATE_PNG = "data_gate.png"
# Each figure's margins and gaps (figure fractions), fixed for its fixed size and labels: ``tight_layout`` found
# about the same ones by drawing the whole figure once more, 40 % of each plot's time (docs/performance.md).
CURVES_MARGINS = dict(left=0.07, right=0.98, bottom=0.08, top=0.91, wspace=0.2, hspace=0.32)
DATA_GATE_MARGINS = dict(left=0.075, right=0.985, bottom=0.14, top=0.83, wspace=0.2)


def plot_curves(history: Sequence[Mapping[str, object]], path: str, sentence: str = "SOP") -> bool:
    """2×2 panels (MLM loss / accuracy, SOP loss / accuracy), train and eval; False if nothing to draw.

    A step logged twice (a resumed run re-logs from its checkpoint) keeps its last value."""
    panels = (("mlm_loss", "MLM loss"), ("mlm_accuracy", "MLM accuracy"),
              ("sentence_loss", f"{sentence} loss"), ("sentence_accuracy", f"{sentence} accuracy"))
    points: Dict[Tuple[str, str], Dict[float, float]] = {}
    for row in history:
        step = number(row.get("step"))
        if step is None:
            continue
        split = str(row.get("split", "train"))
        for key, _ in panels:
            v = number(row.get(key))
            if v is not None:
                points.setdefault((key, split), {})[step] = v
    if not points:
        return False
    series = {k: ([x for x in sorted(d)], [d[x] for x in sorted(d)]) for k, d in points.items()}
    import matplotlib  # lazy: matplotlib (0.3 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib (0.5 s)

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), gridspec_kw=CURVES_MARGINS)
    for ax, (key, title) in zip(axes.ravel(), panels):
        drawn = False
        for split, style in (("train", "-"), ("eval", "o--")):
            if (key, split) in series:
                xs, ys = series[(key, split)]
                ax.plot(xs, ys, style, label=split, markersize=4)
                drawn = True
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("Pretraining curves")
    _save(fig, plt, path)
    return True


def _pyplot():
    import matplotlib  # lazy: matplotlib (0.3 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib (0.5 s)

    return plt


def _save(fig, plt, path: str) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    write(path, buf.getvalue(), binary=True)


def plot_data_gate(statistics: Optional[Mapping[str, Any]], baseline: Optional[Mapping[str, Any]], path: str) -> bool:
    """Two panels from the data gate's statistics (``SpanStats.summary``), the span over its baseline's: the share
    of documents per words-per-document bucket (power-of-two buckets: a step per bucket, on a log axis) and the
    content tokens' rank-frequency curve (the share of all tokens at each rank, log-log). False without statistics
    or documents."""
    if not statistics or not statistics.get("documents"):
        return False
    plt = _pyplot()
    fig, (lengths, ranks) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw=DATA_GATE_MARGINS)
    for s, style, who in ((statistics, "-", "span"), (baseline, "--", "baseline span")):
        if not s or not s.get("documents"):
            continue
        label = f"{who} {s['span']}"
        edges, counts = s["words_histogram"]["edges"], s["words_histogram"]["documents"]
        # Bucket i holds [edges[i], edges[i+1]); plotted from 1 word up (a log axis has no 0).
        # Empty buckets at either end are left out.
        used = [i for i, c in enumerate(counts) if c]
        first, last = used[0], used[-1] + 1
        xs = [max(e, 0.5) for e in (list(edges) + [2 * edges[-1]])[first:last + 1]]
        shares = [c / s["documents"] for c in counts[first:last]]
        lengths.stairs(shares, xs, label=label, linestyle=style)
        if s.get("token_ranks") and s.get("tokens"):
            ranks.plot([r for r, _ in s["token_ranks"]], [c / s["tokens"] for _, c in s["token_ranks"]], style,
                       label=label)
    lengths.set_xscale("log", base=2)
    lengths.set_xlabel("words per document")
    lengths.set_ylabel("share of documents")
    lengths.set_title("Document lengths")
    ranks.set_xscale("log")
    ranks.set_yscale("log")
    ranks.set_xlabel("rank of the content token")
    ranks.set_ylabel("share of all tokens")
    ranks.set_title("Token frequencies")
    for ax in (lengths, ranks):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Data gate: this span over its baseline" if baseline else "Data gate: this span")
    _save(fig, plt, path)
    return True
