"""Tests for trainer.checkpoint_interop: official TF1 names and Hugging Face safetensors.

The TF1 checkpoint is written independently of the module under test: a tf.compat.v1 graph with variables named as
in the official ALBERT code (names and shapes written out by hand below), saved with tf.compat.v1.train.Saver.
The HF part here checks names, shapes and a round trip without torch; numerical parity against real `transformers`
is in tests/test_hf_parity.py (needs the test-only torch + transformers). The last part covers trainer.convert
(the `convert` command) in all three directions.
"""
import json

import numpy as np
import pytest

import trainer  # noqa: F401
import tensorflow as tf
import tf_keras

from trainer.checkpoint_interop import (
    CheckpointMismatchError,
    config_from_hf_dict,
    config_to_hf_dict,
    hf_state_dict,
    load_hf_pretrained,
    load_tf1_checkpoint,
    save_hf_pretrained,
    save_tf1_checkpoint,
    tf1_variable_map,
)
from config.errors import InputError
from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining, AlbertModel

V, E, H, F, P = 50, 16, 32, 64, 24


pytestmark = pytest.mark.longest_first(11)


def tiny(**overrides):
    fields = dict(vocab_size=V, embedding_size=E, hidden_size=H, intermediate_size=F, num_attention_heads=4,
                  num_hidden_layers=2, max_position_embeddings=P)
    fields.update(overrides)
    return AlbertConfig.named("albert-tiny", **fields)


def inputs(seed=0):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, V, size=(2, 9)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": (np.arange(9)[None] >= 4).astype(np.int32) * mask,
            "masked_lm_positions": np.array([[1, 3], [2, 5]], np.int32)}


def official_names_and_shapes(groups=1, inner=1, heads=True, projection=True):
    """Official ALBERT TF1 variable names and shapes, written out from the reference (not from the module)."""
    out = {
        "bert/embeddings/word_embeddings": (V, E),
        "bert/embeddings/token_type_embeddings": (2, E),
        "bert/embeddings/position_embeddings": (P, E),
        "bert/embeddings/LayerNorm/gamma": (E,),
        "bert/embeddings/LayerNorm/beta": (E,),
        "bert/pooler/dense/kernel": (H, H),
        "bert/pooler/dense/bias": (H,),
    }
    if projection:
        out["bert/encoder/embedding_hidden_mapping_in/kernel"] = (E, H)
        out["bert/encoder/embedding_hidden_mapping_in/bias"] = (H,)
    for g in range(groups):
        for j in range(inner):
            p = f"bert/encoder/transformer/group_{g}/inner_group_{j}/"
            for part in ("query", "key", "value"):
                out[p + f"attention_1/self/{part}/kernel"] = (H, H)
                out[p + f"attention_1/self/{part}/bias"] = (H,)
            out[p + "attention_1/output/dense/kernel"] = (H, H)
            out[p + "attention_1/output/dense/bias"] = (H,)
            out[p + "LayerNorm/gamma"] = (H,)
            out[p + "LayerNorm/beta"] = (H,)
            out[p + "ffn_1/intermediate/dense/kernel"] = (H, F)
            out[p + "ffn_1/intermediate/dense/bias"] = (F,)
            out[p + "ffn_1/intermediate/output/dense/kernel"] = (F, H)
            out[p + "ffn_1/intermediate/output/dense/bias"] = (H,)
            out[p + "LayerNorm_1/gamma"] = (H,)
            out[p + "LayerNorm_1/beta"] = (H,)
    if heads:
        out.update({
            "cls/predictions/transform/dense/kernel": (H, E),
            "cls/predictions/transform/dense/bias": (E,),
            "cls/predictions/transform/LayerNorm/gamma": (E,),
            "cls/predictions/transform/LayerNorm/beta": (E,),
            "cls/predictions/output_bias": (V,),
            "cls/seq_relationship/output_weights": (2, H),
            "cls/seq_relationship/output_bias": (2,),
        })
    return out


