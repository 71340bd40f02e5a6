"""Beam data generation (the CLI path): TFRecords parse with the documented spec, bytes are
reproducible across worker counts, statistics are written, and a failed run leaves nothing."""
import glob
import json
import os

import pytest

from components.datagen.datagen_tool import make_pretraining_data
from pipeline.settings.configs import build_config

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "datagen_text.txt")


def _config(**over):
    items = [f"datagen.{k}={v}" for k, v in {"max_seq_length": 64, "max_predictions_per_seq": 8, "dupe_factor": 3,
                                              "num_shards": 2, "eval_fraction": 0.25, **over}.items()]
    return build_config("sample", overrides=items)


def _bytes(out):
    return {os.path.relpath(p, out): open(p, "rb").read()
            for p in sorted(glob.glob(os.path.join(out, "Split-*", "*")))}


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory, spm_model_path):
    out = str(tmp_path_factory.mktemp("dg") / "one")
    stats = make_pretraining_data([FIXTURE], spm_model_path, out, _config(), workers=1)
    return out, stats


def test_records_parse_with_the_documented_spec(one_worker):
    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    out, stats = one_worker
    files = sorted(glob.glob(os.path.join(out, "Split-train", "*.gz")))
    assert len(files) == 2
    n = 0
    for rec in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        ex = tf.io.parse_single_example(rec, feature_spec(64, 8))
        ids = ex["input_ids"].numpy()
        length = int(ex["input_mask"].numpy().sum())
        assert ids[0] == 2 and (ids == 3).sum() == 2 and ids[length - 1] == 3
        pos = ex["masked_lm_positions"].numpy()
        w = ex["masked_lm_weights"].numpy()
        real = pos[w > 0]
        assert (real < length).all() and (real > 0).all() and list(real) == sorted(real)
        n += 1
    assert n == stats["splits"]["train"]["instances"] > 20


def test_same_seed_same_bytes_with_two_workers(one_worker, tmp_path, spm_model_path):
    out2 = str(tmp_path / "two")
    make_pretraining_data([FIXTURE], spm_model_path, out2, _config(), workers=2)
    assert _bytes(one_worker[0]) == _bytes(out2)
    other = str(tmp_path / "seed")
    make_pretraining_data([FIXTURE], spm_model_path, other, build_config(
        "sample", overrides=["seed=99", "datagen.max_seq_length=64", "datagen.max_predictions_per_seq=8",
                             "datagen.dupe_factor=3", "datagen.num_shards=2", "datagen.eval_fraction=0.25"]))
    assert _bytes(other) != _bytes(one_worker[0])


def test_statistics_are_written(one_worker):
    out, stats = one_worker
    on_disk = json.load(open(os.path.join(out, "stats.json")))
    assert on_disk == stats
    train = stats["splits"]["train"]
    assert set(train["replacement_shares"]) == {"mask", "random", "keep"}
    for key in ("ngram_drawn_shares", "ngram_span_shares", "sop_swap_label_1_share", "sop_random_next_share",
                "short_target_share_doc_passes", "short_target_share_instances"):
        assert key in train
    swaps = train["sop_swap_decisions"]
    assert swaps["kept"] + swaps["swapped"] + train["sop_random_next_instances"] == train["instances"]
    assert not os.path.exists(os.path.join(out, ".datagen-spill"))  # spill files are removed
    assert stats["dupe_factor"] == 3 and stats["params"]["max_seq_length"] == 64
    assert os.path.exists(os.path.join(out, "vocab", "spm.model"))


def test_failed_run_leaves_no_output(tmp_path, spm_model_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    out = tmp_path / "out"
    with pytest.raises(Exception, match="no training instances"):
        make_pretraining_data([str(empty)], spm_model_path, str(out), _config(), workers=1)
    assert not out.exists() and not glob.glob(str(out) + ".tmp-*")


def test_refuses_to_overwrite(one_worker, spm_model_path):
    with pytest.raises(FileExistsError):
        make_pretraining_data([FIXTURE], spm_model_path, one_worker[0], _config())


@pytest.mark.parametrize("compression", ["GZIP", ""])
def test_shard_writer_sorts_by_key_and_frames_like_tensorflow(tmp_path, compression):
    """The TF-free TFRecord writer: records from several spill files come out sorted by shuffle key (ties by
    payload) and read back with TensorFlow's reader, compressed or not."""
    import tensorflow as tf

    from components.datagen.datagen_beam_shards import _SPILL_HEADER, _WriteTFRecordShard

    records = [(7, b"g"), (3, b"c"), (9, b"i" * 300), (3, b"b"), (1, b""), (5, b"e" * 70000)]
    paths = []
    for k, part in enumerate((records[:2], records[2:])):
        path = tmp_path / f"s{k}.spill"
        path.write_bytes(b"".join(_SPILL_HEADER.pack(key, len(v)) + v for key, v in part))
        paths.append(str(path))
    out = tmp_path / "out"
    out.mkdir()
    writer = _WriteTFRecordShard({"train": str(out)}, {"train": 3}, compression)
    assert list(writer.process((("train", 1), paths))) == [("train", 1)]
    files = glob.glob(str(out / "data_tfrecord-00001-of-00003*"))
    assert len(files) == 1 and files[0].endswith(".gz") == (compression == "GZIP")
    got = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type=compression or None)]
    assert got == [v for _, v in sorted(records)]


