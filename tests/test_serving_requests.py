"""The serving contract without a model: a request's checks (pipeline/serving/serving_instances.py), the
micro-batcher (pipeline/serving/micro_batcher.py, real asyncio, a plain function as the model), the AIP_*
settings (serving_app.py) and the Vertex AI requests `deploy` builds (vertex_serving.py, offline)."""
import asyncio
import json
import threading

import numpy as np
import pytest

from config.errors import InputError
from pipeline.serving import serving_instances as si
from pipeline.serving.micro_batcher import MicroBatcher

PAIR = (si.InputSpec("text_a", "string"), si.InputSpec("text_b", "string"))
IDS = (si.InputSpec("input_ids", "int32", (None,)),)
CHOOSE = (si.InputSpec("context", "string"), si.InputSpec("options", "string", (4,)))


def _error(fn, *args, **kwargs):
    with pytest.raises(si.RequestError) as info:
        fn(*args, **kwargs)
    return info.value.status, str(info.value)


@pytest.mark.parametrize("body,status,message", [
    (b'{"instances": [{"text_a": "\xff"}]}', 400, "body: not UTF-8 (byte 27): send JSON in UTF-8"),
    (b'{"instances": [', 400, "body: not JSON (Expecting value at line 1 column 16)"),
    (b'[1]', 400, 'body: must be a JSON object {"instances": [...]}'),
    (b'{"inputs": {"text_a": ["x"]}}', 400, "instances: missing: the body is {\"instances\": [...]} (TF Serving's "
                                            "columnar \"inputs\" is not supported)"),
    (b'{"instances": {"text_a": "x"}}', 400, "instances: must be a list, got an object"),
    (b'{"instances": []}', 400, "instances: empty: send at least one instance"),
    (b'{"instances": [1, 2, 3]}', 413, "instances: 3 instances, more than the server's limit of 2 per request "
                                       "(serve --max-instances)"),
    (b'{"instances": [1], "signature_name": 3}', 400, "signature_name: must be a string, got an integer"),
])
def test_a_bad_body_is_named_in_one_line(body, status, message):
    assert _error(si.parse_body, body, max_instances=2) == (status, message)


def test_a_good_body_gives_its_instances_and_the_method_from_either_contract():
    assert si.parse_body(b'{"instances": ["a", "b"], "signature_name": "embed"}') == si.Request(["a", "b"], "embed")
    assert si.parse_body('{"instances": ["é"], "parameters": {"signature_name": "fill_mask"}}'.encode()) \
        == si.Request(["é"], "fill_mask")


@pytest.mark.parametrize("inputs,instance,message", [
    (PAIR, {"text_a": "x"}, "instances[1].text_b: missing (this model takes text_a (string), text_b (string))"),
    (PAIR, {"text_a": 1, "text_b": "y"}, "instances[1].text_a: must be a string, got an integer"),
    (PAIR, {"text_a": "x", "text_b": "y", "label": 1}, "instances[1].label: not an input of this model (it takes "
                                                       "text_a (string), text_b (string))"),
    (PAIR, "x", "instances[1]: must be an object with text_a, text_b, got a string"),
    (PAIR, {"text_a": "x" * 11, "text_b": "y"}, "instances[1].text_a: a text of 11 characters, more than the "
                                               "server's limit of 10 (serve --max-text-chars)"),
    (IDS, {"input_ids": [1, 2.5]}, "instances[1].input_ids: must be integers, got a number"),
    (IDS, {"input_ids": 3}, "instances[1].input_ids: must be a list nested 1 deep, got an integer at depth 0"),
    (IDS, {"input_ids": []}, "instances[1].input_ids: empty list"),
    (CHOOSE, {"context": "c", "options": ["a", "b"]}, "instances[1].options: has shape [2], the model takes "
                                                     "options (string[4])"),
    (CHOOSE, {"context": "c", "options": ["a", "b", ["c"], "d"]}, "instances[1].options: nested deeper than the "
                                                                 "model's 1 dimension(s)"),
])
def test_a_bad_instance_is_named_by_its_index_and_field(inputs, instance, message):
    assert _error(si.check_instance, inputs, 1, instance, max_text_chars=10) == (400, message)