def write_tf1_with_saver(path, values, extra=None):
    """Write a name-based checkpoint the TF1 way: graph variables + tf.compat.v1.train.Saver."""
    values = dict(values, **(extra or {}))
    graph = tf.Graph()
    with graph.as_default():
        variables = {}
        feeds = {}
        for name, value in values.items():
            ph = tf.compat.v1.placeholder(tf.as_dtype(value.dtype), value.shape)
            variables[name] = tf.compat.v1.Variable(ph, name=name.replace(":", "_"))
            feeds[ph] = value
        saver = tf.compat.v1.train.Saver(var_list=variables)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run([v.initializer for v in variables.values()], feed_dict=feeds)
            return saver.save(sess, path)


def random_official_values(seed=0, **kwargs):
    rng = np.random.RandomState(seed)
    return {n: (rng.randn(*s) * 0.2).astype(np.float32) for n, s in official_names_and_shapes(**kwargs).items()}


# ---------------------------------------------------------------------------------------------------------------------
# TF1
# ---------------------------------------------------------------------------------------------------------------------
def test_variable_map_names_match_official():
    model = AlbertForPreTraining(tiny())
    var_map = tf1_variable_map(model)
    expected = official_names_and_shapes()
    assert sorted(var_map) == sorted(expected)
    for name, (var, transpose) in var_map.items():
        shape = tuple(var.shape)[::-1] if transpose else tuple(var.shape)
        assert shape == expected[name], name
    groups = AlbertForPreTraining(tiny(num_hidden_layers=4, sharing="groups", num_hidden_groups=2, inner_group_num=2))
    assert sorted(tf1_variable_map(groups)) == sorted(official_names_and_shapes(groups=2, inner=2))
    bert_style = AlbertModel(tiny(embedding_size=H, sharing="none"))
    assert sorted(tf1_variable_map(bert_style)) == sorted(
        official_names_and_shapes(groups=2, heads=False, projection=False))


@pytest.mark.parametrize("hub_prefix", ["", "module/"])
def test_load_official_tf1_checkpoint(tmp_path, hub_prefix):
    values = random_official_values()
    extra = {"global_step": np.array(125000, np.int64),
             hub_prefix + "bert/embeddings/word_embeddings/adam_m": np.zeros((V, E), np.float32)}
    path = write_tf1_with_saver(str(tmp_path / "model.ckpt"), {hub_prefix + k: v for k, v in values.items()}, extra)

    model = AlbertForPreTraining(tiny())
    report = load_tf1_checkpoint(model, path)
    assert report["prefix"] == hub_prefix and not report["missing"] and not report["unexpected"]
    emb = model.albert.embeddings
    np.testing.assert_array_equal(emb.word_embeddings.numpy(), values["bert/embeddings/word_embeddings"])
    np.testing.assert_array_equal(model.seq_relationship.kernel.numpy(),
                                  values["cls/seq_relationship/output_weights"].T)
    np.testing.assert_array_equal(
        model.albert.encoder.blocks[0].ffn.output_dense.kernel.numpy(),
        values["bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel"])

    # A second model loaded from the same checkpoint (via the directory) gives identical outputs.
    other = AlbertForPreTraining(tiny())
    load_tf1_checkpoint(other, str(tmp_path))
    a, b = model(inputs()), other(inputs())
    for key in ("sequence_output", "pooled_output", "mlm_logits", "sentence_logits"):
        np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())

    # The encoder alone loads the bert/ part and skips cls/.
    encoder = AlbertModel(tiny())
    report = load_tf1_checkpoint(encoder, path)
    assert report["skipped"] and all(n.startswith("cls/") for n in report["skipped"])
    np.testing.assert_allclose(encoder(inputs())["sequence_output"], a["sequence_output"], rtol=1e-6, atol=1e-6)


