"""Shared test setup: one Keras (tf_keras), quiet TF logs, paths of the bundled sample data."""
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

SAMPLE = os.path.join(REPO, "data", "sample")

# Data too big for the repository (full GLUE/SQuAD/RACE, the 206-page dump, whole Gutenberg books) is found
# through ONE setting: ALBERT_TFX_DATA_DIR. Unset, tests look at ../shared/data next to the repository (the
# layout README documents); tests needing a file that is absent there skip and name the variable.
DATA_DIR_VAR = "ALBERT_TFX_DATA_DIR"


def shared_data_dir() -> str:
    return os.environ.get(DATA_DIR_VAR) or os.path.join(os.path.dirname(REPO), "shared", "data")


def shared_path(*parts: str) -> str:
    """``$ALBERT_TFX_DATA_DIR/<parts>``, or skip the calling test saying which variable to set."""
    path = os.path.join(shared_data_dir(), *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: set {DATA_DIR_VAR} to the shared data folder (e.g. "
                    f"{DATA_DIR_VAR}=../shared/data) to run this test")
    return path


@pytest.fixture(scope="session")
def shared_data():
    """``shared_data("glue_data")`` → that path under $ALBERT_TFX_DATA_DIR, or a skip naming the variable."""
    return shared_path


@pytest.fixture(scope="session")
def sample_dir() -> str:
    return SAMPLE


@pytest.fixture(scope="session")
def spm_model_path() -> str:
    return os.path.join(SAMPLE, "vocab", "30k-clean.model")


@pytest.fixture(scope="session")
def tok(spm_model_path):
    """The official ALBERT tokenizer (bundled 30k-clean.model)."""
    from components.text.tokenization import AlbertTokenizer

    return AlbertTokenizer(spm_model_path)


@pytest.fixture(scope="session")
def vocab(tok):
    """Datagen's view of that vocabulary (word starts, special ids)."""
    from components.datagen.instances import VocabInfo

    return VocabInfo.from_tokenizer(tok)


@pytest.fixture(scope="session")
def datagen_texts():
    """tests/fixtures/datagen_text.txt (real public-domain prose) as documents of sentences."""
    with open(os.path.join(REPO, "tests", "fixtures", "datagen_text.txt"), encoding="utf-8") as f:
        return [d.split("\n") for d in f.read().strip().split("\n\n")]


@pytest.fixture(scope="session")
def datagen_docs(tok, vocab, datagen_texts):
    """The same documents tokenized with the official vocabulary: one id array per sentence."""
    from components.datagen.generate import tokenize_document

    return [tokenize_document(tok, d, vocab) for d in datagen_texts]


# Masked examples for the pretraining-loop tests (resume, strategies): the datagen Beam code on
# tests/fixtures/datagen_text.txt with the bundled 30k vocabulary, three uneven shards (a run crosses file and epoch
# boundaries), sequences of 64.
RESUME_DATA = ["datagen.max_seq_length=64", "datagen.max_predictions_per_seq=10", "datagen.dupe_factor=3",
               "datagen.num_shards=3", "datagen.eval_fraction=0.2"]


@pytest.fixture(scope="session")
def resume_examples(tmp_path_factory):
    """{"dir": the examples folder (laid out like the Examples artifact), "stats": datagen's statistics}."""
    import shutil

    from components.datagen_tool import make_pretraining_data
    from pipeline.configs import build_config

    root = tmp_path_factory.mktemp("resume")
    docs = root / "docs"
    docs.mkdir()
    shutil.copyfile(os.path.join(REPO, "tests", "fixtures", "datagen_text.txt"), docs / "documents-00000-of-00001.txt")
    out = str(root / "examples")
    stats = make_pretraining_data([str(docs)], os.path.join(SAMPLE, "vocab", "30k-clean.model"), out,
                                  build_config("sample", overrides=RESUME_DATA))
    return {"dir": out, "stats": stats}


def export_untrained_albert(d, seed, **overrides):
    """An albert dir as ``train_lib.export`` writes it (config, encoder checkpoint, the official 30k-clean
    vocabulary), from an untrained albert-tiny drawn with ``seed``: what the benchmark tests fine-tune."""
    import shutil

    import tensorflow as tf

    from pipeline.configs import SAMPLE_DATA
    from trainer import train_lib
    from trainer.modeling_albert import AlbertConfig, AlbertForPreTraining

    os.makedirs(d, exist_ok=True)
    tf.keras.utils.set_random_seed(seed)
    config = AlbertConfig.named("albert-tiny", vocab_size=30000, **overrides)
    model = AlbertForPreTraining(config)
    model(model.dummy_inputs(batch_size=1, seq_len=8, num_predictions=2))
    config.to_json_file(os.path.join(d, train_lib.CONFIG_FILE), official=True)
    tf.train.Checkpoint(encoder=model.albert).write(os.path.join(d, train_lib.ENCODER_CKPT))
    shutil.copy(os.path.join(SAMPLE_DATA, "vocab", "30k-clean.model"), os.path.join(d, train_lib.SPM_FILE))
    return d


def tiny_benchmark_config(steps, batch, seq, **bench):
    """The sample config with every fine-tuning row made tiny (lr 1e-3, 1 warm-up step); ``bench`` sets
    ``benchmarks.*`` fields. The raw-text export and TFMA (Beam pipelines) run only where a test asks for them."""
    from pipeline.configs import FinetuneHParams, sample_config

    cfg = sample_config()
    hp = FinetuneHParams(1e-3, batch, 0.0, 0.1, train_steps=steps, warmup_steps=1, max_seq_length=seq)
    cfg.benchmarks.hparams = {name: hp for name in cfg.benchmarks.hparams}
    bench.setdefault("export_serving_model", False)
    bench.setdefault("tfma", False)
    for key, value in bench.items():
        setattr(cfg.benchmarks, key, value)
    return cfg


def squad_v2_from_v1(path):
    """A SQuAD 2.0-shaped dataset from a v1.1 file: every third question becomes unanswerable (its answers move to
    ``plausible_answers``), as in the official v2 data."""
    import json

    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    k = 0
    for article in data["data"]:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qa["is_impossible"] = k % 3 == 0
                if qa["is_impossible"]:
                    qa["plausible_answers"], qa["answers"] = qa["answers"], []
                k += 1
    data["version"] = "v2.0"
    return data


# `make test-quick` runs `-m "not slow"`. Modules that train models, fine-tune, run whole DAGs or start Beam /
# tf.Transform pipelines in subprocesses are slow as a whole; marking them here keeps the list in one place (their
# files may also carry `pytestmark = pytest.mark.slow`).
SLOW_MODULES = {"test_pipeline_e2e.py", "test_cli_run.py", "test_trainer.py", "test_exit_codes.py",
                "test_eval_transform.py", "test_eval_tfma.py", "test_eval_runner.py", "test_hf_parity.py",
                "test_crash_rerun.py", "test_cli_errors.py", "test_install.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


# tf.Transform / TensorFlow processes can segfault during interpreter teardown (a protobuf upb bug) after
# every test has finished and the summary is printed. Leave with pytest's own status instead, so the exit
# code reports the tests. ALBERT_TFX_HARD_EXIT=0 restores normal teardown (e.g. for coverage tools).
def pytest_sessionfinish(session, exitstatus):
    session.config._albert_exitstatus = int(exitstatus)


def pytest_unconfigure(config):
    status = getattr(config, "_albert_exitstatus", None)
    if status is not None and os.environ.get("ALBERT_TFX_HARD_EXIT", "1") == "1":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
