"""A pushed version served from raw text as TF Serving would: :func:`check_version` runs this file in a fresh
process that imports only ``tensorflow`` and ``tensorflow_text`` (it fails when anything of the project is loaded),
and compares what it answers with the project's tokenizer and model code in the calling process.

In the fresh process (``python tests/raw_text_probe.py <version> <request.json>``): ``preprocess/`` tokenizes the
texts (``tokenize`` and ``serving_default``), ``encoder/`` gives their ``pooled_output``, the version's ids
SavedModel (where it has one) gives its ``pooled_output`` on the ids the caller packed with the project's
tokenizer, and ``text_model/`` answers ``embed`` and ``fill_mask``.
"""
import json
import os
import subprocess
import sys

TOP_K = 5


def _serve(version: str, request_path: str) -> None:
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers TF Text's ops, as TF Serving links them)

    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    texts = tf.constant(request["texts"])
    pre = tf.saved_model.load(os.path.join(version, "preprocess"))
    encoder = tf.saved_model.load(os.path.join(version, "encoder"))
    text_model = tf.saved_model.load(os.path.join(version, "text_model"))
    packed = pre.signatures["serving_default"](text=texts)
    answer = {
        "ids": pre.tokenize(texts).to_list(),
        "input_word_ids": packed["input_word_ids"].numpy().tolist(),
        "pooled_output": encoder.signatures["serving_default"](**packed)["pooled_output"].numpy().tolist(),
        "embed": text_model.signatures["embed"](text=texts)["pooled_output"].numpy().tolist(),
        "pair_type_ids": pre.signatures["pair"](text_a=texts, text_b=texts)["input_type_ids"].numpy().tolist(),
    }
    length = packed["input_word_ids"].shape[1]
    word_ids = np.full((len(request["ids"]), length), request["pad_id"], np.int32)
    mask = np.zeros_like(word_ids)
    for i, row in enumerate(request["ids"]):  # the project tokenizer's ids, packed as the GLUE featurisation does
        row = [request["cls_id"]] + row[: length - 2] + [request["sep_id"]]
        word_ids[i, : len(row)], mask[i, : len(row)] = row, 1
    answer["ids_inputs"] = {"input_ids": word_ids.tolist(), "input_mask": mask.tolist()}
    if os.path.exists(os.path.join(version, "saved_model.pb")):  # the ids path
        ids_model = tf.saved_model.load(version).signatures["serving_default"]
        out = ids_model(input_ids=tf.constant(word_ids), input_mask=tf.constant(mask),
                        segment_ids=tf.zeros_like(tf.constant(word_ids)))
        answer["ids_path_pooled_output"] = out["pooled_output"].numpy().tolist()
    if "fill_mask" in text_model.signatures:
        filled = text_model.signatures["fill_mask"](text=tf.constant(request["masked"]))
        answer["fill_mask"] = {k: v.numpy().tolist() if v.dtype != tf.string else
                               [[[t.decode("utf-8") for t in m] for m in row] for row in v.numpy().tolist()]
                               for k, v in filled.items()}
    project = sorted(m for m in sys.modules if m.split(".")[0] in ("components", "trainer", "config", "pipeline"))
    answer["project_modules"] = project
    answer["finite"] = bool(np.isfinite(answer["pooled_output"]).all())
    print(json.dumps(answer))


def check_version(version: str, texts, masked, tmp_path, env=None):
    """Serve ``version`` in a fresh process and check it against the project's tokenizer and model; returns the
    fresh process's answer."""
    import numpy as np
    import tensorflow as tf

    from components.release.raw_text import folder_spec
    from components.text.tokenizers import load_tokenizer
    from trainer.convert import load_albert_dir
    from trainer.vocabulary import vocabulary_file

    albert = os.path.join(version, "checkpoint")
    info = os.path.join(albert, "export_info.json")
    lower = True
    if os.path.exists(info):
        with open(info) as f:
            lower = json.load(f).get("do_lower_case", True)
    path = vocabulary_file(albert)
    with open(path, "rb") as f:
        tokenizer = load_tokenizer(f.read(), folder_spec(albert, lower), path)
    ids = [tokenizer.encode(t) for t in texts]
    request = {"texts": list(texts), "masked": list(masked), "ids": ids, "cls_id": tokenizer.cls_id,
               "sep_id": tokenizer.sep_id, "pad_id": tokenizer.pad_id}
    request_path = os.path.join(str(tmp_path), "request.json")
    with open(request_path, "w", encoding="utf-8") as f:
        json.dump(request, f)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), version, request_path], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["project_modules"] == []
    assert answer["ids"] == ids  # in-graph tokenization == the project's tokenizer
    assert answer["input_word_ids"] == answer["ids_inputs"]["input_ids"]
    if "ids_path_pooled_output" in answer:
        reference = answer["ids_path_pooled_output"]
    else:  # an imported encoder-only model has no ids SavedModel: the project's model code on the same ids
        model = load_albert_dir(albert)
        inputs = {k: tf.constant(v, tf.int32) for k, v in answer["ids_inputs"].items()}
        reference = getattr(model, "albert", model)(
            {**inputs, "segment_ids": tf.zeros_like(inputs["input_ids"])})["pooled_output"].numpy()
    np.testing.assert_allclose(answer["pooled_output"], reference, atol=1e-5)
    np.testing.assert_allclose(answer["embed"], reference, atol=1e-5)
    return answer


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