def test_tf1_round_trip_and_names(tmp_path):
    tf_keras.utils.set_random_seed(3)
    model = AlbertForPreTraining(tiny(num_hidden_layers=4, sharing="groups", num_hidden_groups=2))
    reference = model(inputs())
    path = save_tf1_checkpoint(model, str(tmp_path / "ckpt" / "model.ckpt-7"), prefix="module/", global_step=7)
    reader = tf.train.load_checkpoint(path)
    shapes = reader.get_variable_to_shape_map()
    expected = {"module/" + k: v for k, v in official_names_and_shapes(groups=2).items()}
    expected["global_step"] = ()
    assert {k: tuple(v) for k, v in shapes.items()} == expected
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt")).endswith("model.ckpt-7")
    config = AlbertConfig.from_json_file(str(tmp_path / "ckpt" / "albert_config.json"))
    assert config == model.config
    with open(tmp_path / "ckpt" / "albert_config.json") as f:
        assert json.load(f)["net_structure_type"] == 0  # official keys present

    restored = AlbertForPreTraining(config)
    load_tf1_checkpoint(restored, path)
    out = restored(inputs())
    for key in ("sequence_output", "mlm_logits", "sentence_logits"):
        np.testing.assert_array_equal(out[key].numpy(), reference[key].numpy())


def test_mismatch_lists_missing_and_unexpected(tmp_path):
    values = random_official_values()
    del values["bert/pooler/dense/bias"]
    values["bert/encoder/transformer/group_1/inner_group_0/LayerNorm/gamma"] = np.ones(H, np.float32)
    path = write_tf1_with_saver(str(tmp_path / "bad.ckpt"), values)
    model = AlbertForPreTraining(tiny())
    model(inputs())
    before = model.albert.embeddings.word_embeddings.numpy().copy()
    with pytest.raises(CheckpointMismatchError) as err:
        load_tf1_checkpoint(model, path)
    message = str(err.value)
    assert "missing from the checkpoint" in message and "bert/pooler/dense/bias" in message
    assert "unexpected in the checkpoint" in message and "group_1/inner_group_0/LayerNorm/gamma" in message
    np.testing.assert_array_equal(model.albert.embeddings.word_embeddings.numpy(), before)  # nothing assigned
    report = load_tf1_checkpoint(model, path, strict=False)
    assert report["missing"] == ["bert/pooler/dense/bias"]
    np.testing.assert_array_equal(model.albert.embeddings.word_embeddings.numpy(),
                                  values["bert/embeddings/word_embeddings"])


def test_shape_mismatch_is_reported(tmp_path):
    values = random_official_values()
    values["bert/embeddings/word_embeddings"] = np.zeros((V + 1, E), np.float32)
    path = write_tf1_with_saver(str(tmp_path / "shape.ckpt"), values)
    with pytest.raises(CheckpointMismatchError, match="shape mismatch"):
        load_tf1_checkpoint(AlbertForPreTraining(tiny()), path)


def test_unsupported_sharing_raises():
    with pytest.raises(ValueError, match="no official"):
        tf1_variable_map(AlbertForPreTraining(tiny(sharing="attention")))


# ---------------------------------------------------------------------------------------------------------------------
# Hugging Face safetensors
# ---------------------------------------------------------------------------------------------------------------------
HF_LAYER = "albert.encoder.albert_layer_groups.0.albert_layers.0."


