"""The push protocol on its own (issue 45): pushers to one ``gs://`` destination (the object-store stand-in,
``tests/gcs_standin.py``) get distinct numbers and never touch each other's files; the copy order keeps a loader
of the highest-numbered folder from loading half a version; the local destination keeps its one-step rename.

Small folders stand in for the Pusher's built version; ``versions.publish`` is the code the Pusher runs."""
from __future__ import annotations

import hashlib
import os
import threading

import pytest

from components.release import package, versions

DEST = "gs://bkt/root/releases"
# What the Pusher's built folder holds, in miniature: the SavedModel, a checkpoint, the card (written by finish).
FILES = ["saved_model.pb", "fingerprint.pb", "variables/variables.index", "variables/variables.data-00000-of-00001",
         "checkpoint/encoder/ckpt.index", "huggingface/config.json"]


def _built(tmp_path, who: str) -> str:
    """A version folder of pusher ``who``: every file's bytes name it."""
    folder = tmp_path / f"built-{who}"
    for rel in FILES:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"{who}:{rel}\n".encode() * 1000)
    return str(folder)


def _finish(built: str, who: str):
    def finish(number: int) -> dict:
        with open(os.path.join(built, "model_card.md"), "w") as f:
            f.write(f"# version {number} of {who}\n")
        return {"version": number, "model": {"uri": f"model-of-{who}"}, "forced": False,
                "files": package.file_digests(built)}
    return finish