def _save_text(value, path):
    with open(path, "w") as f:
        f.write(value)


def test_random_document_pool_respects_its_bounds(spm_model_path, tmp_path):
    """The pool is the documents with the smallest keys, cut by the document and character bounds (never below
    two documents), tokenized exactly like the generator would; Beam carries only small tuples and file names
    (the tokens go through one pool file in the work folder)."""
    import apache_beam as beam

    from components.datagen import datagen_beam_input
    from components.datagen import datagen_beam_pools
    from components.datagen.generate import tokenize_document
    from components.datagen.instances import VocabInfo
    from components.text.tokenization import AlbertTokenizer
    from components.text.tokenizers import TokenizerSpec

    docs = dict(datagen_beam_input.read_documents(FIXTURE))
    rule = datagen_beam_input.SplitRule(7, 0.0)  # every document trains: one pool
    keyed = list(datagen_beam_pools._pool_keys(FIXTURE, 7, rule))
    assert {split for split, _ in keyed} == {"train"}
    keys = sorted(item for _, item in keyed)
    assert len(keys) == len(docs) == 4
    tok = AlbertTokenizer(spm_model_path)
    vocab = VocabInfo.from_tokenizer(tok)
    first_three = sum(n for *_, n in keys[:3])
    for max_documents, max_chars, expected in [(3, 10 ** 9, 3), (4, 1, 2), (4, first_three, 3), (4, first_three - 1, 2)]:
        saved = str(tmp_path / f"pool-{max_documents}-{max_chars}.txt")
        work = str(tmp_path / f"work-{max_documents}-{max_chars}")
        with beam.Pipeline() as p:
            files = p | beam.Create([FIXTURE])
            _ = (datagen_beam_pools.split_document_pools(files, spm_model_path, TokenizerSpec(), "official", 7,
                                                         max_documents, max_chars, rule, work)
                 | beam.Map(_save_text, saved))
        pools_file = open(saved).read()
        assert os.path.dirname(pools_file) == work
        pools = datagen_beam_pools.load_pools(pools_file)
        assert list(pools) == ["train"]
        pool = pools["train"]
        assert pool.doc_ids == [doc_id for _, doc_id, _, _ in keys[:expected]]
        for i, doc_id in enumerate(pool.doc_ids):
            assert pool.document(i) == tokenize_document(tok, docs[doc_id], vocab)
    assert datagen_beam_pools.select_pool([], 10) == {}


def test_input_files_with_the_same_name_are_refused(tmp_path, spm_model_path):
    """Document ids are "<file name>:<index>": two files named alike would give two documents one id."""
    other = tmp_path / "copy"
    other.mkdir()
    twin = other / os.path.basename(FIXTURE)
    twin.write_text(open(FIXTURE).read())
    out = tmp_path / "out"
    for inputs in ([FIXTURE, str(twin)], [FIXTURE, FIXTURE]):
        with pytest.raises(ValueError, match="same name"):
            make_pretraining_data(inputs, spm_model_path, str(out), _config(), workers=1)
        assert not out.exists() and not glob.glob(str(out) + ".tmp-*")


TRAIN_WORDS = "apple river mountain garden window basket candle forest silver yellow".split()
EVAL_WORDS = "doctor engine village market winter bottle castle island violin rocket".split()


def _disjoint_corpus(path, n_docs, split_for_index, seed=0):
    """Documents of long sentences (so official-mode chunks often hold one sentence and draw a random
    document) written only with TRAIN_WORDS or only with EVAL_WORDS, by the split the document lands in."""
    import random

    rng = random.Random(seed)
    blocks = []
    for i in range(n_docs):
        words = EVAL_WORDS if split_for_index(i) == "eval" else TRAIN_WORDS
        blocks.append("".join(" ".join(rng.choice(words) for _ in range(rng.randint(30, 80))) + ".\n"
                              for _ in range(rng.randint(3, 6))) + "\n")
    path.write_text("".join(blocks), encoding="utf-8")