def test_hf_names_and_shapes():
    model = AlbertForPreTraining(tiny())
    sd = hf_state_dict(model)
    expected = {
        "albert.embeddings.word_embeddings.weight": (V, E),
        "albert.embeddings.position_embeddings.weight": (P, E),
        "albert.embeddings.token_type_embeddings.weight": (2, E),
        "albert.embeddings.LayerNorm.weight": (E,), "albert.embeddings.LayerNorm.bias": (E,),
        "albert.encoder.embedding_hidden_mapping_in.weight": (H, E),
        "albert.encoder.embedding_hidden_mapping_in.bias": (H,),
        HF_LAYER + "attention.query.weight": (H, H), HF_LAYER + "attention.query.bias": (H,),
        HF_LAYER + "attention.key.weight": (H, H), HF_LAYER + "attention.key.bias": (H,),
        HF_LAYER + "attention.value.weight": (H, H), HF_LAYER + "attention.value.bias": (H,),
        HF_LAYER + "attention.dense.weight": (H, H), HF_LAYER + "attention.dense.bias": (H,),
        HF_LAYER + "attention.LayerNorm.weight": (H,), HF_LAYER + "attention.LayerNorm.bias": (H,),
        HF_LAYER + "ffn.weight": (F, H), HF_LAYER + "ffn.bias": (F,),
        HF_LAYER + "ffn_output.weight": (H, F), HF_LAYER + "ffn_output.bias": (H,),
        HF_LAYER + "full_layer_layer_norm.weight": (H,), HF_LAYER + "full_layer_layer_norm.bias": (H,),
        "albert.pooler.weight": (H, H), "albert.pooler.bias": (H,),
        "predictions.dense.weight": (E, H), "predictions.dense.bias": (E,),
        "predictions.LayerNorm.weight": (E,), "predictions.LayerNorm.bias": (E,),
        "predictions.bias": (V,),
        "sop_classifier.classifier.weight": (2, H), "sop_classifier.classifier.bias": (2,),
    }
    assert {k: v.shape for k, v in sd.items()} == expected
    np.testing.assert_array_equal(sd[HF_LAYER + "ffn.weight"],
                                  model.albert.encoder.blocks[0].ffn.intermediate.kernel.numpy().T)


@pytest.mark.parametrize("overrides", [dict(), dict(num_hidden_layers=4, sharing="groups", num_hidden_groups=2,
                                                     inner_group_num=2),
                                       dict(embedding_size=H, sharing="none")])
def test_hf_safetensors_round_trip(tmp_path, overrides):
    pytest.importorskip("safetensors.numpy")
    from safetensors.numpy import load_file

    tf_keras.utils.set_random_seed(5)
    model = AlbertForPreTraining(tiny(**overrides))
    reference = model(inputs())
    paths = save_hf_pretrained(model, str(tmp_path / "hf"))
    with open(paths["config"]) as f:
        hf_config = json.load(f)
    assert hf_config["model_type"] == "albert" and hf_config["architectures"] == ["AlbertForPreTraining"]
    assert hf_config["hidden_act"] == "gelu_new"
    assert all(v.dtype == np.float32 for v in load_file(paths["weights"]).values())

    restored = load_hf_pretrained(str(tmp_path / "hf"))
    assert restored.config == model.config
    out = restored(inputs())
    for key in ("sequence_output", "mlm_logits", "sentence_logits"):
        np.testing.assert_array_equal(out[key].numpy(), reference[key].numpy())


def test_hf_foreign_config_and_identity_projection(tmp_path):
    pytest.importorskip("safetensors.numpy")
    from safetensors.numpy import load_file, save_file

    # A config.json as transformers writes it (no albert_tfx block) -> always a projection.
    model = AlbertForPreTraining(tiny(embedding_size=H, sharing="none"))  # E == H: no projection (official)
    d = config_to_hf_dict(model.config)
    d.pop("albert_tfx")
    foreign = config_from_hf_dict(d)
    assert foreign.sharing == "groups" and foreign.num_hidden_groups == 2 and foreign.embedding_projection is True
    # Our no-projection model is written with an identity mapping, so transformers' layout loads it exactly.
    reference = model(inputs())
    paths = save_hf_pretrained(model, str(tmp_path / "hf"))
    tensors = load_file(paths["weights"])
    np.testing.assert_array_equal(tensors["albert.encoder.embedding_hidden_mapping_in.weight"], np.eye(H))
    with_proj = AlbertForPreTraining(foreign)
    load_hf_pretrained(str(tmp_path / "hf"), model=with_proj)
    np.testing.assert_allclose(with_proj(inputs())["mlm_logits"], reference["mlm_logits"], rtol=1e-5, atol=1e-5)

    # Missing tensors are listed.
    del tensors["albert.pooler.bias"]
    save_file(tensors, paths["weights"])
    with pytest.raises(CheckpointMismatchError, match="albert.pooler.bias"):
        load_hf_pretrained(str(tmp_path / "hf"))