def test_instances_become_arrays_that_stack_by_shape_and_rows_come_back_as_json():
    a = si.check_instance(PAIR, 0, {"text_a": "é", "text_b": "x"})
    assert a["text_a"].tolist() == "é".encode() and a["text_a"].shape == ()
    one = si.check_instance(IDS, 0, [1, 2])  # one input: the bare value is the instance (TF Serving's rows)
    two = si.check_instance(IDS, 1, {"input_ids": [3, 4]})
    three = si.check_instance(IDS, 2, {"input_ids": [5]})
    assert si.batch_key(one) == si.batch_key(two) != si.batch_key(three)
    assert si.stack([one, two])["input_ids"].tolist() == [[1, 2], [3, 4]]
    rows = si.rows({"label": np.array([b"yes", b"no"], dtype=object), "scores": np.array([[0.5, 0.5], [1, 0]],
                                                                                          np.float32)}, 2)
    assert rows == [{"label": "yes", "scores": [0.5, 0.5]}, {"label": "no", "scores": [1.0, 0.0]}]
    json.dumps(rows)


def _run_model(calls):
    def run(batch, count):
        calls.append((count, threading.current_thread().name))
        return [{"twice": int(v) * 2} for v in batch["x"]]
    return run


@pytest.mark.parametrize("max_wait", [0.05, 0.0])  # 0: only what is queued already joins, without waiting
def test_the_batcher_joins_concurrent_requests_and_answers_each_with_its_own_rows(max_wait):
    calls = []
    run = _run_model(calls)

    async def main():
        batcher = MicroBatcher(max_batch=8, max_wait=max_wait)
        chunks = [[{"x": np.array(i * 10 + j)} for j in range(n)] for i, n in enumerate([1, 3, 2, 5, 1])]
        answers = await asyncio.gather(*(batcher.submit("k", run, c) for c in chunks))
        batcher.close()
        return chunks, answers, batcher

    chunks, answers, batcher = asyncio.run(main())
    for chunk, rows in zip(chunks, answers):
        assert rows == [{"twice": int(i["x"]) * 2} for i in chunk]
    # 12 instances, at most 8 a call: 1+3+2 then 5+1 (5 would overflow the first batch, so it starts the next).
    assert [count for count, _ in calls] == [6, 6] and batcher.batches == 2 and batcher.instances == 12
    assert {thread for _, thread in calls} == {"model_0"}  # one model thread


def test_without_batching_each_request_is_its_own_call_and_a_failing_batch_fails_only_its_requests():
    calls = []
    run = _run_model(calls)

    def broken(batch, count):
        raise ValueError("no")

    async def main():
        plain = MicroBatcher(max_batch=0)
        out = await asyncio.gather(*(plain.submit("k", run, [{"x": np.array(i)}]) for i in range(3)))
        batched = MicroBatcher(max_batch=4, max_wait=0.0)
        with pytest.raises(ValueError):
            await batched.submit("bad", broken, [{"x": np.array(1)}])
        after = await batched.submit("k", run, [{"x": np.array(7)}])  # the collector went on
        batched.close()
        return out, after

    out, after = asyncio.run(main())
    assert out == [[{"twice": 0}], [{"twice": 2}], [{"twice": 4}]] and [c for c, _ in calls[:3]] == [1, 1, 1]
    assert after == [{"twice": 14}]