def _original_tokens(out, split):
    """Per instance, the ids before masking (masked positions get their masked_lm_ids back)."""
    import tensorflow as tf

    from trainer.input_pipeline import feature_spec

    files = sorted(glob.glob(os.path.join(out, f"Split-{split}", "*")))
    rows = []
    for rec in tf.data.TFRecordDataset(files, compression_type="GZIP"):
        ex = {k: v.numpy() for k, v in tf.io.parse_single_example(rec, feature_spec(64, 8)).items()}
        ids = ex["input_ids"].copy()
        real = ex["masked_lm_weights"] > 0
        ids[ex["masked_lm_positions"][real]] = ex["masked_lm_ids"][real]
        rows.append((set(ids[: int(ex["input_mask"].sum())].tolist()), int(ex["next_sentence_labels"][0])))
    return rows


def _run_datagen(spm_model_path, out, corpus, eval_files=None, sop_mode="official", eval_fraction=0.3):
    import apache_beam as beam

    from components.datagen import datagen_beam

    cfg = _config(sop_mode=sop_mode)
    dirs = {s: os.path.join(out, f"Split-{s}") for s in datagen_beam.SPLITS}
    for d in dirs.values():
        os.makedirs(d)
    with beam.Pipeline() as p:
        datagen_beam.build_pretraining_data(
            p, corpus, spm_model_path, dirs, os.path.join(out, "stats.json"),
            params=datagen_beam.instance_params(cfg.datagen), seed=cfg.seed, dupe_factor=2, num_shards=1,
            eval_fraction=eval_fraction, eval_document_files=eval_files)
    with open(os.path.join(out, "stats.json")) as f:
        return json.load(f), cfg.seed


@pytest.mark.parametrize("sop_mode", ["official", "nsp"])
def test_no_eval_document_text_in_training_instances(tmp_path, spm_model_path, tok, sop_mode):
    """Each split draws its random documents from its own documents: with train and eval documents written in
    disjoint vocabularies, no training instance holds an eval-only piece, nor an eval instance a train-only one,
    although random-document instances (label 1) are plentiful in both splits."""
    from components.datagen import datagen_beam_input

    seed = _config().seed
    corpus = tmp_path / "corpus.txt"
    _disjoint_corpus(corpus, 24, lambda i: datagen_beam_input.split_of(f"corpus.txt:{i}", seed, 0.3))
    stats, _ = _run_datagen(spm_model_path, str(tmp_path / "out"), [str(corpus)], sop_mode=sop_mode)
    train_ids = {tok.encode(w)[0] for w in TRAIN_WORDS}
    eval_ids = {tok.encode(w)[0] for w in EVAL_WORDS}
    for split, own, other in (("train", train_ids, eval_ids), ("eval", eval_ids, train_ids)):
        rows = _original_tokens(str(tmp_path / "out"), split)
        assert len(rows) == stats["splits"][split]["instances"] > 10
        assert stats["splits"][split]["sop_random_next_instances"] > 0 or sop_mode == "nsp"
        assert sum(label for _, label in rows) > 0
        assert all(ids & own for ids, _ in rows)
        assert not any(ids & other for ids, _ in rows), split


def test_eval_document_files_form_the_eval_split(tmp_path, spm_model_path, tok):
    """``eval_document_files`` (the paper's dev set from SQuAD/RACE dev documents): those documents and only
    they are the eval split; every corpus document trains; random documents stay within each split."""
    corpus, dev = tmp_path / "corpus.txt", tmp_path / "dev_documents.txt"
    _disjoint_corpus(corpus, 12, lambda i: "train", seed=1)
    _disjoint_corpus(dev, 5, lambda i: "eval", seed=2)
    stats, _ = _run_datagen(spm_model_path, str(tmp_path / "out"), [str(corpus)], eval_files=[str(dev)])
    train_ids = {tok.encode(w)[0] for w in TRAIN_WORDS}
    eval_ids = {tok.encode(w)[0] for w in EVAL_WORDS}
    train_rows, eval_rows = (_original_tokens(str(tmp_path / "out"), s) for s in ("train", "eval"))
    assert train_rows and eval_rows
    assert all(ids & train_ids and not ids & eval_ids for ids, _ in train_rows)
    assert all(ids & eval_ids and not ids & train_ids for ids, _ in eval_rows)
    assert stats["splits"]["eval"]["sop_random_next_instances"] > 0
    # Every corpus document contributes to train (none held out by eval_fraction).
    assert stats["splits"]["train"]["instances"] >= 12
