"""Numerical parity with Hugging Face ``transformers``' ``AlbertForPreTraining`` (PyTorch), both directions.

Needs the test-only packages ``torch`` and ``transformers`` (skipped without them). The inputs are real text: sentence
pairs from ``tests/fixtures/datagen_text.txt`` tokenized with the bundled SentencePiece model
(``data/sample/vocab/30k-clean.model``, V = 30000), padded to one length with an attention mask and segment ids.

* HF -> here: a small random ALBERT built in ``transformers``, ``save_pretrained`` (safetensors), loaded with
  :func:`trainer.checkpoint_interop.load_hf_pretrained`.
* here -> HF: a random model built here, :func:`save_hf_pretrained`, loaded with
  ``transformers.AlbertForPreTraining.from_pretrained``.

Compared: sequence output, pooled output, MLM logits (every position) and SOP logits; max abs difference < 1e-4.
"""
import os

import numpy as np
import pytest

import trainer  # noqa: F401
import tf_keras

from components.text.tokenization import AlbertTokenizer
from tests.conftest import hf_peer
from trainer.checkpoint_interop import load_hf_pretrained, save_hf_pretrained
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining

# The test-only packages, imported when this module's first test runs (or its tests skip): at collection every
# pytest-xdist worker would import them (4 s of CPU), and one runs this file.
torch = transformers = None


@pytest.fixture(scope="module", autouse=True)
def _hf_peer():
    global torch, transformers
    torch, transformers = hf_peer()

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "datagen_text.txt")
TOL = 1e-4

SMALL = dict(vocab_size=30000, embedding_size=64, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=512, hidden_act="gelu_new", hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2,
             initializer_range=0.02, layer_norm_eps=1e-12)
# (num_hidden_layers, num_hidden_groups, inner_group_num): all-shared; groups with two blocks each; no sharing.
LAYOUTS = {"all": (2, 1, 1), "groups": (4, 2, 2), "none": (3, 3, 1)}


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(14)]