def test_settings_come_from_vertex_variables_and_flags_override_them():
    from pipeline.serving.serving_app import ServeSettings, settings_from_env

    env = {"AIP_HTTP_PORT": "9000", "AIP_HEALTH_ROUTE": "/v1/endpoints/1/deployedModels/2",
           "AIP_PREDICT_ROUTE": "/v1/endpoints/1/deployedModels/2:predict", "AIP_STORAGE_URI": "gs://b/m"}
    assert settings_from_env(env) == ServeSettings(model="gs://b/m", port=9000,
                                                   health_route="/v1/endpoints/1/deployedModels/2",
                                                   predict_route="/v1/endpoints/1/deployedModels/2:predict")
    assert settings_from_env(env, model="/m", port=None, max_batch=0).model == "/m"
    assert settings_from_env({}, model="/m") == ServeSettings(model="/m")
    for environ, flags, message in (({}, {}, "no model: give serve --model DIR (or set AIP_STORAGE_URI"),
                                    ({"AIP_HTTP_PORT": "http"}, {"model": "/m"}, "AIP_HTTP_PORT='http' is not a port"),
                                    ({}, {"model": "/m", "max_batch": -1}, "--max-batch and --max-wait-ms >= 0")):
        with pytest.raises(InputError, match=message.replace("(", r"\(")):
            settings_from_env(environ, **flags)


def test_deploy_uploads_the_registry_version_with_the_serving_container_and_deploys_it():
    from pipeline.serving.vertex_serving import SERVE_COMMAND, deploy_requests

    model = "projects/p/locations/europe-west4/models/albert"
    r = deploy_requests(model_uri="gs://b/releases/3", vertex_model=model, image="europe-docker.pkg.dev/p/a/albert-tfx:1",
                        version=3, aliases=["production"], endpoint_name="albert-ep", machine_type="n2-standard-8",
                        min_replicas=1, max_replicas=2)
    upload = type(r["upload"]).to_dict(r["upload"])
    assert upload["parent"] == "projects/p/locations/europe-west4" and upload["model_id"] == "albert"
    m = upload["model"]
    assert m["artifact_uri"] == "gs://b/releases/3" and m["version_aliases"] == ["v3", "production"]
    assert m["labels"] == {"pipeline": "albert", "version": "3", "blessing": "blessed"}
    spec = m["container_spec"]
    assert spec["image_uri"] == "europe-docker.pkg.dev/p/a/albert-tfx:1" and spec["command"] == SERVE_COMMAND \
        == ["albert-pipeline", "serve"]
    assert [p["container_port"] for p in spec["ports"]] == [8080]
    assert (spec["health_route"], spec["predict_route"]) == ("/health", "/predict")
    assert type(r["endpoint"]).to_dict(r["endpoint"])["endpoint"]["display_name"] == "albert-ep"
    deploy = type(r["deploy"]).to_dict(r["deploy"])
    assert deploy["traffic_split"] == {"0": 100}
    res = deploy["deployed_model"]["dedicated_resources"]
    assert (res["machine_spec"]["machine_type"], res["min_replica_count"], res["max_replica_count"]) == \
        ("n2-standard-8", 1, 2)
    named = deploy_requests(model_uri="gs://b/releases/3", vertex_model=model, image="i", version=3,
                            endpoint="projects/p/locations/europe-west4/endpoints/42")
    assert named["endpoint"] is None and named["deploy"].endpoint == "projects/p/locations/europe-west4/endpoints/42"


@pytest.mark.parametrize("flags,message", [
    (["--model", "/local/releases/3"], "--model /local/releases/3: Vertex AI reads the model from Cloud Storage"),
    (["--model", "gs://b/m"], "--model gs://b/m: its folder is not a pushed version number; give --version N"),
    (["--model", "gs://b/3", "--endpoint", "projects/q/locations/us-central1/endpoints/1"],
     "--endpoint projects/q/locations/us-central1/endpoints/1 is not in projects/p/locations/europe-west4"),
])
def test_deploy_refuses_bad_flags_in_one_line(cli, flags, message):
    done = cli("deploy", "--image", "i", "--vertex-model", "projects/p/locations/europe-west4/models/m", *flags)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_deploy_is_refused_without_credentials_as_submit_is_and_dry_run_needs_none(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing-key.json"))
    args = ["deploy", "--model", "gs://b/releases/3", "--image", "i", "--set",
            "release.vertex_model=projects/p/locations/europe-west4/models/m", "--set",
            "release.push_destination=gs://b/releases"]
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "no usable Google Cloud credentials" in done.stderr and "gcloud auth application-default login" in done.stderr
    dry = cli(*args, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["upload"]["model"]["container_spec"]["command"] == ["albert-pipeline", "serve"]
