"""The ALBERT encoder's named sizes (paper Table 1, the released v1/v2 settings) and its consistency checks.

Plain data, so ``model.*`` settings are checked when the configuration is built, before anything imports
TensorFlow; :class:`trainer.modeling_albert.AlbertConfig` builds from the same table and runs the same checks.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping

from config.schema import ConfigError

SHARING_CHOICES = ("all", "attention", "ffn", "none", "groups")
# Where each block normalises: "post" (the paper and the official code: LN(x + F(x))) or "pre" (x + F(LN(x)) and
# one LayerNorm after the last layer, Xiong et al. 2020), a named deviation.
LAYER_NORM_CHOICES = ("post", "pre")
# How the learned position embeddings start: "normal" (official: truncated normal, initializer_range) or
# "sinusoidal" (Vaswani et al. 2017's table at RMS initializer_range), a named deviation: a shift by k positions is
# a linear map of sinusoids, so attention can find neighbours from step 0. Both: docs/fidelity.md "Encoder settings beyond the
# official model".
POSITION_INIT_CHOICES = ("normal", "sinusoidal")

_V2_COMMON = dict(vocab_size=30000, max_position_embeddings=512, type_vocab_size=2, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, hidden_act="gelu_new", initializer_range=0.02,
                  layer_norm_eps=1e-12, num_hidden_groups=1, inner_group_num=1)
NAMED_CONFIGS: Dict[str, Dict[str, Any]] = {
    # Paper Table 1. Heads = H / 64 except xlarge, where the released models use 16 heads (paper: H / 64 = 32);
    # the head count does not change the parameter count.
    "albert-base": dict(_V2_COMMON, hidden_size=768, num_hidden_layers=12, embedding_size=128,
                        num_attention_heads=12, intermediate_size=3072, sharing="all"),
    "albert-large": dict(_V2_COMMON, hidden_size=1024, num_hidden_layers=24, embedding_size=128,
                         num_attention_heads=16, intermediate_size=4096, sharing="all"),
    "albert-xlarge": dict(_V2_COMMON, hidden_size=2048, num_hidden_layers=24, embedding_size=128,
                          num_attention_heads=16, intermediate_size=8192, sharing="all"),
    "albert-xxlarge": dict(_V2_COMMON, hidden_size=4096, num_hidden_layers=12, embedding_size=128,
                           num_attention_heads=64, intermediate_size=16384, sharing="all"),
    "bert-base": dict(_V2_COMMON, hidden_size=768, num_hidden_layers=12, embedding_size=768,
                      num_attention_heads=12, intermediate_size=3072, sharing="none"),
    "bert-large": dict(_V2_COMMON, hidden_size=1024, num_hidden_layers=24, embedding_size=1024,
                       num_attention_heads=16, intermediate_size=4096, sharing="none"),
    # Not from the paper: a CPU-friendly configuration for tests and smoke runs.
    "albert-tiny": dict(_V2_COMMON, hidden_size=128, num_hidden_layers=2, embedding_size=64,
                        num_attention_heads=2, intermediate_size=512, sharing="all"),
}

# What the released albert_config.json files (TF-Hub google/albert_<size>/1 and /2) set differently from the
# table above: v1 trained base/large/xlarge with dropout 0.1 (xxlarge v1 already without, paper section 4.8);
# v2 removed dropout from all sizes (release README). "gelu" is the official name of the tanh GELU.
_V1_DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, hidden_act="gelu")
_V1_NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, hidden_act="gelu")
_V2 = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, hidden_act="gelu_new")
RELEASE_OVERRIDES: Dict[str, Dict[str, Dict[str, Any]]] = {
    "albert-base": {"v1": _V1_DROPOUT, "v2": _V2},
    "albert-large": {"v1": _V1_DROPOUT, "v2": _V2},
    "albert-xlarge": {"v1": _V1_DROPOUT, "v2": _V2},
    "albert-xxlarge": {"v1": _V1_NO_DROPOUT, "v2": _V2},
}

def width_defaults(hidden_size: int) -> Dict[str, int]:
    """The sizes that follow from the hidden size H by the paper's Table 1 rule: H / 64 attention heads and a
    feed-forward layer of 4H (what ``model-info -H`` fills in when ``--heads`` / ``--ffn`` are not given)."""
    return {"num_attention_heads": max(1, hidden_size // 64), "intermediate_size": 4 * hidden_size}


_POSITIVE_INTS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "max_position_embeddings", "type_vocab_size", "num_hidden_groups",
                  "inner_group_num")


def named_fields(name: str) -> Dict[str, Any]:
    """The encoder fields of a named size (``albert-base``, ``albert-base-v1`` ...); ValueError for other names.

    A release suffix picks the released ``albert_config.json`` settings, which differ in dropout: ``-v1``
    (the paper's Table 2 models) has dropout 0.1 in base/large/xlarge and 0 in xxlarge, ``-v2`` has 0
    everywhere. A bare name (``albert-base``) is the v2 setting. Only the four released ALBERT sizes have
    releases, so ``bert-base-v1`` or ``albert-tiny-v2`` is an error rather than a silent alias.
    """
    key = name.lower().replace("_", "-")
    release = None
    if key.endswith("-v2") or key.endswith("-v1"):
        key, release = key[:-3], key[-2:]
    if key not in NAMED_CONFIGS:
        raise ConfigError(f"model.size (or model-info --size) {name!r} is unknown; known: {sorted(NAMED_CONFIGS)} "
                         f"(the released ALBERT sizes also as <name>-v1 / -v2)")
    fields = dict(NAMED_CONFIGS[key])
    if release is not None:
        if key not in RELEASE_OVERRIDES:
            raise ConfigError(f"model.size (or model-info --size) {name!r}: only {sorted(RELEASE_OVERRIDES)} were released "
                              "as -v1 / -v2")
        fields.update(RELEASE_OVERRIDES[key][release])
    return fields


def encoder_errors(c: Mapping[str, Any]) -> List[str]:
    """What is inconsistent in encoder fields ``c`` (AlbertConfig's names), one readable line each; [] if none.

    Sizes that are not positive integers are reported alone (the other checks would divide by them).
    """
    errors = []
    for name in _POSITIVE_INTS:
        value = c[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            errors.append(f"{name} must be a positive integer, got {value!r}")
    if errors:
        return errors
    if c["hidden_size"] % c["num_attention_heads"]:
        errors.append(f"hidden_size ({c['hidden_size']}) must be divisible by num_attention_heads "
                      f"({c['num_attention_heads']})")
    sharing, groups, layers = c["sharing"], c["num_hidden_groups"], c["num_hidden_layers"]
    if sharing not in SHARING_CHOICES:
        errors.append(f"sharing must be one of {SHARING_CHOICES}, got {sharing!r}")
    elif sharing == "groups":
        if groups > layers or layers % groups:
            errors.append(f"sharing='groups' needs num_hidden_groups ({groups}) to divide "
                          f"num_hidden_layers ({layers})")
    else:
        if groups != 1:
            errors.append(f"num_hidden_groups={groups} is only meaningful with sharing='groups' "
                          f"(sharing={sharing!r})")
        if sharing != "all" and c["inner_group_num"] != 1:
            errors.append(f"inner_group_num={c['inner_group_num']} needs sharing 'all' or 'groups' "
                          f"(sharing={sharing!r})")
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
        if not 0.0 <= float(c[name]) < 1.0:
            errors.append(f"{name} must be in [0, 1), got {c[name]!r}")
    if c["initializer_range"] <= 0:
        errors.append(f"initializer_range must be > 0, got {c['initializer_range']!r}")
    if c["layer_norm_eps"] <= 0:
        errors.append(f"layer_norm_eps must be > 0, got {c['layer_norm_eps']!r}")
    if c.get("layer_norm_position", "post") not in LAYER_NORM_CHOICES:
        errors.append(f"layer_norm_position must be one of {LAYER_NORM_CHOICES}, got {c['layer_norm_position']!r}")
    if c.get("position_embedding_init", "normal") not in POSITION_INIT_CHOICES:
        errors.append(f"position_embedding_init must be one of {POSITION_INIT_CHOICES}, "
                      f"got {c['position_embedding_init']!r}")
    projection = c.get("embedding_projection")
    if projection not in (None, True, False):
        errors.append(f"embedding_projection must be None, True or False, got {projection!r}")
    if projection is False and c["embedding_size"] != c["hidden_size"]:
        errors.append(f"embedding_projection=False needs embedding_size == hidden_size "
                      f"({c['embedding_size']} != {c['hidden_size']})")
    return errors
