"""The raw-text task export is all or nothing (components/evaluation/task_serving.py): a check that fails leaves
neither the staging folder, nor serving_model/, nor serving_info.json, nor a task folder it created; a good export
moves both into place and writes the signature's names."""
import json
import os

import pytest
import tensorflow as tf

from components.evaluation.glue.serving import ServingExportError
from components.evaluation.task_serving import export_task_serving


def _build():
    module = tf.Module()
    module.v = tf.Variable(2.0)
    fn = tf.function(lambda text_a: {"label_id": tf.cast(tf.strings.length(text_a), tf.int32),
                                     "scores": tf.fill([tf.size(text_a), 2], module.v)}, autograph=False)
    return module, fn.get_concrete_function(tf.TensorSpec([None], tf.string, name="text_a"))


def test_a_failed_check_leaves_nothing(tmp_path):
    def check(serve):
        raise ValueError("served labels differ")

    with pytest.raises(ServingExportError, match=r"^T: exporting the raw-text serving model to .*T/serving_model "
                                                 r"failed: ValueError: served labels differ$"):
        export_task_serving("T", str(tmp_path), "classify", _build, check, 16)
    assert os.listdir(tmp_path) == []


def test_an_export_moves_the_model_and_its_info_into_place(tmp_path):
    (tmp_path / "T").mkdir()
    seen = {}

    def check(serve):
        seen["out"] = serve(text_a=tf.constant(["ab", "abc"]))["label_id"].numpy().tolist()
        return {"split": "dev", "rows": 2, "same_predictions": 2}

    result = export_task_serving("T", str(tmp_path), "classify", _build, check, 16, labels=["x", "y"])
    assert seen["out"] == [2, 3]  # the check ran the saved and reloaded signature
    assert result == {"serving_model": os.path.join("T", "serving_model"),
                      "serving_info": os.path.join("T", "serving_info.json"),
                      "serving_check": {"split": "dev", "rows": 2, "same_predictions": 2}}
    assert sorted(os.listdir(tmp_path / "T")) == ["serving_info.json", "serving_model"]
    assert json.loads((tmp_path / "T" / "serving_info.json").read_text()) == {
        "kind": "classify", "inputs": ["text_a"], "outputs": ["label_id", "scores"], "labels": ["x", "y"],
        "max_seq_length": 16}
