"""Peak memory of ``albert-pipeline make-pretraining-data``, measured on the real entry point in its own process.

The command needs neither TensorFlow nor TFX; loading TensorFlow for nothing (the CLI's start-up and the examples
fingerprint) put ~0.6 GB on its peak RSS, and Beam's copies of the random-document pool another 0.1-0.2 GB.
``benchmarks/datagen_memory.py`` measures the same against corpus size (docs/data.md, "Pretraining-data generation at
corpus scale")."""
import glob
import os
import subprocess

from benchmarks.datagen_memory import peak_rss
from tests.conftest import CLI, REPO, SAMPLE, cli_env

# Measured with this command (AMD EPYC, 2 cores): 263 MiB; 888 MiB with TensorFlow loaded, as it was before.
PEAK_RSS_BOUND_MIB = 400


def test_make_pretraining_data_peak_rss_stays_under_the_bound(tmp_path):
    """The bundled sample books through the whole command (official SOP with its random-document pool, L=512): the
    kernel's peak RSS of the process stays under the bound, and the run wrote its examples. (Started through
    ``peak_rss``'s small launcher: a child forked from this TensorFlow-sized pytest process would inherit its peak.)"""
    out = tmp_path / "examples"
    code, peak_mib = peak_rss(
        [CLI, "--log-file", str(tmp_path / "run.log"), "make-pretraining-data", "--input",
         os.path.join(SAMPLE, "books"), "--spm-model", os.path.join(SAMPLE, "vocab", "30k-clean.model"),
         "--output", str(out), "--set", "datagen.max_seq_length=512"],
        cwd=REPO, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert code == 0, (tmp_path / "run.log").read_text()[-2000:]
    assert glob.glob(str(out / "Split-train" / "data_tfrecord-*.gz")), "no training examples written"
    assert peak_mib < PEAK_RSS_BOUND_MIB, f"peak RSS {peak_mib:.0f} MiB (bound {PEAK_RSS_BOUND_MIB} MiB)"


def test_local_fingerprint_equals_the_tensorflow_filesystem_one(tmp_path):
    """The examples fingerprint reads local folders without TensorFlow; it must equal what ``tf.io.gfile`` (still
    used for gs://) gives for the same files, since Trainer checkpoints are keyed by it."""
    from trainer import examples_info

    root = tmp_path / "ex"
    (root / "Split-train" / "sub").mkdir(parents=True)
    (root / "vocab").mkdir()
    (root / "Split-train" / "data_tfrecord-00000-of-00001.gz").write_bytes(bytes(range(256)) * 5000)
    (root / "Split-train" / "sub" / "b").write_bytes(b"x")
    (root / "vocab" / "spm.model").write_bytes(b"model")
    names = ["Split-train", "vocab", "absent"]
    local = examples_info.fingerprint(str(root), names)
    assert examples_info.fingerprint("file://" + str(root), names) == local
    (root / "Split-train" / "sub" / "b").write_bytes(b"y")
    assert examples_info.fingerprint(str(root), names) != local
    examples_info.write_info(str(root), {"fingerprint": local})
    assert examples_info.read_info("file://" + str(root)) == examples_info.read_info(str(root)) == {
        "fingerprint": local}
