"""The Trainer node's own settings: what ``custom_config["albert"]`` holds and how ``run_fn`` reads it back.

``{"model", "train", "seed"}`` as canonical JSON, ``train`` without ``num_train_steps``: the step count
travels as the node's own int parameter, so a compiled spec can declare it a pipeline runtime parameter
(``submit --parameters``) — a value inside a JSON string cannot be one. The Trainer's executor hands it to
``run_fn`` as ``TrainArgs.num_steps`` (``trainer/trainer_component.py``), and :func:`parse_settings` puts it
back into ``train``.
"""
from __future__ import annotations

import json
from typing import Optional, Tuple

from config.schema import canonical_json
from trainer.trainer_config import ModelConfig, TrainConfig


def trainer_settings(model: ModelConfig, train: TrainConfig, seed: int) -> str:
    """``custom_config["albert"]`` for these sections (``num_train_steps`` left out, see the module)."""
    t = train.to_dict()
    t.pop("num_train_steps")
    return canonical_json({"model": model.to_dict(), "train": t, "seed": int(seed)})


def parse_settings(text: str, num_train_steps: Optional[int]) -> Tuple[ModelConfig, TrainConfig, int]:
    """The sections and seed of :func:`trainer_settings`' text, with ``num_train_steps`` put back (validated)."""
    raw = json.loads(text)
    model = ModelConfig.from_dict(raw["model"], "model.")
    t = dict(raw["train"])
    if num_train_steps is not None:
        t["num_train_steps"] = int(num_train_steps)
    train = TrainConfig.from_dict(t, "train.")
    return model, train.validate(), int(raw["seed"])