def _on_store(gcs, path: str) -> dict:
    """{relative path: {bytes, sha256}} of every object under the version folder ``path`` but the record."""
    folder = gcs / path[len("gs://"):]
    out = {}
    for dirpath, _, names in os.walk(folder):
        for name in names:
            data = open(os.path.join(dirpath, name), "rb").read()
            out[os.path.relpath(os.path.join(dirpath, name), folder)] = {
                "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    out.pop(versions.RECORD_FILE)
    return dict(sorted(out.items()))


def test_the_copy_puts_saved_model_pb_after_every_other_file_and_the_record_last(tmp_path, gcs, monkeypatch):
    written = []
    real_write = versions._write_remote
    monkeypatch.setattr(versions, "_write_remote", lambda path, source: (written.append(path),
                                                                          real_write(path, source)))
    built = _built(tmp_path, "a")
    assert versions.publish(built, DEST, _finish(built, "a")) == (1, f"{DEST}/1")
    assert [p[len(DEST) + 3:] for p in written] == [
        "checkpoint/encoder/ckpt.index", "fingerprint.pb", "huggingface/config.json", "model_card.md",
        "variables/variables.data-00000-of-00001", "variables/variables.index", "saved_model.pb", "release.json"]
    assert versions.copy_order(["variables/variables.index", "saved_model.pb", "assets/x"]) == [
        "assets/x", "variables/variables.index", "saved_model.pb"]
    # The raw-text SavedModels' saved_model.pb come after every variable too, the version's own last.
    assert versions.copy_order(["encoder/saved_model.pb", "encoder/variables/variables.index", "saved_model.pb",
                                "preprocess/saved_model.pb", "variables/variables.index"]) == [
        "encoder/variables/variables.index", "variables/variables.index", "encoder/saved_model.pb",
        "preprocess/saved_model.pb", "saved_model.pb"]
    assert sorted(os.listdir(gcs / "bkt" / "root" / "releases")) == [".claims", "1"]
    assert os.listdir(gcs / "bkt" / "root" / "releases" / ".claims") == ["1"]


def _push_together(tmp_path, monkeypatch, fail=None):
    """Pushers ``a`` and ``b`` in two threads to DEST. Both read the destination before either claims a number
    (so both try number 1 first), and both are midway through their copies before either goes on. ``fail``: the
    pusher whose copy raises at its third file. Returns ({who: (number, path) or the exception}, {who: numbers
    tried})."""
    real_claim, real_copy = versions.create_only, versions.copy_file
    read_both, copying_both = threading.Barrier(2, timeout=60), threading.Barrier(2, timeout=60)
    tried = {"a": [], "b": []}
    copied = {"a": 0, "b": 0}
    local = threading.local()

    def create_only(path, data=b""):
        if not tried[local.who]:
            read_both.wait()
        tried[local.who].append(int(path.rsplit("/", 1)[1]))
        return real_claim(path, data)

    def copy_file(src, dst):
        copied[local.who] += 1
        if copied[local.who] == 3 and local.who == fail:
            raise OSError(28, "No space left on device (injected)")
        real_copy(src, dst)
        if copied[local.who] == 2:
            copying_both.wait()

    monkeypatch.setattr(versions, "create_only", create_only)
    monkeypatch.setattr(versions, "copy_file", copy_file)
    results = {}

    def push(who):
        local.who = who
        built = _built(tmp_path, who)
        try:
            results[who] = versions.publish(built, DEST, _finish(built, who))
        except Exception as e:  # noqa: BLE001 - the injected failure, checked by the caller
            results[who] = e

    threads = [threading.Thread(target=push, args=(who,)) for who in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.setattr(versions, "create_only", real_claim)
    monkeypatch.setattr(versions, "copy_file", real_copy)
    return results, tried


def test_two_pushers_started_together_get_distinct_numbers_and_whole_folders_of_their_own(tmp_path, gcs,
                                                                                          monkeypatch):
    results, tried = _push_together(tmp_path, monkeypatch)
    assert sorted(n for n, _ in results.values()) == [1, 2]
    assert sorted(tried.values()) == [[1], [1, 2]]  # the one that lost number 1 took 2
    listed = versions.list_versions(DEST)
    assert [v["version"] for v in listed] == [1, 2]
    for v in listed:
        who = v["model"]["uri"].rsplit("-", 1)[1]
        assert results[who] == (v["version"], v["path"])
        own = package.file_digests(str(tmp_path / f"built-{who}"))  # its own files, its own card
        assert v["files"] == own == _on_store(gcs, v["path"])
        assert (gcs / v["path"][len("gs://"):] / "model_card.md").read_text() == f"# version {v['version']} of {who}\n"
        assert v["registry"] is None


def test_a_pusher_that_fails_midway_removes_only_its_own_folder(tmp_path, gcs, monkeypatch):
    results, _ = _push_together(tmp_path, monkeypatch, fail="b")
    assert str(results["b"]) == "[Errno 28] No space left on device (injected)"
    number, path = results["a"]
    [a] = versions.list_versions(DEST)
    assert (a["version"], a["path"]) == (number, path) and a["files"] == _on_store(gcs, path)
    lost = 3 - number  # b's number: its folder is gone, its claim stays
    releases = gcs / "bkt" / "root" / "releases"
    assert sorted(os.listdir(releases)) == sorted([".claims", str(number)])
    assert sorted(os.listdir(releases / ".claims")) == ["1", "2"]
    built = _built(tmp_path, "c")
    assert versions.next_version(DEST) == 3 and lost in (1, 2)  # a claimed number is never reused
    assert versions.publish(built, DEST, _finish(built, "c")) == (3, f"{DEST}/3")
    assert [v["version"] for v in versions.list_versions(DEST)] == [number, 3]


def test_a_claimed_number_is_taken_once(gcs):
    claim = f"{DEST}/{versions.CLAIMS_DIR}/7"
    assert versions.create_only(claim) is True
    assert versions.create_only(claim) is False
    assert versions.next_version(DEST) == 8


def test_a_local_destination_renames_each_version_into_place(tmp_path):
    dest = str(tmp_path / "releases")
    for who, number in (("a", 1), ("b", 2)):
        built = _built(tmp_path, who)
        assert versions.publish(built, dest, _finish(built, who)) == (number, os.path.join(dest, str(number)))
    assert sorted(os.listdir(dest)) == ["1", "2"]  # no staging folder, no claims
    assert [v["model"]["uri"] for v in versions.list_versions(dest)] == ["model-of-a", "model-of-b"]
    assert versions.is_destination(dest) and not versions.is_destination(str(tmp_path / "nowhere"))


def test_a_gs_destination_exists_once_it_holds_an_object(tmp_path, gcs):
    assert not versions.is_destination(DEST)
    built = _built(tmp_path, "a")
    versions.publish(built, DEST, _finish(built, "a"))
    assert versions.is_destination(DEST)
    local = str(tmp_path / "claim")
    with pytest.raises(ValueError, match=f"{local}: create-only writes are implemented for gs:// only"):
        versions.create_only(local)


def test_on_real_gcs_a_claim_is_a_write_with_the_generation_precondition(monkeypatch):
    """Beam's own GCS filesystem (no stand-in) offers no ``create_only``: the claim goes through
    google-cloud-storage with ``if_generation_match=0``, and GCS's 412 answer means the number is taken."""
    import google.auth
    from google.api_core.exceptions import PreconditionFailed
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    sent = []

    def upload_from_string(self, data, content_type=None, **kwargs):
        sent.append((self.bucket.name, self.name, data, kwargs))
        if len(sent) > 1:
            raise PreconditionFailed("At least one of the pre-conditions you specified did not hold.")

    monkeypatch.setattr(storage.Blob, "upload_from_string", upload_from_string)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p-albert"))
    claim = f"{DEST}/{versions.CLAIMS_DIR}/1"
    assert versions.create_only(claim) is True and versions.create_only(claim) is False
    assert sent == [("bkt", "root/releases/.claims/1", b"", {"if_generation_match": 0})] * 2


def test_two_pushers_of_the_same_model_push_one_version_and_a_failed_push_gives_the_model_back(tmp_path, gcs,
                                                                                                monkeypatch):
    """Two overlapping runs that trained the same pretraining run (``package.model_key``) push one version: the
    second pusher finds the model claimed and reports the first one's version. A failed push gives its model claim
    back, so a rerun pushes the model."""
    key = "0123456789abcdef@4"
    first, second = _built(tmp_path, "a"), _built(tmp_path, "b")
    finish_a = _finish(first, "a")
    assert versions.publish(first, DEST, lambda n: {**finish_a(n), "model_key": key}, model_key=key) == (1, f"{DEST}/1")
    with pytest.raises(versions.ModelClaimed) as claimed:
        versions.publish(second, DEST, _finish(second, "b"), model_key=key)
    assert claimed.value.claim == versions.model_claim(DEST, key)
    found = versions.wait_for_model(DEST, key, timeout_s=0)
    assert (found["version"], found["model"]["uri"]) == (1, "model-of-a")
    assert versions.find_version(DEST, "model-of-b", key)["version"] == 1  # the Pusher's check before it claims
    assert [v["version"] for v in versions.list_versions(DEST)] == [1]

    other = "fedcba9876543210@4"
    assert versions.create_only(versions.model_claim(DEST, other), other.encode())  # a push that died
    with pytest.raises(RuntimeError, match="claims model fedcba9876543210@4, but no version of it appeared in 0 s"):
        versions.wait_for_model(DEST, other, timeout_s=0)
    real_copy = versions.copy_file
    monkeypatch.setattr(versions, "copy_file", lambda src, dst: (_ for _ in ()).throw(OSError(28, "disk full")))
    third = "aaaaaaaaaaaaaaaa@4"
    with pytest.raises(OSError, match="disk full"):
        versions.publish(second, DEST, _finish(second, "b"), model_key=third)
    monkeypatch.setattr(versions, "copy_file", real_copy)
    claims = os.listdir(gcs / "bkt" / "root" / "releases" / versions.CLAIMS_DIR)
    assert os.path.basename(versions.model_claim(DEST, third)) not in claims  # given back: a rerun may push it
    assert versions.publish(second, DEST, _finish(second, "b"), model_key=third)[0] == 3  # number 2 stays claimed
