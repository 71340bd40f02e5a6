"""ALBERT (Lan et al., 2020) in tf_keras (Keras 2): config, layers and pretraining model (losses: ``trainer.losses``).

Names follow the paper and the official release (google-research/ALBERT):

* ``E`` = ``embedding_size``, ``H`` = ``hidden_size``, ``L`` = ``num_hidden_layers``, ``V`` = ``vocab_size``.
* Factorised embeddings (paper 3.1): V x E word embeddings, projected E -> H by ``embedding_hidden_mapping_in``.
* Cross-layer parameter sharing (paper 3.1 / 4.5), :attr:`AlbertConfig.sharing`:

  ``all``        one block reused by all L layers (ALBERT default; official ``num_hidden_groups=1``).
  ``attention``  one attention sub-layer shared, a separate FFN per layer.
  ``ffn``        one FFN sub-layer shared, a separate attention per layer.
  ``none``       L independent blocks (BERT style).
  ``groups``     ``num_hidden_groups`` groups; layer ``i`` uses group ``int(i / L * G)`` (official formula).

  In every strategy a group runs ``inner_group_num`` blocks (official; only ``all``/``groups`` allow > 1).
  The attention sub-layer owns ``LayerNorm`` (after the attention residual) and the FFN sub-layer owns
  ``LayerNorm_1`` (after the FFN residual), so "share attention" shares the first LayerNorm too.
* The block is post-LN: ``x = LN(x + Attn(x)); x = LN_1(x + FFN(x))`` with the official additive mask
  ``(1 - input_mask) * -10000``. ``layer_norm_position="pre"`` (not in the paper; docs/fidelity.md "Encoder settings beyond the
  official model") gives ``x = x + Attn(LN(x)); x = x + FFN(LN_1(x))`` with the same variables plus the encoder's
  ``final_LayerNorm``; ``position_embedding_init="sinusoidal"`` starts the learned position table as sinusoids.
* Heads: MLM (dense H -> E, GELU, LayerNorm, decoder tied to the word embeddings + ``output_bias``, only at
  ``masked_lm_positions``) and a 2-way sentence head (SOP or NSP) on the tanh pooler of ``[CLS]``.

Embedding projection: the official ALBERT code applies ``embedding_hidden_mapping_in`` only when E != H
(``if input_width != hidden_size``), so with E == H (BERT style) there is no projection. That is the default here
(``embedding_projection=None`` = "auto") and it is what makes BERT base come out at 109.1M and BERT large at 334.6M
parameters, and the paper's E=768 rows (Tables 3/4) at 108M/83M/57M/31M. Hugging Face's ALBERT always projects; set
``embedding_projection=True`` to match it for E == H (then BERT base would be 109.7M, BERT large 335.7M).

Mixed precision (``tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")``): matmuls run in the compute
dtype; LayerNorm, the attention softmax and all logits are float32, so ``sequence_output``, ``mlm_logits`` and
``sentence_logits`` are float32 under every policy. Everything is XLA-compilable (static shapes, no Python control
flow on tensors).

Activation names: ``gelu_new`` and ``gelu`` are the tanh approximation. This follows the official ALBERT code, whose
``albert_config.json`` files say ``"gelu"`` and whose ``gelu`` is the tanh approximation (Hugging Face calls the
same function ``gelu_new``); use ``gelu_exact`` for the erf form.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import math
from typing import Any, Dict, Mapping, Optional

import numpy as np
import tensorflow as tf
import tf_keras

from config.encoder import NAMED_CONFIGS, RELEASE_OVERRIDES, encoder_errors, named_fields  # noqa: F401
from config.encoder import SHARING_CHOICES
from config.errors import InputError
from config.schema import ConfigError

__all__ = [
    "AlbertConfig",
    "AlbertEmbeddings",
    "AlbertAttention",
    "AlbertFeedForward",
    "AlbertTransformerBlock",
    "AlbertLayerGroup",
    "AlbertEncoder",
    "AlbertModel",
    "AlbertMLMHead",
    "AlbertForPreTraining",
    "count_parameters",
    "get_activation",
    "SHARING_STRATEGIES",
    "NAMED_CONFIGS",
    "RELEASE_OVERRIDES",
]

SHARING_STRATEGIES = SHARING_CHOICES  # model.sharing, defined once in config/encoder.py

# Keys of the official albert_config.json that this implementation does not use. They are accepted by
# `AlbertConfig.from_dict` only at their default (no-op) value.
_OFFICIAL_UNUSED_KEYS = {
    "net_structure_type": 0,
    "layers_to_keep": [],
    "gap_size": 0,
    "num_memory_blocks": 0,
    "down_scale_factor": 1,
}


# --------------------------------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class AlbertConfig:
    """Hyper-parameters of an ALBERT (or BERT-style) encoder. Field names are the official albert_config.json keys.

    Extra fields (not in the official json): ``layer_norm_eps``, ``sharing``, ``embedding_projection``
    (None = official behaviour: project E -> H iff E != H; True/False force it), and the named deviations
    ``layer_norm_position`` (``post``, official, or ``pre``) and ``position_embedding_init`` (``normal``, official,
    or ``sinusoidal``), each written only when not official.
    """

    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    sharing: str = "all"
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    embedding_projection: Optional[bool] = None
    layer_norm_position: str = "post"
    position_embedding_init: str = "normal"

    def __post_init__(self):
        self.validate()

    # ---- validation -------------------------------------------------------------------------------------------
    def validate(self) -> "AlbertConfig":
        """Raise :class:`config.ConfigError` (a ``ValueError``) with a readable message when the configuration is
        inconsistent: its values are the user's settings or a config file's."""
        errors = encoder_errors(dataclasses.asdict(self))  # the size checks, shared with config (config/encoder.py)
        if self.hidden_act not in _ACTIVATIONS:
            errors.append(f"hidden_act must be one of {sorted(_ACTIVATIONS)}, got {self.hidden_act!r}")
        if errors:
            raise ConfigError("invalid ALBERT configuration (model.*, or a model folder's albert_config.json): "
                              + "; ".join(errors))
        return self

    # ---- derived quantities -----------------------------------------------------------------------------------
    @property
    def uses_embedding_projection(self) -> bool:
        """Whether the E -> H ``embedding_hidden_mapping_in`` dense exists (official: iff E != H)."""
        if self.embedding_projection is None:
            return self.embedding_size != self.hidden_size
        return bool(self.embedding_projection)

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def num_groups(self) -> int:
        """Number of distinct layer groups the encoder builds (``none``/``attention``/``ffn``: one per layer)."""
        if self.sharing == "all":
            return 1
        if self.sharing == "groups":
            return self.num_hidden_groups
        return self.num_hidden_layers

    def group_index(self, layer_index: int) -> int:
        """Group used by layer ``layer_index`` (official formula ``int(i / L * G)``)."""
        return int(layer_index / self.num_hidden_layers * self.num_groups)

    # ---- named configurations ---------------------------------------------------------------------------------
    @classmethod
    def named(cls, name: str, **overrides) -> "AlbertConfig":
        """A configuration from paper Table 1 (or ``albert-tiny`` for tests), with optional field overrides.

        A release suffix picks the released ``albert_config.json`` settings, which differ in dropout: ``-v1``
        (the paper's Table 2 models) has dropout 0.1 in base/large/xlarge and 0 in xxlarge, ``-v2`` has 0
        everywhere. A bare name (``albert-base``) is the v2 setting. Only the four released ALBERT sizes have
        releases, so ``bert-base-v1`` or ``albert-tiny-v2`` is an error rather than a silent alias.
        """
        fields = named_fields(name)  # the table lives in config/encoder.py
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"Unknown AlbertConfig field(s) in overrides: {sorted(unknown)}")
        fields.update(overrides)
        return cls(**fields)

    # ---- (de)serialisation ------------------------------------------------------------------------------------
    def to_dict(self, official: bool = False) -> Dict[str, Any]:
        """Plain dict with the official key names. ``official=True`` also writes the official-only keys
        (``net_structure_type`` ...) at their defaults so that the original ALBERT code can read the file. The
        named deviations appear only when set; a pre-LN model has no official checkpoint layout
        (``trainer/checkpoint_interop.py`` refuses it)."""
        out = dataclasses.asdict(self)
        if self.layer_norm_position == "post":
            del out["layer_norm_position"]  # the official layout: files stay as they were before the option
        if self.position_embedding_init == "normal":
            del out["position_embedding_init"]  # only the start differs; the trained weights are official-shaped
        if official:
            out.update(copy.deepcopy(_OFFICIAL_UNUSED_KEYS))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AlbertConfig":
        """Inverse of :meth:`to_dict`; also reads official ``albert_config.json`` files.

        Without a ``sharing`` key (official files) sharing is ``all`` when ``num_hidden_groups == 1`` else ``groups``.
        """
        d = dict(d)
        field_names = {f.name for f in dataclasses.fields(cls)}
        for key, default in _OFFICIAL_UNUSED_KEYS.items():
            if key in d:
                value = d.pop(key)
                if value != default and not (key == "layers_to_keep" and not value):
                    raise ValueError(f"Official config key {key}={value!r} is not supported (only {default!r})")
        unknown = set(d) - field_names
        if unknown:
            raise ValueError(f"Unknown AlbertConfig key(s): {sorted(unknown)}")
        if "sharing" not in d:
            d["sharing"] = "all" if int(d.get("num_hidden_groups", 1)) == 1 else "groups"
        return cls(**d)

    def to_json_string(self, official: bool = False) -> str:
        return json.dumps(self.to_dict(official=official), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str, official: bool = False) -> None:
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(self.to_json_string(official=official))

    @classmethod
    def from_json_file(cls, path: str) -> "AlbertConfig":
        """A config file (ours or an official ``albert_config.json``); one that is not JSON, not an object or not
        a valid config is an :class:`config.InputError` naming the file."""
        try:
            with tf.io.gfile.GFile(path, "r") as f:
                d = json.loads(f.read())
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise InputError(f"{path}: not a valid JSON config ({exc})") from None
        if not isinstance(d, dict):
            raise InputError(f"{path}: an ALBERT config must be a JSON object, got {type(d).__name__}")
        try:
            return cls.from_dict(d)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{path}: not a valid ALBERT config: {exc}") from exc


# --------------------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------------------
def _gelu_tanh(x):
    return tf.nn.gelu(x, approximate=True)


def _gelu_exact(x):
    return tf.nn.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu_new": _gelu_tanh,
    "gelu": _gelu_tanh,  # official ALBERT/BERT code: "gelu" is the tanh approximation
    "gelu_tanh": _gelu_tanh,
    "gelu_exact": _gelu_exact,
    "relu": tf.nn.relu,
    "tanh": tf.math.tanh,
    "linear": tf.identity,
}


def get_activation(name: str):
    """Activation function for a config's ``hidden_act``."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"Unknown activation {name!r}; known: {sorted(_ACTIVATIONS)}") from None


def _initializer(config: AlbertConfig):
    return tf_keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def _dense(units: int, config: AlbertConfig, name: str, activation=None, dtype=None):
    return tf_keras.layers.Dense(units, activation=activation, kernel_initializer=_initializer(config), name=name,
                                 dtype=dtype)


def _layer_norm(config: AlbertConfig, name: str):
    # float32 under every mixed-precision policy.
    return tf_keras.layers.LayerNormalization(axis=-1, epsilon=config.layer_norm_eps, name=name, dtype="float32")


def sinusoidal_table(positions: int, width: int, rms: float) -> np.ndarray:
    """[positions, width] sin/cos table (Vaswani et al. 2017, section 3.5) scaled to root-mean-square ``rms``."""
    pos = np.arange(positions, dtype=np.float64)[:, None]
    freq = 1.0 / 10000.0 ** (np.arange(0, width, 2, dtype=np.float64) / width)
    table = np.zeros([positions, width])
    table[:, 0::2] = np.sin(pos * freq)
    table[:, 1::2] = np.cos(pos * freq[: width // 2])
    return (table * rms / np.sqrt(np.mean(table ** 2))).astype(np.float32)


def attention_bias_from_mask(input_mask: tf.Tensor) -> tf.Tensor:
    """[B, T] 0/1 mask -> [B, 1, 1, T] float32 additive bias ``(1 - mask) * -10000`` (official)."""
    mask = tf.cast(input_mask, tf.float32)
    # expand_dims, not ``[:, tf.newaxis, tf.newaxis, :]``: LiteRT's builtin StridedSlice has no new-axis mask, and a
    # converted graph needing TF's kernel does not run in ai-edge-litert (trainer/portable_export.py).
    return tf.expand_dims(tf.expand_dims(1.0 - mask, 1), 1) * -10000.0


# --------------------------------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------------------------------
class AlbertEmbeddings(tf_keras.layers.Layer):
    """word (V x E) + position (P x E) + token type (2 x E) -> LayerNorm -> dropout -> dense E -> H.

    The E -> H projection (``embedding_hidden_mapping_in``, official name ``bert/encoder/...``) exists iff
    ``config.uses_embedding_projection`` (official: E != H).

    The layer itself is float32 under every policy (lookups, sums and LayerNorm in float32; its variables are plain
    float32 variables, which the tied MLM decoder reads); the projection dense follows the global policy.
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.config = config
        self.LayerNorm = _layer_norm(config, "LayerNorm")
        self.dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)
        self.embedding_hidden_mapping_in = (
            _dense(config.hidden_size, config, "embedding_hidden_mapping_in") if config.uses_embedding_projection
            else None)

    def build(self, input_shape=None):
        c = self.config
        self.word_embeddings = self.add_weight(
            "word_embeddings", shape=[c.vocab_size, c.embedding_size], initializer=_initializer(c))
        self.token_type_embeddings = self.add_weight(
            "token_type_embeddings", shape=[c.type_vocab_size, c.embedding_size], initializer=_initializer(c))
        position_init = _initializer(c)
        if c.position_embedding_init == "sinusoidal":  # RMS initializer_range (the truncated normal's: 0.88 x)
            table = sinusoidal_table(c.max_position_embeddings, c.embedding_size, c.initializer_range)
            position_init = tf_keras.initializers.Constant(table)
        self.position_embeddings = self.add_weight(
            "position_embeddings", shape=[c.max_position_embeddings, c.embedding_size], initializer=position_init)
        super().build(input_shape)

    def call(self, input_ids, segment_ids=None, training=False):
        input_ids = tf.cast(input_ids, tf.int32)
        seq_len = tf.shape(input_ids)[1]
        x = tf.gather(self.word_embeddings, input_ids)
        if segment_ids is None:
            segment_ids = tf.zeros_like(input_ids)
        x += tf.gather(self.token_type_embeddings, tf.cast(segment_ids, tf.int32))
        x += self.position_embeddings[tf.newaxis, :seq_len, :]
        x = self.LayerNorm(x)
        x = self.dropout(x, training=training)
        if self.embedding_hidden_mapping_in is not None:
            x = self.embedding_hidden_mapping_in(x)
        return x


class AlbertAttention(tf_keras.layers.Layer):
    """Multi-head self-attention sub-layer: ``LayerNorm(x + dropout(dense(softmax(QK^T/sqrt(d) + bias) V)))``.

    Official names: ``attention_1/self/{query,key,value}``, ``attention_1/output/dense`` and the block's ``LayerNorm``.
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        h = config.hidden_size
        self.query = _dense(h, config, "query")
        self.key = _dense(h, config, "key")
        self.value = _dense(h, config, "value")
        self.dense = _dense(h, config, "dense")
        self.LayerNorm = _layer_norm(config, "LayerNorm")
        self.attention_dropout = tf_keras.layers.Dropout(config.attention_probs_dropout_prob)
        self.output_dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)

    def _split_heads(self, x, batch, seq_len):
        x = tf.reshape(x, [batch, seq_len, self.config.num_attention_heads, self.config.head_size])
        return tf.transpose(x, [0, 2, 1, 3])  # [B, N, T, D]

    def _probs(self, x, attention_bias, batch, seq_len):
        """float32 [B, N, T, T] attention probabilities of the sub-layer's (normalised, if pre-LN) input ``x``."""
        q = self._split_heads(self.query(x), batch, seq_len)
        k = self._split_heads(self.key(x), batch, seq_len)
        q = q * tf.cast(1.0 / math.sqrt(self.config.head_size), q.dtype)
        scores = tf.cast(tf.einsum("bntd,bnsd->bnts", q, k), tf.float32)  # softmax in float32
        if attention_bias is not None:
            scores += tf.cast(attention_bias, tf.float32)
        return tf.nn.softmax(scores, axis=-1)

    def attention_probs(self, hidden_states, attention_bias=None):
        """The [B, N, T, T] probabilities this sub-layer applies to the block input ``hidden_states`` (inference;
        ``trainer/diagnostics.py`` reads them)."""
        shape = tf.shape(hidden_states)
        x = self.LayerNorm(hidden_states) if self.config.layer_norm_position == "pre" else hidden_states
        return self._probs(x, attention_bias, shape[0], shape[1])

    def call(self, hidden_states, attention_bias=None, training=False):
        shape = tf.shape(hidden_states)
        batch, seq_len = shape[0], shape[1]
        pre_ln = self.config.layer_norm_position == "pre"
        x = self.LayerNorm(hidden_states) if pre_ln else hidden_states
        probs = self._probs(x, attention_bias, batch, seq_len)
        v = self._split_heads(self.value(x), batch, seq_len)
        probs = self.attention_dropout(probs, training=training)
        context = tf.einsum("bnts,bnsd->bntd", tf.cast(probs, v.dtype), v)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [batch, seq_len, self.config.hidden_size])
        out = self.output_dropout(self.dense(context), training=training)
        residual = tf.cast(hidden_states, tf.float32) + tf.cast(out, tf.float32)
        return residual if pre_ln else self.LayerNorm(residual)


class AlbertFeedForward(tf_keras.layers.Layer):
    """FFN sub-layer: ``LayerNorm_1(x + dropout(dense_out(act(dense_in(x)))))``, H -> intermediate_size -> H.

    Official names: ``ffn_1/intermediate/dense``, ``ffn_1/intermediate/output/dense`` and ``LayerNorm_1``.
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.intermediate = _dense(config.intermediate_size, config, "intermediate",
                                   activation=get_activation(config.hidden_act))
        self.output_dense = _dense(config.hidden_size, config, "output")
        self.LayerNorm_1 = _layer_norm(config, "LayerNorm_1")
        self.dropout = tf_keras.layers.Dropout(config.hidden_dropout_prob)

    def call(self, hidden_states, training=False):
        pre_ln = self.config.layer_norm_position == "pre"
        out = self.output_dense(self.intermediate(self.LayerNorm_1(hidden_states) if pre_ln else hidden_states))
        out = self.dropout(out, training=training)
        residual = tf.cast(hidden_states, tf.float32) + tf.cast(out, tf.float32)
        return residual if pre_ln else self.LayerNorm_1(residual)


class AlbertTransformerBlock(tf_keras.layers.Layer):
    """Post-LN transformer block = attention sub-layer then FFN sub-layer.

    ``attention`` / ``ffn`` may be passed in to share a sub-layer between blocks (sharing 'attention' / 'ffn').
    """

    def __init__(self, config: AlbertConfig, attention: Optional[AlbertAttention] = None,
                 ffn: Optional[AlbertFeedForward] = None, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention if attention is not None else AlbertAttention(config, name="attention")
        self.ffn = ffn if ffn is not None else AlbertFeedForward(config, name="ffn")

    def call(self, hidden_states, attention_bias=None, training=False):
        x = self.attention(hidden_states, attention_bias, training=training)
        return self.ffn(x, training=training)


class AlbertLayerGroup(tf_keras.layers.Layer):
    """A group of ``inner_group_num`` blocks run in sequence (official ``group_g/inner_group_j``)."""

    def __init__(self, config: AlbertConfig, blocks=None, **kwargs):
        super().__init__(**kwargs)
        if blocks is None:
            blocks = [AlbertTransformerBlock(config, name=f"inner_group_{j}") for j in range(config.inner_group_num)]
        self.blocks = list(blocks)

    def call(self, hidden_states, attention_bias=None, training=False):
        for block in self.blocks:
            hidden_states = block(hidden_states, attention_bias, training=training)
        return hidden_states


class AlbertEncoder(tf_keras.layers.Layer):
    """L layers built from ``config.num_groups`` layer groups according to ``config.sharing``.

    ``self.groups[g]`` is an :class:`AlbertLayerGroup`; layer ``i`` runs ``self.groups[config.group_index(i)]``.
    For 'attention' / 'ffn' sharing every group holds one block and all blocks hold the same attention / FFN layer.
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        if config.sharing in ("all", "groups", "none"):
            self.groups = [AlbertLayerGroup(config, name=f"group_{g}") for g in range(config.num_groups)]
        else:
            shared_attention = AlbertAttention(config, name="attention") if config.sharing == "attention" else None
            shared_ffn = AlbertFeedForward(config, name="ffn") if config.sharing == "ffn" else None
            self.groups = [
                AlbertLayerGroup(config, name=f"group_{g}", blocks=[AlbertTransformerBlock(
                    config, attention=shared_attention, ffn=shared_ffn, name="inner_group_0")])
                for g in range(config.num_groups)]
        # Pre-LN leaves the residual stream unnormalised; this LayerNorm makes the last layer's output what the
        # heads and fine-tuning read (Xiong et al. 2020).
        self.final_LayerNorm = (_layer_norm(config, "final_LayerNorm") if config.layer_norm_position == "pre"
                                else None)

    @property
    def blocks(self):
        """All distinct blocks, in group order."""
        return [b for g in self.groups for b in g.blocks]

    def call(self, hidden_states, attention_bias=None, training=False, return_all_layers=False):
        all_layers = []
        for i in range(self.config.num_hidden_layers):
            hidden_states = self.groups[self.config.group_index(i)](hidden_states, attention_bias, training=training)
            all_layers.append(hidden_states)
        if self.final_LayerNorm is not None:
            all_layers[-1] = hidden_states = self.final_LayerNorm(hidden_states)
        return all_layers if return_all_layers else hidden_states


# --------------------------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------------------------
class AlbertModel(tf_keras.Model):
    """Embeddings + encoder + pooler.

    ``call({"input_ids", "input_mask", "segment_ids"}, training)`` -> ``{"sequence_output": [B, T, H] float32,
    "pooled_output": [B, H] float32}``. ``input_mask`` and ``segment_ids`` are optional (all ones / zeros).
    """

    def __init__(self, config: AlbertConfig, **kwargs):
        kwargs.setdefault("name", "albert")
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = AlbertEmbeddings(config, name="embeddings")
        self.encoder = AlbertEncoder(config, name="encoder")
        self.pooler = _dense(config.hidden_size, config, "pooler", activation="tanh")

    def call(self, inputs, training=False, return_all_layers=False):
        input_ids = tf.cast(inputs["input_ids"], tf.int32)
        input_mask = inputs.get("input_mask")
        if input_mask is None:
            input_mask = tf.ones_like(input_ids)
        x = self.embeddings(input_ids, inputs.get("segment_ids"), training=training)
        layers = self.encoder(x, attention_bias_from_mask(input_mask), training=training, return_all_layers=True)
        sequence_output = tf.cast(layers[-1], tf.float32)
        pooled_output = tf.cast(self.pooler(sequence_output[:, 0, :]), tf.float32)
        outputs = {"sequence_output": sequence_output, "pooled_output": pooled_output}
        if return_all_layers:
            outputs["all_layers"] = [tf.cast(h, tf.float32) for h in layers]
        return outputs

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)

    def dummy_inputs(self, batch_size: int = 1, seq_len: int = 8):
        ids = tf.ones([batch_size, seq_len], tf.int32)
        return {"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids)}


class _TiedDecoder(tf_keras.layers.Layer):
    """float32 logits = h . word_embeddings^T + output_bias (the layer is float32 so the embeddings are read as
    float32 even under a mixed policy)."""

    def __init__(self, embeddings: AlbertEmbeddings, vocab_size: int, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        # Not tracked as a child (it belongs to AlbertModel); only its word_embeddings variable is read.
        object.__setattr__(self, "_embeddings", embeddings)
        self.vocab_size = vocab_size

    def build(self, input_shape=None):
        self.output_bias = self.add_weight("output_bias", shape=[self.vocab_size], initializer="zeros")
        super().build(input_shape)

    def call(self, h):
        w = tf.cast(self._embeddings.word_embeddings, tf.float32)
        # One 2-D matmul over all leading axes: a [B, P, E] x [V, E] broadcast matmul is a batched one whose
        # gradient for the embeddings sums over B (measured: ~2 % of a `small` step, benchmarks/step_profile.py).
        flat = tf.reshape(tf.cast(h, tf.float32), [-1, tf.shape(h)[-1]])
        logits = tf.matmul(flat, w, transpose_b=True) + self.output_bias
        logits = tf.reshape(logits, tf.concat([tf.shape(h)[:-1], [self.vocab_size]], 0))
        logits.set_shape(h.shape[:-1].concatenate([self.vocab_size]))  # keep the static shape the input had
        return logits


class AlbertMLMHead(tf_keras.layers.Layer):
    """dense H -> E + activation + LayerNorm, then the tied decoder (official ``cls/predictions``)."""

    def __init__(self, config: AlbertConfig, embeddings: AlbertEmbeddings, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.dense = _dense(config.embedding_size, config, "dense", activation=get_activation(config.hidden_act))
        self.LayerNorm = _layer_norm(config, "LayerNorm")
        self.decoder = _TiedDecoder(embeddings, config.vocab_size, name="decoder")

    @property
    def output_bias(self):
        return self.decoder.output_bias

    def call(self, hidden_states):
        return self.decoder(self.LayerNorm(self.dense(hidden_states)))


class AlbertForPreTraining(tf_keras.Model):
    """ALBERT with the MLM head and the sentence (SOP or NSP) head.

    ``call(inputs, training)`` with ``inputs`` holding ``input_ids``, ``input_mask``, ``segment_ids`` ([B, T]) and
    ``masked_lm_positions`` ([B, P]) returns ``mlm_logits`` [B, P, V], ``sentence_logits`` [B, 2] (both float32),
    ``sequence_output`` and ``pooled_output``. Without ``masked_lm_positions`` no ``mlm_logits`` are computed;
    with ``sentence_task=None`` there is no sentence head (paper Table 5 "none").
    """

    def __init__(self, config: AlbertConfig, sentence_task: Optional[str] = "sop", **kwargs):
        kwargs.setdefault("name", "albert_for_pretraining")
        super().__init__(**kwargs)
        if sentence_task not in ("sop", "nsp", None):
            raise ValueError(f"sentence_task must be 'sop', 'nsp' or None, got {sentence_task!r}")
        self.config = config
        self.sentence_task = sentence_task
        self.albert = AlbertModel(config, name="albert")
        self.predictions = AlbertMLMHead(config, self.albert.embeddings, name="predictions")
        self.seq_relationship = (_dense(2, config, "seq_relationship", dtype="float32")
                                 if sentence_task is not None else None)

    def call(self, inputs, training=False):
        outputs = dict(self.albert(inputs, training=training))
        positions = inputs.get("masked_lm_positions")
        if positions is not None:
            gathered = tf.gather(outputs["sequence_output"], tf.cast(positions, tf.int32), batch_dims=1)  # [B, P, H]
            outputs["mlm_logits"] = self.predictions(gathered)
        if self.seq_relationship is not None:
            outputs["sentence_logits"] = self.seq_relationship(outputs["pooled_output"])
        return outputs

    def get_config(self):
        return {"config": self.config.to_dict(), "sentence_task": self.sentence_task, "name": self.name}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)

    def dummy_inputs(self, batch_size: int = 1, seq_len: int = 8, num_predictions: int = 2):
        ids = tf.ones([batch_size, seq_len], tf.int32)
        return {"input_ids": ids, "input_mask": ids, "segment_ids": tf.zeros_like(ids),
                "masked_lm_positions": tf.zeros([batch_size, num_predictions], tf.int32)}


# --------------------------------------------------------------------------------------------------------------------
# Parameter counting (analytic: builds nothing)
# --------------------------------------------------------------------------------------------------------------------
def _attention_params(c: AlbertConfig) -> int:
    h = c.hidden_size
    return 4 * (h * h + h) + 2 * h  # q, k, v, output dense + LayerNorm


def _ffn_params(c: AlbertConfig) -> int:
    h, f = c.hidden_size, c.intermediate_size
    return (h * f + f) + (f * h + h) + 2 * h  # intermediate + output dense + LayerNorm_1


def count_parameters(config: AlbertConfig, include_heads: bool = False) -> Dict[str, int]:
    """Analytic parameter counts: ``embedding`` (incl. the E -> H projection), ``encoder``, ``pooler``, ``heads``
    (MLM transform + output bias + sentence head; the decoder is tied) and ``total`` (heads only if
    ``include_heads``)."""
    c = config
    e, h = c.embedding_size, c.hidden_size
    embedding = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * e + 2 * e
    if c.uses_embedding_projection:
        embedding += e * h + h
    attn, ffn = _attention_params(c), _ffn_params(c)
    n_blocks = c.num_groups * c.inner_group_num
    if c.sharing == "attention":
        encoder = attn + c.num_hidden_layers * ffn
    elif c.sharing == "ffn":
        encoder = ffn + c.num_hidden_layers * attn
    else:
        encoder = n_blocks * (attn + ffn)
    if c.layer_norm_position == "pre":
        encoder += 2 * h  # final_LayerNorm
    pooler = h * h + h
    heads = (h * e + e) + 2 * e + c.vocab_size + (h * 2 + 2)
    total = embedding + encoder + pooler + (heads if include_heads else 0)
    return {"total": total, "embedding": embedding, "encoder": encoder, "pooler": pooler, "heads": heads}
