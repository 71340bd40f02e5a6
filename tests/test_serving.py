"""``albert-pipeline serve`` as the container runs it, and ``albert-pipeline predict`` on the same loader.

Tiny real model folders (tests/serving_models.py: an untrained albert-tiny, TF Text tokenization in the raw-text
graphs) are built once for the module; the server is started once, as a process with Vertex AI's variables
(``AIP_HTTP_PORT``, ``AIP_HEALTH_ROUTE``, ``AIP_PREDICT_ROUTE``, ``AIP_STORAGE_URI``), and spoken to over loopback
with httpx. ``predict`` runs in this process (the ``cli`` fixture).
"""
import asyncio
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from tests import serving_models
from tests.conftest import CLI, REPO, cli_env

pytestmark = pytest.mark.slow  # a server process and six tiny SavedModels: about 25 s of CPU beyond TF's import

HEALTH = "/v1/endpoints/123/deployedModels/456"
PREDICT = "/v1/endpoints/123/deployedModels/456:predict"
CAT = "the cat sat on the [MASK] ."


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("serving_models")
    return {"en": serving_models.pushed_version(str(base / "releases" / "1"), text_model=True),
            "zh": serving_models.pushed_version(str(base / "zh" / "1"), wordpiece=True),
            "pair": serving_models.task_model(str(base / "MNLI"), pair=True),
            "single": serving_models.task_model(str(base / "SST-2"), pair=False, num_labels=2),
            "choose": serving_models.choice_model(str(base / "RACE"))}


