"""components/evaluation/glue/transform.py: the tf.Transform fine-tuning preprocessing.

The Transform graph (TF ops + tensorflow_text SentencePiece) must give the same ids as the Python
featurisation (``glue.convert_glue_examples`` with ``AlbertTokenizer``) on the real GLUE sample
rows, run under tf.Transform's Beam implementation, and a model exported behind it must take raw
text and predict what the in-memory model predicts.
"""
import os
import random
import unicodedata

import numpy as np
import pytest

import components  # noqa: F401  (TF_USE_LEGACY_KERAS before TF)

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")
pytest.importorskip("tensorflow_transform")

from components.evaluation.glue import glue_data as glue_lib  # noqa: E402
from components.evaluation.glue import transform as T  # noqa: E402
from components.text.normalize import preprocess_text  # noqa: E402
from components.text.tokenization import AlbertTokenizer  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLUE = os.path.join(REPO, "data", "sample", "glue")
SPM = os.path.join(REPO, "data", "sample", "vocab", "30k-clean.model")


pytestmark = [pytest.mark.slow, pytest.mark.longest_first(12)]


@pytest.fixture(scope="module")
def tokenizer():
    return AlbertTokenizer(SPM)


@pytest.fixture(scope="module")
def proto():
    with open(SPM, "rb") as f:
        return f.read()


def _all_sample_texts():
    texts = []
    for task in ("CoLA", "SST-2", "MRPC", "RTE"):
        for split in ("train", "dev"):
            for ex in glue_lib.read_glue(task, split, GLUE):
                texts.append(ex.text_a)
                if ex.text_b is not None:
                    texts.append(ex.text_b)
    return texts


TRICKY = [
    "  Hello\t\tWorld \n", "Café naïve résumé", "``quoted'' text", "x\u00a0y\u2003z\u3000w\x1cv\x85u",
    "İstanbul ß ﬁ ½ ①", "In 1990, 12,000 people; 90,5 a1, 1,", "\u034fgrapheme joiner (Mn, class 0)",
    "e\u0301 e\u0308 Å ǅ", "ＦＵＬＬ ｗｉｄｔｈ １２３", "", "   ", "한국어 日本語 ελληνικά Ωmega",
    "12,13,14, x9, ,1, 2,, ab12,34,5, ４２, ٣,",  # runs of digits-comma pieces, some within a word
]


def test_normalize_text_matches_preprocess_text():
    got = T.normalize_text(tf.constant(TRICKY)).numpy()
    for text, out in zip(TRICKY, got):
        assert out.decode("utf-8") == preprocess_text(text), repr(text)
    # The combining class is Python's canonical-combining-class != 0, not \p{Mn}:
    assert unicodedata.category("\u034f") == "Mn" and unicodedata.combining("\u034f") == 0


def test_truncation_lengths_match_truncate_pair():
    rng = random.Random(0)
    cases = [(rng.randint(0, 40), rng.randint(0, 40), rng.randint(1, 40)) for _ in range(400)]
    la, lb, budgets = (np.asarray(c, np.int64) for c in zip(*cases))
    for budget in sorted(set(budgets.tolist())):
        sel = budgets == budget
        got_a, got_b = T.truncation_lengths(tf.constant(la[sel]), tf.constant(lb[sel]), int(budget))
        for a, b, ga, gb in zip(la[sel], lb[sel], got_a.numpy(), got_b.numpy()):
            ra, rb = list(range(a)), list(range(b))
            glue_lib.truncate_pair(ra, rb, int(budget))
            assert (len(ra), len(rb)) == (ga, gb), (a, b, budget)


def test_tf_tokenizer_matches_albert_tokenizer_on_all_glue_sample_texts(tokenizer, proto):
    texts = _all_sample_texts() + TRICKY
    got = T.AlbertTfTokenizer(proto).tokenize(tf.constant(texts)).to_list()
    mismatches = [t for t, ids in zip(texts, got) if ids != tokenizer.encode(t)]
    assert not mismatches, mismatches[:5]
    # The digits-comma split is exercised: pieces like '▁1990,' occur and are split as in Python.
    quirk = [t for t in texts if any(len(p) > 1 and p[-1] == "," and p[-2].isdigit()
                                     for p in tokenizer.sp.encode(tokenizer.normalize(t), out_type=str))]
    assert quirk, "no digits-comma piece in the test texts"


def test_the_digits_comma_fix_up_matches_where_a_vocabulary_has_such_pieces_inside_words(tmp_path):
    """Where a digits-comma piece starts inside a word (``90,`` after ``▁a``), its re-encoding's leading ``▁`` is
    stripped (``▁90`` → ``90``) or, alone, dropped (``▁`` ``5`` → ``5``). No bundled vocabulary has such a piece
    (all 141 of 30k-clean's start with ``▁``), so a small one is trained here with three pieces of its own."""
    import sentencepiece as spm

    texts = _all_sample_texts()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(tmp_path / "m"), vocab_size=400,
                                   pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, hard_vocab_limit=False,
                                   user_defined_symbols=["90,", "5,", "\u258190"], minloglevel=2)
    python = AlbertTokenizer(str(tmp_path / "m.model"), check_ids=False)
    probe = ["a90, b5, 190, x 90, 5, ab5,", "In 1990, 12,000 people; 90,5 a1, 1,"]
    assert python.tokenize(probe[0])[:7] == ["\u2581a", "90", ",", "\u2581b", "5", ",", "\u25811"]  # both fix-ups
    got = T.AlbertTfTokenizer((tmp_path / "m.model").read_bytes()).tokenize(tf.constant(probe + texts + TRICKY))
    assert got.to_list() == [python.encode(t) for t in probe + texts + TRICKY]


