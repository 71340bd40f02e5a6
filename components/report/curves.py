"""The pretraining curves: MLM and sentence-task loss and accuracy vs step, train and eval, as one PNG."""
from __future__ import annotations

import io
from typing import Dict, Mapping, Sequence, Tuple

from components.file_io import write
from trainer.formatting import number

__all__ = ["CURVES_PNG", "plot_curves"]

CURVES_PNG = "pretraining_curves.png"


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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
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
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    write(path, buf.getvalue(), binary=True)
    return True