@pytest.fixture(scope="module")
def server(models):
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = cli_env(AIP_HTTP_PORT=str(port), AIP_HEALTH_ROUTE=HEALTH, AIP_PREDICT_ROUTE=PREDICT,
                  AIP_STORAGE_URI=models["en"])
    proc = subprocess.Popen([CLI, "serve", "--host", "127.0.0.1", "--max-instances", "4", "--max-text-chars", "200",
                             "--max-wait-ms", "100"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300
    while True:
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert time.time() < deadline, "the server did not answer its health route"
        try:
            if httpx.get(base + HEALTH, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def _post(server, body, **kwargs):
    import httpx

    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server + PREDICT, content=content, headers={"content-type": "application/json"}, timeout=60,
                      **kwargs)


def test_the_health_route_says_what_is_served(server, models):
    import httpx

    health = httpx.get(server + HEALTH).json()
    assert health["status"] == "ready" and health["model"] == models["en"] and health["kind"] == "version"
    assert health["default"] == "embed"
    methods = health["methods"]
    assert methods["embed"] == {"inputs": ["text (string)"], "source": "text_model/ signature embed"}
    assert methods["fill_mask"] == {"inputs": ["text (string)"], "source": "text_model/ signature fill_mask"}
    assert methods["serving_default"]["inputs"] == ["input_ids (int32[?])", "input_mask (int32[?])",
                                                    "segment_ids (int32[?])"]


def test_raw_text_in_the_graph_equals_the_project_tokenizer_then_the_ids_signature(server, models):
    """The text graph (TF Text's SentencePiece) and the ids path (the project's tokenizer) give one embedding."""
    from components.text.tokenizers import TokenizerSpec, load_tokenizer

    text = "the cat sat on the mat"
    embed = _post(server, {"instances": [text]})
    assert embed.status_code == 200, embed.text
    with open(os.path.join(models["en"], "vocab", "spm.model"), "rb") as f:
        ids = [2] + load_tokenizer(f.read(), TokenizerSpec()).encode(text) + [3]
    by_ids = _post(server, {"signature_name": "serving_default",
                            "instances": [{"input_ids": ids, "input_mask": [1] * len(ids),
                                           "segment_ids": [0] * len(ids)}]})
    assert by_ids.status_code == 200, by_ids.text
    np.testing.assert_allclose(embed.json()["predictions"][0]["pooled_output"],
                               by_ids.json()["predictions"][0]["pooled_output"], atol=1e-5)


def test_fill_mask_over_http_is_what_predict_prints_and_what_the_ids_path_gives(server, models, cli, tmp_path):
    texts = [CAT, "[MASK] sat on the [MASK] ."]
    answer = _post(server, {"instances": texts, "parameters": {"signature_name": "fill_mask"}})
    assert answer.status_code == 200, answer.text
    first, second = answer.json()["predictions"]
    assert len(first["tokens"]) == 1 and len(second["tokens"]) == 2 and len(first["tokens"][0]) == 5
    assert "path" not in first  # text_model/'s graph: [B, M, K] trimmed to each text's own masks
    scores = first["scores"][0]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1
    done = cli("predict", "fill-mask", "--model", models["en"], *texts)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [first, second]
    # The same version without text_model/: the project's tokenizer in Python, then the ids signature.
    ids_only = shutil.copytree(models["en"], tmp_path / "1", ignore=shutil.ignore_patterns("text_model"))
    done = cli("predict", "fill-mask", "--model", ids_only, *texts)
    assert done.returncode == 0, done.stderr
    for graph, ids in zip([first, second], map(json.loads, done.stdout.splitlines())):
        assert ids["path"] == "ids" and ids["token_ids"] == graph["token_ids"] and ids["tokens"] == graph["tokens"]
        np.testing.assert_allclose(ids["scores"], graph["scores"], rtol=1e-5)


@pytest.mark.parametrize("body,status,error", [
    ({"instances": [{"input_ids": [2, 3]}], "signature_name": "serving_default"}, 400,
     "instances[0].input_mask: missing (this model takes input_ids (int32[?]), input_mask (int32[?]), "
     "segment_ids (int32[?]))"),
    ({"instances": [7]}, 400, "instances[0].text: must be a string, got an integer"),
    ({"instances": []}, 400, "instances: empty: send at least one instance"),
    ({"instances": ["a"] * 5}, 413, "instances: 5 instances, more than the server's limit of 4 per request "
                                    "(serve --max-instances)"),
    ({"instances": ["word " * 41]}, 400, "instances[0].text: a text of 205 characters, more than the server's limit "
                                         "of 200 (serve --max-text-chars)"),
    ({"instances": ["the cat sat on the mat " * 4]}, 400,
     "instances[0].text: 26 pieces (with 2 special tokens) do not fit the model's sequence of 16; shorten the text, "
     "or serve/predict with --truncate to cut it as training does"),
    ({"instances": ["the cat sat on the mat " * 4 + "[MASK]"], "signature_name": "fill_mask"}, 400,
     "instances[0].text: 27 pieces (with 2 special tokens) do not fit the model's sequence of 16"),
    ({"instances": ["no mask here"], "signature_name": "fill_mask"}, 400,
     "instances[0].text: no [MASK] in the text: fill_mask predicts the tokens at [MASK]"),
    ({"instances": ["x"], "signature_name": "classify"}, 400,
     "signature_name: 'classify' is not served (this model serves embed, fill_mask, serving_default)"),
    (b'{"instances": ["caf\xe9"]}', 400, "body: not UTF-8 (byte 19): send JSON in UTF-8"),
    (b'{"instances": ["x"', 400, "body: not JSON (Expecting ',' delimiter at line 1 column 19)"),
])
def test_a_bad_request_gets_a_4xx_naming_its_field_and_the_next_good_one_succeeds(server, body, status, error):
    bad = _post(server, body)
    assert bad.status_code == status and error in bad.json()["error"], bad.text
    assert "\n" not in bad.json()["error"]
    good = _post(server, {"instances": ["the cat sat"]})
    assert good.status_code == 200 and len(good.json()["predictions"][0]["pooled_output"]) == 128, good.text


def test_concurrent_requests_are_batched_and_each_gets_its_own_answer(server):
    import httpx

    texts = [f"the {w} sat on the mat" for w in ("cat", "dog", "man", "bird", "fish", "king")]
    alone = {t: _post(server, {"instances": [t]}).json()["predictions"][0]["pooled_output"] for t in texts}
    calls_before = httpx.get(server + HEALTH).json()["batching"]["model_calls"]

    async def together():
        async with httpx.AsyncClient(timeout=60) as client:
            return await asyncio.gather(*(client.post(server + PREDICT, json={"instances": [t]}) for t in texts))

    answers = asyncio.run(together())
    for text, answer in zip(texts, answers):
        np.testing.assert_allclose(answer.json()["predictions"][0]["pooled_output"], alone[text], atol=1e-5)
    batching = httpx.get(server + HEALTH).json()["batching"]
    assert batching["max_batch"] == 32 and batching["max_wait_ms"] == 100
    assert batching["model_calls"] - calls_before < len(texts)  # joined within the 100 ms wait


def test_predict_fill_mask_reads_a_chinese_wordpiece_version(models, cli):
    done = cli("predict", "fill-mask", "--model", models["zh"], "这是一个软件[MASK]。")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert len(row["tokens"]) == 1 and len(row["tokens"][0]) == 5 and row["path"] == "ids"
    with open(serving_models.WORDPIECE, encoding="utf-8") as f:
        vocab = f.read().splitlines()
    assert row["tokens"][0] == [vocab[i] for i in row["token_ids"][0]]


def test_predict_classify_runs_the_task_models_graph_from_arguments_and_json_lines(models, cli, monkeypatch):
    import tensorflow as tf

    done = cli("predict", "classify", "--model", models["pair"], "a man sleeps", "a person rests")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    direct = tf.saved_model.load(os.path.join(models["pair"], "serving_model")).signatures["serving_default"](
        text_a=tf.constant(["a man sleeps"]), text_b=tf.constant(["a person rests"]))
    assert row["class_ids"] == int(direct["class_ids"][0])
    np.testing.assert_allclose(row["probabilities"], direct["probabilities"][0].numpy(), rtol=1e-6)
    lines = '{"text_a": "a man sleeps", "text_b": "a person rests"}\n\n{"text_a": "x", "text_b": "y"}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    piped = cli("predict", "classify", "--model", os.path.join(models["pair"], "serving_model"))
    assert piped.returncode == 0, piped.stderr
    rows = [json.loads(line) for line in piped.stdout.splitlines()]
    assert len(rows) == 2 and rows[0]["class_ids"] == row["class_ids"]


def test_predict_choose_takes_the_options_after_context_and_question(models, cli):
    done = cli("predict", "choose", "--model", models["choose"], "the cat sat on the mat", "where did it sit ?",
               "on the mat", "on a tree", "in a box")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert len(row["scores"]) == 3 and row["choice"] == int(np.argmax(row["scores"]))


@pytest.mark.parametrize("case,args,message", [
    ("pair", ["classify", "--model", "{single}", "good film", "bad film"],
     "predict classify: 2 texts given (a text pair for a single-text model), but --model {single} takes 1: TEXT_A"),
    ("mask", ["fill-mask", "--model", "{en}", "no mask here"],
     "predict fill-mask --model {en}: TEXT 1 (text): no [MASK] in the text"),
    ("task", ["fill-mask", "--model", "{pair}", "the [MASK]"],
     "predict fill-mask: --model {pair} is a classify model; fill-mask needs a pushed version folder"),
    ("version", ["answer", "--model", "{en}", "who?", "me"],
     "predict answer: --model {en} is a pushed version (predict fill-mask, embed), not a answer model"),
    ("novocab", ["embed", "--model", "{novocab}", "x"],
     "--model {novocab}: {novocab}/vocab holds no vocabulary (spm.model or vocab.txt)"),
    ("nomodel", ["embed", "--model", "{nomodel}", "x"],
     "--model {nomodel} holds neither the ids SavedModel (saved_model.pb) nor text_model/"),
    ("missing", ["embed", "--model", "{missing}", "x"], "--model {missing} is not a folder"),
    ("long", ["embed", "--model", "{en}", "the cat sat on the mat " * 4],
     "predict embed --model {en}: TEXT 1 (text): 26 pieces (with 2 special tokens) do not fit the model's sequence "
     "of 16; shorten the text, or serve/predict with --truncate"),
    ("options", ["choose", "--model", "{choose}", "context", "question"],
     "predict choose: 2 texts given, but --model {choose} takes 3: CONTEXT, QUESTION, OPTIONS"),
])
def test_predict_refuses_bad_input_with_exit_2_and_one_line(models, cli, tmp_path, case, args, message):
    paths = dict(models, missing=str(tmp_path / "nothing"), novocab=str(tmp_path / "novocab"),
                 nomodel=str(tmp_path / "nomodel"))
    os.makedirs(paths["novocab"])
    with open(os.path.join(paths["novocab"], "release.json"), "w") as f:
        f.write("{}")
    shutil.copytree(os.path.join(models["en"], "vocab"), os.path.join(paths["nomodel"], "vocab"))
    done = cli("predict", *[a.format(**paths) for a in args])
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message.format(**paths) in lines[0] and "Traceback" not in done.stderr, lines


def test_positional_inputs_follow_serving_info_then_each_kinds_convention():
    from pipeline.serving.served_model import input_order

    assert input_order({"inputs": ["context", "question"], "kind": "answer"})[:2] == ["context", "question"]
    assert input_order({"inputs": [{"name": "text_b"}, {"name": "text_a"}]})[:3] == ["text_b", "text_a", "text"]
    assert [n for n in input_order({"kind": "answer"}) if n in ("question", "context")] == ["question", "context"]
    assert input_order({"kind": "choose"})[:3] == ["context", "question", "options"]