@pytest.fixture(scope="module")
def mrpc_transform(tmp_path_factory, proto):
    """Beam (DirectRunner) AnalyzeAndTransformDataset on MRPC dev at a short length (truncation on)."""
    out = str(tmp_path_factory.mktemp("tft_mrpc"))
    rows = glue_lib.read_glue("MRPC", "dev", GLUE)
    fn = T.make_preprocessing_fn(proto, max_seq_length=40, has_text_b=True)
    transformed = T.analyze_and_transform([{"text_a": e.text_a, "text_b": e.text_b} for e in rows], fn,
                                          has_text_b=True, transform_output_dir=os.path.join(out, "transform"),
                                          temp_dir=os.path.join(out, "tmp"))
    return rows, transformed, os.path.join(out, "transform")


def _stack(rows, key):
    return np.stack([np.asarray(r[key]).reshape(-1) for r in rows])


def test_beam_transform_pairs_equal_convert_glue_examples(mrpc_transform, tokenizer):
    rows, transformed, transform_dir = mrpc_transform
    want = glue_lib.convert_glue_examples(rows, tokenizer, 40, "MRPC")
    assert len(transformed) == len(rows) == 100
    for key in T.FEATURE_KEYS:
        np.testing.assert_array_equal(_stack(transformed, key), want[key], err_msg=key)
    assert (want["input_mask"].sum(1) == 40).sum() > 50  # longest-first truncation really ran
    assert os.path.isdir(os.path.join(transform_dir, "transform_fn"))


def test_beam_transform_single_sentence_equals_convert_glue_examples(tmp_path, proto, tokenizer):
    rows = glue_lib.read_glue("CoLA", "dev", GLUE)[:40]
    fn = T.make_preprocessing_fn(proto, max_seq_length=12, has_text_b=False)
    transformed = T.analyze_and_transform([{"text_a": e.text_a} for e in rows], fn, has_text_b=False,
                                          temp_dir=str(tmp_path / "tmp"))
    want = glue_lib.convert_glue_examples(rows, tokenizer, 12, "CoLA")
    for key in T.FEATURE_KEYS:
        np.testing.assert_array_equal(_stack(transformed, key), want[key], err_msg=key)


def test_exported_model_takes_raw_text(mrpc_transform, tokenizer, tmp_path):
    from components.evaluation.finetune import predict
    from components.evaluation.heads import ClassifierModel
    from trainer.modeling_albert import AlbertConfig, AlbertModel

    rows, _, transform_dir = mrpc_transform
    tf.random.set_seed(1)
    encoder = AlbertModel(AlbertConfig.named("albert-tiny", vocab_size=30000))
    model = ClassifierModel(encoder, 2, 0.1, seed=1)
    arrays = glue_lib.convert_glue_examples(rows, tokenizer, 40, "MRPC")
    want = predict(model, arrays)["logits"]
    export_dir = T.export_serving_model(model, transform_dir, str(tmp_path / "serving"), has_text_b=True, num_labels=2,
                                        labels=["0", "1"])
    del model, encoder
    loaded = tf.saved_model.load(export_dir)
    serve = loaded.signatures["serving_default"]
    out = serve(text_a=tf.constant([e.text_a for e in rows]), text_b=tf.constant([e.text_b for e in rows]))
    np.testing.assert_allclose(out["logits"].numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(out["class_ids"].numpy(), np.argmax(want, -1))
    np.testing.assert_allclose(out["positive_probability"].numpy(), tf.nn.softmax(want)[:, 1].numpy(), atol=1e-5)
    # The common classify outputs (components/evaluation/task_serving.py): label, label_id (int32), scores.
    np.testing.assert_array_equal(out["label_id"].numpy(), np.argmax(want, -1).astype(np.int32))
    assert [x.decode() for x in out["label"].numpy()] == [str(i) for i in np.argmax(want, -1)]
    np.testing.assert_allclose(out["scores"].numpy(), tf.nn.softmax(want).numpy(), atol=1e-5)
    # The tf.Example signature (what TFMA feeds) gives the same outputs.
    examples = [tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode("utf-8")]))
        for k, v in (("text_a", e.text_a), ("text_b", e.text_b))})).SerializeToString() for e in rows[:7]]
    out2 = loaded.signatures["serve_tf_examples"](examples=tf.constant(examples))
    np.testing.assert_allclose(out2["logits"].numpy(), want[:7], rtol=1e-4, atol=1e-5)