@pytest.fixture(scope="module")
def batch(spm_model_path):
    """Three [CLS] a [SEP] b [SEP] pairs of real sentences, different lengths, zero-padded."""
    with open(FIXTURE, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    tokenizer = AlbertTokenizer(spm_model_path)
    pairs = [(lines[0], lines[1]), (lines[2], lines[3]), (lines[4][:60], lines[5][:40])]
    rows, segments = [], []
    for a, b in pairs:
        ta, tb = tokenizer.encode(a)[:60], tokenizer.encode(b)[:40]
        ids = [tokenizer.cls_id] + ta + [tokenizer.sep_id] + tb + [tokenizer.sep_id]
        rows.append(ids)
        segments.append([0] * (len(ta) + 2) + [1] * (len(tb) + 1))
    length = max(len(r) for r in rows)
    input_ids = np.zeros((len(rows), length), np.int32)
    input_mask = np.zeros_like(input_ids)
    segment_ids = np.zeros_like(input_ids)
    for i, (r, s) in enumerate(zip(rows, segments)):
        input_ids[i, :len(r)], input_mask[i, :len(r)], segment_ids[i, :len(s)] = r, 1, s
    assert input_mask.min() == 0 and (input_ids[input_mask == 1] > 4).mean() > 0.8  # real pieces, real padding
    assert (input_ids[input_mask == 1] == tokenizer.unk_id).mean() < 0.05
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


def run_ours(model, batch):
    b, t = batch["input_ids"].shape
    inputs = dict(batch, masked_lm_positions=np.tile(np.arange(t, dtype=np.int32)[None], [b, 1]))
    out = model(inputs, training=False)
    return {k: out[k].numpy() for k in ("sequence_output", "pooled_output", "mlm_logits", "sentence_logits")}


def run_hf(model, batch):
    model.eval()
    with torch.no_grad():
        out = model(input_ids=torch.as_tensor(batch["input_ids"], dtype=torch.long),
                    attention_mask=torch.as_tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.as_tensor(batch["segment_ids"], dtype=torch.long),
                    output_hidden_states=True)
        sequence = out.hidden_states[-1]
        pooled = model.albert.pooler_activation(model.albert.pooler(sequence[:, 0]))
    return {"sequence_output": sequence.numpy(), "pooled_output": pooled.numpy(),
            "mlm_logits": out.prediction_logits.numpy(), "sentence_logits": out.sop_logits.numpy()}


def assert_parity(ours, theirs):
    diffs = {k: float(np.max(np.abs(ours[k] - theirs[k]))) for k in ours}
    for k in ours:
        assert ours[k].shape == theirs[k].shape, (k, ours[k].shape, theirs[k].shape)
    assert all(d < TOL for d in diffs.values()), diffs
    # The comparison is not vacuous: outputs vary across positions and examples.
    assert np.std(ours["sequence_output"]) > 0.1 and np.std(ours["mlm_logits"]) > 1e-3
    return diffs


def hf_model(layers, groups, inner, seed=0):
    torch.manual_seed(seed)
    config = transformers.AlbertConfig(**dict(SMALL, num_hidden_layers=layers, num_hidden_groups=groups,
                                              inner_group_num=inner))
    model = transformers.AlbertForPreTraining(config)
    # Random (non-trivial) LayerNorm and bias values, so a swapped gamma/beta or a dropped bias shows up.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_hf_to_ours(tmp_path, batch, layout):
    layers, groups, inner = LAYOUTS[layout]
    hf = hf_model(layers, groups, inner)
    hf.save_pretrained(str(tmp_path), safe_serialization=True)
    assert os.path.exists(tmp_path / "model.safetensors")

    ours = load_hf_pretrained(str(tmp_path))
    c = ours.config
    assert (c.num_hidden_layers, c.num_hidden_groups, c.inner_group_num) == (layers, groups, inner)
    assert c.hidden_act == "gelu_new" and c.uses_embedding_projection
    assert_parity(run_ours(ours, batch), run_hf(hf, batch))


@pytest.mark.parametrize("overrides", [
    dict(),
    dict(num_hidden_layers=4, sharing="groups", num_hidden_groups=2, inner_group_num=2),
    dict(num_hidden_layers=3, sharing="none"),
    dict(embedding_size=128, sharing="none"),  # E == H, no projection here: written as an identity mapping
], ids=["all", "groups", "none", "bert-style"])
def test_ours_to_hf(tmp_path, batch, overrides):
    tf_keras.utils.set_random_seed(1)
    config = AlbertConfig(**dict(SMALL, **overrides))
    ours = AlbertForPreTraining(config)
    ours(ours.dummy_inputs(1, 4, 1))
    # Random LayerNorm / bias values (the initializers make them 1 / 0).
    rng = np.random.RandomState(0)
    for v in ours.trainable_variables:
        if len(v.shape) == 1:
            v.assign(v.numpy() + rng.randn(*v.shape).astype(np.float32) * 0.1)
    save_hf_pretrained(ours, str(tmp_path))

    hf, info = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert hf.config.num_hidden_layers == config.num_hidden_layers
    np.testing.assert_array_equal(hf.predictions.decoder.weight.detach().numpy(),
                                  ours.albert.embeddings.word_embeddings.numpy())  # re-tied on load
    assert_parity(run_ours(ours, batch), run_hf(hf, batch))


def test_convert_command_both_ways(tmp_path, batch, spm_model_path):
    """`convert hf-to-albert` then the serving SavedModel, and `convert albert-to-hf` then transformers."""
    import shutil

    import tensorflow as tf
    from trainer.convert import convert

    hf = hf_model(4, 2, 2, seed=3)
    hf.save_pretrained(str(tmp_path / "hf"), safe_serialization=True)
    shutil.copy(spm_model_path, tmp_path / "hf" / "spiece.model")
    expected = run_hf(hf, batch)

    convert("hf-to-albert", str(tmp_path / "hf"), str(tmp_path / "albert"))
    served = tf.saved_model.load(str(tmp_path / "albert" / "serving")).signatures["serving_default"](
        **{k: tf.constant(v) for k, v in batch.items()})
    assert_parity({k: served[k].numpy() for k in expected}, expected)

    convert("albert-to-hf", str(tmp_path / "albert"), str(tmp_path / "hf2"))
    hf2, info = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "hf2"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_parity(run_hf(hf2, batch), expected)
    assert (tmp_path / "hf2" / "spiece.model").read_bytes() == (tmp_path / "hf" / "spiece.model").read_bytes()


def test_a_wordpiece_model_loads_in_transformers_with_its_tokenizer(tmp_path):
    """An albert folder with a WordPiece vocab.txt (the official Chinese models' kind), `convert albert-to-hf`:
    transformers loads the model and, from config.json's tokenizer_class, a BERT tokenizer that splits text as
    ours does (CJK characters, accents stripped under lower-casing, punctuation, "##" pieces, [UNK])."""
    from components.text.wordpiece import WordPieceTokenizer
    from config.tokenizer_spec import TokenizerSpec
    from trainer.convert import convert, write_albert_dir

    vocab = os.path.join(os.path.dirname(FIXTURE), "wordpiece", "vocab.txt")
    ours = WordPieceTokenizer(vocab)
    model = AlbertForPreTraining(AlbertConfig(**dict(SMALL, vocab_size=ours.vocab_size)))
    model(model.dummy_inputs(1, 4))
    write_albert_dir(model, str(tmp_path / "albert"), vocab, serving=False,
                     tokenizer_spec=TokenizerSpec(kind="wordpiece", normalization="none"))
    convert("albert-to-hf", str(tmp_path / "albert"), str(tmp_path / "hf"))
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert type(hf_tokenizer).__name__ in ("BertTokenizer", "BertTokenizerFast")
    for text in ("Debian 的软件包管理系统。", "Hello, Wörld! Ça va? dpkg-reconfigure", "ＡＢＣ １２３ 世界"):
        assert hf_tokenizer.tokenize(text) == ours.tokenize(text), text
        assert hf_tokenizer(text, add_special_tokens=False)["input_ids"] == ours.encode(text)
    hf, info = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert hf.config.vocab_size == ours.vocab_size