# ---------------------------------------------------------------------------------------------------------------------
# trainer.convert (the `convert` command)
# ---------------------------------------------------------------------------------------------------------------------
def _assert_same_outputs(a, b, keys=("sequence_output", "pooled_output", "mlm_logits", "sentence_logits")):
    for key in keys:
        np.testing.assert_allclose(np.asarray(a[key]), np.asarray(b[key]), rtol=1e-6, atol=1e-6, err_msg=key)


def _serve(serving_dir):
    loaded = tf.saved_model.load(serving_dir)
    x = inputs()
    return loaded.signatures["serving_default"](input_ids=tf.constant(x["input_ids"]),
                                                 input_mask=tf.constant(x["input_mask"]),
                                                 segment_ids=tf.constant(x["segment_ids"]))


def _check_albert_dir(dst, reference_model, spm=True):
    """dst holds what trainer.export.export writes; each part reproduces reference_model."""
    from trainer.convert import load_albert_dir
    from trainer.modeling_albert import AlbertModel as _AlbertModel

    x = inputs()
    ref = reference_model(x)
    config = AlbertConfig.from_json_file(str(dst / "albert_config.json"))
    assert config == reference_model.config
    with open(dst / "albert_config.json") as f:
        assert json.load(f)["net_structure_type"] == 0
    assert (dst / "spm.model").exists() == spm
    with open(dst / "export_info.json") as f:
        assert json.load(f)["albert_config"] == config.to_dict()
    # encoder/ckpt as the evaluation runner restores it.
    encoder = _AlbertModel(config)
    encoder(encoder.dummy_inputs(1, 4))
    tf.train.Checkpoint(encoder=encoder).read(str(dst / "encoder" / "ckpt")).assert_existing_objects_matched()
    _assert_same_outputs(encoder(x), ref, keys=("sequence_output", "pooled_output"))
    # pretraining/ckpt
    restored = load_albert_dir(str(dst))
    _assert_same_outputs(restored(x), ref)
    # serving SavedModel: mlm_logits at every position.
    served = _serve(str(dst / "serving"))
    np.testing.assert_allclose(served["sequence_output"].numpy(), ref["sequence_output"], rtol=1e-5, atol=1e-5)
    full = reference_model(dict(x, masked_lm_positions=np.tile(np.arange(9, dtype=np.int32)[None], [2, 1])))
    np.testing.assert_allclose(served["mlm_logits"].numpy(), full["mlm_logits"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("overrides", [dict(), dict(num_hidden_layers=4, sharing="groups", num_hidden_groups=2,
                                                     inner_group_num=2)], ids=["all", "groups"])
def test_convert_hf_to_albert_and_back(tmp_path, spm_model_path, overrides):
    pytest.importorskip("safetensors.numpy")
    import shutil

    from safetensors.numpy import load_file
    from trainer.convert import convert

    tf_keras.utils.set_random_seed(11)
    model = AlbertForPreTraining(tiny(**overrides))
    model(inputs())
    hf = tmp_path / "hf"
    save_hf_pretrained(model, str(hf))
    shutil.copy(spm_model_path, hf / "spiece.model")

    result = convert("hf-to-albert", str(hf), str(tmp_path / "albert"))
    assert result["kind"] == "hf-to-albert" and result["sentence_task"] == "sop" and not result["encoder_only"]
    assert {"albert_config.json", "encoder/ckpt", "pretraining/ckpt", "spm.model", "serving"} <= set(result["files"])
    json.dumps(result)  # printable by the CLI
    _check_albert_dir(tmp_path / "albert", model)

    back = convert("albert-to-hf", str(tmp_path / "albert"), str(tmp_path / "hf2"))
    assert set(back["files"]) == {"config.json", "model.safetensors", "spiece.model", "tokenizer_config.json"}
    a, b = load_file(str(hf / "model.safetensors")), load_file(str(tmp_path / "hf2" / "model.safetensors"))
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    with open(hf / "config.json") as f1, open(tmp_path / "hf2" / "config.json") as f2:
        assert json.load(f1) == json.load(f2)
    assert (tmp_path / "hf2" / "spiece.model").read_bytes() == (hf / "spiece.model").read_bytes()


def test_convert_hf_masked_lm_and_encoder_only(tmp_path):
    """transformers' AlbertForMaskedLM (no sop_classifier, as the hub's albert-base-v2) and a bare AlbertModel."""
    pytest.importorskip("safetensors.numpy")
    from safetensors.numpy import load_file, save_file
    from trainer.convert import convert, load_albert_dir

    tf_keras.utils.set_random_seed(12)
    model = AlbertForPreTraining(tiny())
    x = inputs()
    ref = model(x)
    hf = tmp_path / "mlm"
    save_hf_pretrained(model, str(hf))
    tensors = load_file(str(hf / "model.safetensors"))
    for name in ("sop_classifier.classifier.weight", "sop_classifier.classifier.bias"):
        del tensors[name]
    tensors["predictions.decoder.weight"] = tensors["albert.embeddings.word_embeddings.weight"]
    tensors["predictions.decoder.bias"] = tensors["predictions.bias"]
    save_file(tensors, str(hf / "model.safetensors"))
    result = convert("hf-to-albert", str(hf), str(tmp_path / "albert_mlm"))
    assert result["sentence_task"] is None and not result["encoder_only"]
    restored = load_albert_dir(str(tmp_path / "albert_mlm"))
    assert restored.sentence_task is None
    _assert_same_outputs(restored(x), ref, keys=("sequence_output", "pooled_output", "mlm_logits"))
    back = convert("albert-to-hf", str(tmp_path / "albert_mlm"), str(tmp_path / "mlm2"))
    with open(tmp_path / "mlm2" / "config.json") as f:
        assert json.load(f)["architectures"] == ["AlbertForMaskedLM"]
    assert back["sentence_task"] is None

    # A task model (prefix albert., a classifier head): the encoder is converted, the head is reported as skipped.
    encoder_tensors = {k: v for k, v in tensors.items() if k.startswith("albert.")}
    encoder_tensors["classifier.weight"] = np.zeros((3, H), np.float32)
    encoder_tensors["classifier.bias"] = np.zeros(3, np.float32)
    save_file(encoder_tensors, str(hf / "model.safetensors"))
    result = convert("hf-to-albert", str(hf), str(tmp_path / "albert_enc"))
    assert result["encoder_only"] and result["skipped_tensors"] == ["classifier.bias", "classifier.weight"]
    assert not (tmp_path / "albert_enc" / "pretraining").exists() and not (tmp_path / "albert_enc" / "serving").exists()
    encoder = load_albert_dir(str(tmp_path / "albert_enc"))
    assert isinstance(encoder, AlbertModel)
    _assert_same_outputs(encoder(x), ref, keys=("sequence_output", "pooled_output"))
    convert("albert-to-hf", str(tmp_path / "albert_enc"), str(tmp_path / "enc2"))
    enc2 = load_file(str(tmp_path / "enc2" / "model.safetensors"))
    assert "embeddings.word_embeddings.weight" in enc2 and not any(k.startswith("albert.") for k in enc2)
    with open(tmp_path / "enc2" / "config.json") as f:
        assert json.load(f)["architectures"] == ["AlbertModel"]


@pytest.mark.parametrize("hub_prefix", ["", "module/"])
def test_convert_official_tf1_release(tmp_path, spm_model_path, hub_prefix):
    """A directory laid out like the official albert_base_v2 release: albert_config.json (official keys, no
    `sharing`), model.ckpt-best.* without a `checkpoint` state file, 30k-clean.model."""
    import shutil

    from trainer.convert import convert

    src = tmp_path / "albert_base"
    src.mkdir()
    values = random_official_values()
    write_tf1_with_saver(str(src / "model.ckpt-best"), {hub_prefix + k: v for k, v in values.items()},
                         {"global_step": np.array(10, np.int64)})
    (src / "checkpoint").unlink()  # the release tarballs ship no state file
    official_config = {k: v for k, v in tiny().to_dict(official=True).items()
                       if k not in ("sharing", "embedding_projection", "layer_norm_eps")}
    official_config["hidden_act"] = "gelu"
    with open(src / "albert_config.json", "w") as f:
        json.dump(official_config, f)
    shutil.copy(spm_model_path, src / "30k-clean.model")

    result = convert("tf1-to-albert", str(src), str(tmp_path / "albert"))
    assert result["checkpoint"].endswith("model.ckpt-best") and result["prefix"] == hub_prefix
    assert result["loaded_variables"] == len(values) and result["sentence_task"] == "sop"
    reference = AlbertForPreTraining(AlbertConfig.from_json_file(str(src / "albert_config.json")))
    load_tf1_checkpoint(reference, str(src / "model.ckpt-best"))
    _check_albert_dir(tmp_path / "albert", reference)
    np.testing.assert_array_equal(reference.albert.embeddings.word_embeddings.numpy(),
                                  values["bert/embeddings/word_embeddings"])


def official_chinese_vocab(size=21128):
    """A vocab.txt in the official Chinese models' layout (BERT-Chinese): [PAD] 0, [unused1..99], [UNK] 100,
    [CLS] 101, [SEP] 102, [MASK] 103, then ``size`` tokens in all (CJK characters, ``##`` pieces, filler)."""
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [chr(c) for c in range(0x4E00, 0x4E00 + 2000)] + [f"##{chr(c)}" for c in range(0x4E00, 0x4E00 + 500)]
    tokens += [f"word{i}" for i in range(size - len(tokens))]
    return "".join(t + "\n" for t in tokens)


def test_convert_an_official_chinese_release_keeps_its_vocab_txt(tmp_path):
    """albert_base_zh's layout: official TF1 names, albert_config.json with vocab_size 21128, a WordPiece vocab.txt
    (no SentencePiece model). The albert dir carries the vocab.txt and a tokenizer.json saying WordPiece, and its
    Hugging Face folder declares BertTokenizer; a vocab.txt of another size is refused, naming both numbers."""
    from trainer.convert import convert

    src = tmp_path / "albert_base_zh"
    src.mkdir()
    values = {n: (np.resize(v, (21128,) + v.shape[1:]) if v.shape[0] == V else v)
              for n, v in random_official_values().items()}
    write_tf1_with_saver(str(src / "model.ckpt-best"), values)
    official_config = {k: v for k, v in tiny(vocab_size=21128).to_dict(official=True).items()
                       if k not in ("sharing", "embedding_projection", "layer_norm_eps")}
    with open(src / "albert_config.json", "w") as f:
        json.dump(official_config, f)
    (src / "vocab_chinese.txt").write_text(official_chinese_vocab(), encoding="utf-8")
    result = convert("tf1-to-albert", str(src), str(tmp_path / "albert"))
    assert "vocab.txt" in result["files"] and "tokenizer.json" in result["files"]
    assert (tmp_path / "albert" / "vocab.txt").read_bytes() == (src / "vocab_chinese.txt").read_bytes()
    assert json.loads((tmp_path / "albert" / "tokenizer.json").read_text()) == {
        "do_lower_case": True, "kind": "wordpiece", "normalization": "none", "strip_accents": False}
    assert not (tmp_path / "albert" / "spm.model").exists()
    hf = convert("albert-to-hf", str(tmp_path / "albert"), str(tmp_path / "hf"))
    assert "vocab.txt" in hf["files"]
    with open(tmp_path / "hf" / "config.json") as f:
        assert json.load(f)["tokenizer_class"] == "BertTokenizer"
    with open(tmp_path / "hf" / "tokenizer_config.json") as f:
        assert json.load(f)["tokenizer_class"] == "BertTokenizer"
    (src / "vocab_chinese.txt").write_text(official_chinese_vocab(21000), encoding="utf-8")
    with pytest.raises(InputError, match=r"vocab_chinese.txt holds 21000 tokens but .*albert_config.json says "
                                         r"\"vocab_size\": 21128: not this checkpoint's vocabulary"):
        convert("tf1-to-albert", str(src), str(tmp_path / "again"))


def test_convert_errors(tmp_path):
    from trainer.convert import convert

    with pytest.raises(ValueError, match="hf-to-albert, albert-to-hf, tf1-to-albert"):
        convert("onnx", str(tmp_path), str(tmp_path / "x"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        convert("hf-to-albert", str(tmp_path / "nope"), str(tmp_path / "x"))
    with pytest.raises(FileNotFoundError, match="config.json"):
        convert("hf-to-albert", str(tmp_path), str(tmp_path / "x"))
    with pytest.raises(FileNotFoundError, match="albert_config.json"):
        convert("tf1-to-albert", str(tmp_path), str(tmp_path / "x"))

    # TF1: a variable missing from the checkpoint and an extra layer group are listed.
    src = tmp_path / "tf1"
    src.mkdir()
    values = random_official_values()
    del values["bert/pooler/dense/kernel"]
    values["bert/encoder/transformer/group_1/inner_group_0/LayerNorm/beta"] = np.ones(H, np.float32)
    write_tf1_with_saver(str(src / "model.ckpt-3"), values)
    tiny().to_json_file(str(src / "albert_config.json"), official=True)
    with pytest.raises(CheckpointMismatchError) as err:
        convert("tf1-to-albert", str(src), str(tmp_path / "out"))
    message = str(err.value)
    assert "bert/pooler/dense/kernel" in message and "group_1/inner_group_0/LayerNorm/beta" in message
    assert "strict=False" not in message and "belong together" in message

    # albert dir whose albert_config.json does not match its checkpoints: the variables are listed.
    tf_keras.utils.set_random_seed(0)
    model = AlbertForPreTraining(tiny())
    model(inputs())
    from trainer.convert import write_albert_dir

    write_albert_dir(model, str(tmp_path / "albert"), serving=False)
    tiny(num_hidden_layers=4, sharing="groups", num_hidden_groups=2).to_json_file(
        str(tmp_path / "albert" / "albert_config.json"), official=True)
    with pytest.raises(CheckpointMismatchError) as err:
        convert("albert-to-hf", str(tmp_path / "albert"), str(tmp_path / "hf"))
    assert "missing from the checkpoint" in str(err.value)
    assert "model/albert/encoder/groups/1/blocks/0/ffn/intermediate/kernel\n" in str(err.value)

    # An unsupported sharing layout cannot be written in the HF layout.
    model = AlbertForPreTraining(tiny(sharing="attention"))
    model(inputs())
    write_albert_dir(model, str(tmp_path / "albert_attn"), serving=False)
    with pytest.raises(ValueError, match="model.sharing=attention cannot be written in the Hugging Face layout"):
        convert("albert-to-hf", str(tmp_path / "albert_attn"), str(tmp_path / "hf_attn"))


def test_pre_ln_has_no_foreign_layout_and_leaves_nothing_behind(tmp_path):
    """``model.layer_norm_position=pre`` has no Hugging Face / official layout: converting it fails before any
    file of the destination exists, and the TF1 writer refuses it the same way."""
    from trainer.checkpoint_interop import save_tf1_checkpoint
    from trainer.convert import convert, write_albert_dir

    model = AlbertForPreTraining(tiny(layer_norm_position="pre"))
    model(inputs())
    write_albert_dir(model, str(tmp_path / "albert_pre"), serving=False)
    with pytest.raises(ValueError, match="model.layer_norm_position=pre has no official / Hugging Face"):
        convert("albert-to-hf", str(tmp_path / "albert_pre"), str(tmp_path / "hf_pre"))
    assert not (tmp_path / "hf_pre").exists()
    with pytest.raises(ValueError, match="model.layer_norm_position=pre has no official / Hugging Face"):
        save_tf1_checkpoint(model, str(tmp_path / "tf1_pre" / "model.ckpt"))
    assert not (tmp_path / "tf1_pre").exists()
