"""The CPU-scale learning recipe end to end: does pretraining through the DAG beat no pretraining?

    .venv/bin/python -m experiments.learning_recipe [--data-dir DIR] [--output DIR] [--quick] [--set key=value ...]

1. Inputs: the bundled sample plus, when given, ``--data-dir`` (default: the ``ALBERT_TFX_DATA_DIR``
   environment variable) laid out as ``wikipedia/``, ``books/**.txt``, ``glue_data/<TASK>/``,
   ``squad/dev-v1.1.json`` and ``race/RACE/dev/{middle,high}`` (or ``race/dev``). Only dev sets of SQuAD and
   RACE are public here, so each is cut into train/dev by article with a seeded shuffle (80/20; no article in
   both), as ``data/sample`` does. Corpus files are linked into one folder per source (file names prefixed by
   origin, so the bundled and the given copy of a book are two files; CorpusGen's deduplication keeps one).
2. The ``small`` preset through the whole DAG (SOP: ``train.sentence_task=sop``, ``datagen.sop_mode=official``),
   every benchmark with the ``random_init`` arm: the report's "Gain over no pretraining" table.
3. The paper's Table 5 direction: the same pipeline again with NSP (``datagen.sop_mode=nsp``,
   ``train.sentence_task=nsp``; corpus and vocabulary come from the MLMD cache, no benchmark nodes), then both
   pretrained models scored on the held-out (eval split) SOP instances and NSP instances: sentence-task and MLM
   accuracy.
4. ``<output>/recipe.md`` and ``recipe.json``: the command, wall times, the gain table, the SOP/NSP table, the
   report's path (``report.md`` and ``pretraining_curves.png`` are copied beside them).

``--quick`` shrinks everything (tens of steps, 2 seeds, capped dev sets) to check the script runs; its numbers
mean nothing. Every random choice comes from ``--seed`` (the pipeline seed).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import sys
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from trainer.formatting import beyond_spread_text, spread_text  # noqa: E402

DEV_SHARE = 0.2  # share of SQuAD articles / RACE files cut off as dev
GLUE_TASKS = ("CoLA", "SST-2", "MRPC", "RTE", "STS-B")
QUICK = [
    "vocab.vocab_size=3000", "datagen.dupe_factor=1", "train.num_train_steps=30", "train.num_warmup_steps=3",
    "train.checkpoint_every=15", "train.eval_every=15", "train.eval_steps=2", "train.log_every=5",
    "benchmarks.seeds=2", "benchmarks.max_eval_examples=40",
]
QUICK_TASK_STEPS = 4


# ---------------------------------------------------------------------------------------------
# Inputs


def _link_files(files: List[str], folder: str, prefix: str) -> int:
    os.makedirs(folder, exist_ok=True)
    for path in files:
        dst = os.path.join(folder, f"{prefix}-{os.path.basename(path)}")
        if not os.path.lexists(dst):
            os.symlink(os.path.abspath(path), dst)
    return len(files)


def _files(folder: str, suffixes) -> List[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.join(root, n) for n in names if n.endswith(suffixes)]
    return sorted(out)


def cut_squad(dev_file: str, out_dir: str, seed: int) -> Dict[str, Any]:
    """SQuAD v1.1 dev → train/dev files by article (seeded shuffle of the titles, DEV_SHARE to dev)."""
    with open(dev_file, encoding="utf-8") as f:
        data = json.load(f)
    articles = sorted(data["data"], key=lambda a: a["title"])
    random.Random(seed).shuffle(articles)
    n_dev = max(1, round(DEV_SHARE * len(articles)))
    os.makedirs(out_dir, exist_ok=True)
    counts = {}
    for name, part in (("train-v1.1-cut.json", articles[n_dev:]), ("dev-v1.1-cut.json", articles[:n_dev])):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump({"version": data.get("version", "1.1"), "data": part}, f, ensure_ascii=False)
        counts[name] = {"articles": len(part), "questions": sum(len(p["qas"]) for a in part for p in a["paragraphs"])}
    return counts


def cut_race(dev_root: str, out_dir: str, seed: int) -> Dict[str, Any]:
    """RACE dev/{middle,high}/*.txt → train/dev folders by file (one article per file), per level."""
    counts: Dict[str, Any] = {}
    for level in ("middle", "high"):
        files = _files(os.path.join(dev_root, level), (".txt",))
        random.Random(f"{seed}-{level}").shuffle(files)
        n_dev = max(1, round(DEV_SHARE * len(files))) if files else 0
        for split, part in (("dev", files[:n_dev]), ("train", files[n_dev:])):
            folder = os.path.join(out_dir, split, level)
            os.makedirs(folder, exist_ok=True)
            for path in part:
                dst = os.path.join(folder, os.path.basename(path))
                if not os.path.lexists(dst):
                    os.symlink(os.path.abspath(path), dst)
            counts[f"{split}/{level}"] = len(part)
    return counts


def prepare_inputs(work: str, data_dir: Optional[str], seed: int, corpus: str = "bundled") -> Dict[str, Any]:
    """Overrides (``section.key=value``) pointing the ``small`` preset at sample + ``data_dir`` inputs.

    ``corpus="large"`` adds ``data_dir/large``: WikiExtractor output (``wiki_NN.bz2``, detected per file) and
    gzip-compressed books, about 15 times the text of the rest."""
    from pipeline.settings.configs import SAMPLE_DATA

    facts: Dict[str, Any] = {"data_dir": data_dir, "overrides": []}
    wiki, books = os.path.join(work, "corpus", "wikipedia"), os.path.join(work, "corpus", "books")
    facts["wikipedia_files"] = _link_files(_files(os.path.join(SAMPLE_DATA, "wikipedia"), (".bz2", ".xml")), wiki,
                                           "sample")
    facts["book_files"] = _link_files(_files(os.path.join(SAMPLE_DATA, "books"), (".txt",)), books, "sample")
    ov = [f"corpus.wikipedia_dir={wiki}", f"corpus.books_dir={books}"]
    if data_dir:
        facts["wikipedia_files"] += _link_files(_files(os.path.join(data_dir, "wikipedia"), (".bz2", ".xml")), wiki,
                                                "data")
        facts["book_files"] += _link_files(_files(os.path.join(data_dir, "books"), (".txt",)), books, "data")
        ov.append("corpus.book_encoding_fallback=latin-1")  # the NLTK Gutenberg copies are not all UTF-8
        if corpus == "large":
            large = os.path.join(data_dir, "large")
            if not os.path.isdir(large):
                raise SystemExit(f"--corpus large: {large} does not exist")
            for sub in sorted(os.listdir(os.path.join(large, "wikipedia"))):  # AA, AB, ...: the same wiki_NN names
                facts["wikipedia_files"] += _link_files(_files(os.path.join(large, "wikipedia", sub), ("",)), wiki,
                                                        f"large-{sub}")
            facts["book_files"] += _link_files(_files(os.path.join(large, "books"), (".txt.gz",)), books, "large")
            # The linked names: '<origin>-<dump or wiki_NN.bz2>' and '<origin>-<book>.txt[.gz]'.
            ov += ["corpus.wikipedia_glob=*", "corpus.books_glob=**/*.txt*"]
        facts["corpus"] = corpus
        glue = os.path.join(data_dir, "glue_data")
        if os.path.isdir(glue):
            tasks = [t for t in GLUE_TASKS if os.path.isfile(os.path.join(glue, t, "train.tsv"))]
            ov += [f"benchmarks.glue_dir={glue}", "benchmarks.glue_tasks=" + ",".join(tasks)]
            facts["glue_tasks"] = tasks
        squad = os.path.join(data_dir, "squad", "dev-v1.1.json")
        if os.path.isfile(squad):
            facts["squad_cut"] = cut_squad(squad, os.path.join(work, "squad"), seed)
            ov += [f"benchmarks.squad_dir={os.path.join(work, 'squad')}",
                   "benchmarks.squad_train_file=train-v1.1-cut.json", "benchmarks.squad_dev_file=dev-v1.1-cut.json"]
        race_dev = next((p for p in (os.path.join(data_dir, "race", "RACE", "dev"), os.path.join(data_dir, "race", "dev"))
                         if os.path.isdir(p)), None)
        if race_dev:
            facts["race_cut"] = cut_race(race_dev, os.path.join(work, "race"), seed)
            ov.append(f"benchmarks.race_dir={os.path.join(work, 'race')}")
    facts["overrides"] = ov
    return facts


# ---------------------------------------------------------------------------------------------
# MLMD look-ups and the SOP / NSP evaluation


def _store(metadata_path: str):
    from ml_metadata.proto import metadata_store_pb2

    from pipeline.local import mlmd

    return mlmd.open_readonly(metadata_path), metadata_store_pb2


def node_seconds(metadata_path: str) -> Dict[str, Dict[str, Any]]:
    """Node id → state and seconds (MLMD execution create → last update) for the newest pipeline run. A CACHED
    node reports the seconds of the execution that produced its outputs (``from_cache``), so a re-run of a cached
    pipeline still shows what each node cost."""
    store, pb2 = _store(metadata_path)
    runs = store.get_contexts_by_type("pipeline_run")
    newest = max(runs, key=lambda c: (c.create_time_since_epoch, c.id))
    node_type = store.get_context_type("node").id

    def seconds(execution) -> float:
        return round((execution.last_update_time_since_epoch - execution.create_time_since_epoch) / 1000.0, 1)

    out: Dict[str, Dict[str, Any]] = {}
    for execution in store.get_executions_by_context(newest.id):
        node = next(c.name.split(".", 1)[1] for c in store.get_contexts_by_execution(execution.id)
                    if c.type_id == node_type)
        out[node] = {"state": pb2.Execution.State.Name(execution.last_known_state), "seconds": seconds(execution)}
        if execution.last_known_state == pb2.Execution.CACHED:
            outputs = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id])
                       if e.type == pb2.Event.OUTPUT]
            producers = {e.execution_id for e in store.get_events_by_artifact_ids(outputs)
                         if e.type == pb2.Event.OUTPUT and e.execution_id != execution.id}
            done = [x for x in store.get_executions_by_id(sorted(producers))
                    if x.last_known_state == pb2.Execution.COMPLETE]
            if done:
                out[node]["from_cache"] = seconds(min(done, key=lambda x: x.create_time_since_epoch))
    return out


def _read_json(path: str) -> Dict[str, Any]:
    import tensorflow as tf

    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def find_run_artifacts(metadata_path: str, sop_mode: str) -> Dict[str, str]:
    """URIs of the newest LIVE examples with this ``sop_mode`` and of the model trained on exactly them (matched by
    the examples' content fingerprint recorded at export), plus that model's ModelRun and the newest report."""
    import tensorflow as tf

    store, pb2 = _store(metadata_path)

    def live(type_name):
        arts = [a for a in store.get_artifacts_by_type(type_name) if a.state == pb2.Artifact.LIVE]
        return sorted(arts, key=lambda a: (a.create_time_since_epoch, a.id), reverse=True)

    examples = next(a for a in live("Examples")
                    if _read_json(os.path.join(a.uri, "dataset_info.json")).get("sop_mode") == sop_mode)
    fp = _read_json(os.path.join(examples.uri, "dataset_info.json"))["fingerprint"]
    model = next(a for a in live("Model") if tf.io.gfile.exists(os.path.join(a.uri, "albert", "export_info.json"))
                 and _read_json(os.path.join(a.uri, "albert", "export_info.json")).get("examples_fingerprint") == fp)
    # The ModelRun written by the same Trainer execution as the model.
    execution = [e.execution_id for e in store.get_events_by_artifact_ids([model.id])
                 if e.type == pb2.Event.OUTPUT][0]
    run_ids = [e.artifact_id for e in store.get_events_by_execution_ids([execution]) if e.type == pb2.Event.OUTPUT]
    model_run = next(a for a in store.get_artifacts_by_id(run_ids) if a.uri != model.uri)
    # A store made before 2026-11-26 knows the type by its former name.
    reports = live("albert_tfx.BenchmarkReport") or live("albert.BenchmarkReport")
    return {"examples": examples.uri, "model": model.uri, "model_run": model_run.uri,
            "report": reports[0].uri if reports else None}


def sentence_eval(model_uri: str, sentence_task: str, examples_uri: str, max_instances: int,
                  batch_size: int = 64, split: str = "eval") -> Dict[str, Any]:
    """Sentence-task and MLM accuracy of a pretrained model (its full pretraining checkpoint, heads included) on
    a held-out split of an examples artifact (``eval``, or ``eval_long``: the two-phase long instances, at their
    own length). Both heads are 2-way with label 1 = not the natural continuation (SOP: swapped; NSP: random
    next), so an NSP head can be scored on SOP instances and the reverse."""
    import numpy as np
    import tensorflow as tf

    from trainer.files import CONFIG_FILE, PRETRAINING_CKPT
    from trainer.input_pipeline import make_dataset
    from trainer.modeling_albert import AlbertConfig
    from trainer.train_step import build_pretraining_model

    info = _read_json(os.path.join(examples_uri, "dataset_info.json"))
    prefix = "long_" if split.endswith("_long") else ""
    seq, preds = int(info[prefix + "max_seq_length"]), int(info[prefix + "max_predictions_per_seq"])
    albert = os.path.join(model_uri, "albert")
    config = AlbertConfig.from_json_file(os.path.join(albert, CONFIG_FILE))
    if int(info.get("vocab_size") or config.vocab_size) != config.vocab_size:
        raise ValueError(f"{examples_uri} uses another vocabulary than {model_uri}")
    model = build_pretraining_model(config, sentence_task, seq, preds)
    tf.train.Checkpoint(model=model).read(os.path.join(albert, PRETRAINING_CKPT)).assert_existing_objects_matched()
    ds = make_dataset([os.path.join(examples_uri, f"Split-{split}", "*")], batch_size, seq, preds, training=False,
                      seed=0)
    step = tf.function(lambda x: model(x, training=False))
    correct = total = 0
    mlm_correct = mlm_total = 0.0
    labels_seen: List[int] = []
    for inputs, labels in ds:
        out = step(inputs)
        y = labels["next_sentence_labels"].numpy().reshape(-1)
        correct += int(np.sum(np.argmax(out["sentence_logits"].numpy(), -1) == y))
        w = labels["masked_lm_weights"].numpy()
        mlm_correct += float(np.sum(w * (np.argmax(out["mlm_logits"].numpy(), -1) == labels["masked_lm_ids"].numpy())))
        mlm_total += float(np.sum(w))
        total += len(y)
        labels_seen += y.tolist()
        if total >= max_instances:
            break
    return {"instances": total, "sentence_accuracy": 100.0 * correct / max(total, 1),
            "label_1_share": 100.0 * float(np.mean(labels_seen)) if labels_seen else None,
            "mlm_accuracy": 100.0 * mlm_correct / max(mlm_total, 1.0)}


# ---------------------------------------------------------------------------------------------
# Write-up


def _f(v, signed=False):
    return "—" if v is None else (f"{v:+.1f}" if signed else f"{v:.1f}")


def write_up(out: str, record: Dict[str, Any]) -> str:
    lines = ["# ALBERT-TFX learning recipe (`small` preset)", "",
             ("**Quick mode: a smoke run of the script; the numbers below mean nothing.**" if record["quick"] else
              "Numbers from one run of the command below."), "",
             "```", record["command"], "```", "",
             f"Wall time: total {record['seconds']['total']:.0f} s (SOP pipeline {record['seconds']['sop_pipeline']:.0f}"
             f" s, NSP pipeline {record['seconds'].get('nsp_pipeline', 0):.0f} s, sentence-task eval "
             f"{record['seconds'].get('sentence_eval', 0):.0f} s) on {record['cpu_count']} CPU cores.", ""]
    for run, nodes in (record.get("node_seconds") or {}).items():
        lines.append(f"{run.upper()} pipeline nodes: " + ", ".join(
            (f"{node} {v['from_cache']:.0f} s (cached; the producing run's time)" if "from_cache" in v else
             f"{node} {v['seconds']:.0f} s" + ("" if v["state"] == "COMPLETE" else f" ({v['state'].lower()})"))
            for node, v in nodes.items()) + ".")
    lines.append("")
    gains = record.get("gains") or {}
    lines += ["## Pretrained vs random initialisation (dev, headline score, median [min – max] over seeds)", ""]
    if gains:
        lines += ["| task | pretrained | random init | gain (medians) | paired gain per seed | beyond seed spread "
                  "| majority-class floor | one-class runs (pretrained / random) |", "|---|---|---|---|---|---|---|---|"]
        for task, g in gains.items():
            one = g.get("single_class_runs") or {}
            one_text = ("—" if one.get("pretrained") is None else
                        f"{one['pretrained']} / {one.get('baseline')} of {g['pretrained'].get('n', '?')}")
            lines.append(f"| {task} | {spread_text(g['pretrained'])} | {spread_text(g['baseline'])} | "
                         f"{_f(g.get('gain_median'), True)} | {spread_text(g.get('gain_paired'), signed=True)} | "
                         f"{beyond_spread_text(g)} | {_f(g.get('majority_baseline'))} | "
                         f"{one_text} |")
        lines += ["", "Majority-class floor: the dev score of always predicting the training set's most frequent "
                  "label (RACE: answer letter); a one-class run predicted one label for all of dev and so scores that "
                  "floor whatever encoder it started from."]
    else:
        lines.append("No benchmark results.")
    lines += ["", "## SOP vs NSP (held-out eval-split instances; paper Table 5 direction)", ""]
    sn = record.get("sop_nsp") or {}
    if sn:
        lines += ["| pretrained with | SOP accuracy | NSP accuracy | MLM accuracy (SOP data) | MLM accuracy (NSP data) |",
                  "|---|---|---|---|---|"]
        for trained in ("sop", "nsp"):
            r = sn.get(trained) or {}
            lines.append(f"| {trained.upper()} | {_f((r.get('on_sop') or {}).get('sentence_accuracy'))} | "
                         f"{_f((r.get('on_nsp') or {}).get('sentence_accuracy'))} | "
                         f"{_f((r.get('on_sop') or {}).get('mlm_accuracy'))} | "
                         f"{_f((r.get('on_nsp') or {}).get('mlm_accuracy'))} |")
        lines.append("")
        shares = {data: (sn.get("sop") or {}).get(f"on_{data}", {}).get("label_1_share") for data in ("sop", "nsp")}
        lines.append(f"Instances per cell: {sn.get('instances')}; share of label 1 (swapped / random next): SOP data "
                     f"{_f(shares['sop'])}%, NSP data {_f(shares['nsp'])}% (a constant prediction scores that share or "
                     "100 minus it).")
    else:
        lines.append("Not run (`--skip-nsp`).")
    report = record.get("report_md")
    report = os.path.relpath(report, out) if report and os.path.isabs(report) else report  # no machine paths
    lines += ["", f"Report: `{report}` (copied here as `report.md`, curves as `pretraining_curves.png`).", ""]
    text = "\n".join(lines)
    with open(os.path.join(out, "recipe.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return text


# ---------------------------------------------------------------------------------------------


def command_line(argv: List[str], data_dir: Optional[str]) -> str:
    """The command as typed, with ``ALBERT_TFX_DATA_DIR`` spelled out when the data folder came from it (relative
    to the working folder where possible: no machine paths in a committed write-up)."""
    env = []
    if data_dir and "--data-dir" not in argv and not any(a.startswith("--data-dir=") for a in argv):
        env = [f"ALBERT_TFX_DATA_DIR={shlex.quote(os.path.relpath(data_dir))}"]
    return " ".join(env + [shlex.quote(a) for a in [".venv/bin/python", "-m", "experiments.learning_recipe"] + list(argv)])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("ALBERT_TFX_DATA_DIR"),
                   help="optional data folder (default: $ALBERT_TFX_DATA_DIR; unset: the bundled sample only)")
    p.add_argument("--output", default=os.path.join("outputs", "learning_recipe"))
    p.add_argument("--quick", action="store_true", help="tiny steps and seeds: checks the script, not the model")
    p.add_argument("--skip-nsp", action="store_true", help="no NSP pipeline and no SOP/NSP table")
    p.add_argument("--sentence-eval-instances", type=int, default=5000)
    p.add_argument("--set", dest="overrides", action="append", default=[], help="section.key=value (after the recipe's)")
    p.add_argument("--runner", default="beam", choices=["beam", "local"])
    p.add_argument("--corpus", default="auto", choices=["auto", "bundled", "large"],
                   help="bundled: the sample and --data-dir's wikipedia/ and books/; large: also --data-dir's large/ "
                        "(WikiExtractor output and compressed books, 41 M words); auto (default): large where "
                        "--data-dir has it (docs/experiments/cpu-recipe.md, 'The large corpus')")
    args = p.parse_args(argv)
    if args.data_dir and not os.path.isdir(args.data_dir):
        p.error(f"--data-dir {args.data_dir} does not exist")  # before anything is written
    started = time.time()
    out = os.path.abspath(args.output)
    os.makedirs(out, exist_ok=True)
    from pipeline.local import logs

    # Node progress (started / CACHED / finished in N s), Trainer steps and fine-tuning runs on stderr; the full
    # log, tracebacks included, in <output>/recipe.log.
    log_path = logs.setup(os.path.join(out, "recipe.log"))
    logs.import_tensorflow(log_path)  # TensorFlow's start-up lines (cuInit on a machine without a GPU) go to the log
    from pipeline.settings.configs import build_config

    seed = build_config("small", overrides=[o for o in args.overrides if o.startswith("seed=")]).seed
    data_dir = os.path.abspath(args.data_dir) if args.data_dir else None
    if args.corpus == "auto":
        args.corpus = "large" if data_dir and os.path.isdir(os.path.join(data_dir, "large")) else "bundled"
    if args.corpus == "large" and not data_dir:
        p.error("--corpus large needs --data-dir (or ALBERT_TFX_DATA_DIR)")
    facts = prepare_inputs(os.path.join(out, "inputs"), data_dir, seed, args.corpus)
    overrides = list(facts["overrides"])
    if args.quick:
        overrides += QUICK
        base = build_config("small", overrides=overrides)
        for task, hp in base.benchmarks.hparams.items():
            overrides += [f"benchmarks.hparams.{task}.train_steps={QUICK_TASK_STEPS}",
                          f"benchmarks.hparams.{task}.warmup_steps=1", f"benchmarks.hparams.{task}.batch_size=8"]
    overrides += args.overrides
    common = [f"pipeline_root={os.path.join(out, 'pipeline_root')}", f"metadata_path={os.path.join(out, 'metadata.sqlite')}"]
    from pipeline.settings.resolve import resolve_config

    sop_cfg = resolve_config(build_config("small", overrides=overrides + common + [
        "train.sentence_task=sop", "datagen.sop_mode=official"]), local=True)
    from pipeline.local.local_runner import run_local

    seconds: Dict[str, float] = {}
    t0 = time.time()
    run_local(sop_cfg, runner=args.runner)
    seconds["sop_pipeline"] = time.time() - t0
    sop = find_run_artifacts(sop_cfg.metadata_path, "official")
    record: Dict[str, Any] = {
        "command": command_line(argv if argv is not None else sys.argv[1:], args.data_dir),
        "quick": args.quick, "cpu_count": os.cpu_count(), "inputs": facts, "overrides": overrides,
        "sop_run": sop, "seconds": seconds, "node_seconds": {"sop": node_seconds(sop_cfg.metadata_path)},
        "log": log_path,
    }
    if sop.get("report"):
        results = _read_json(os.path.join(sop["report"], "results.json"))
        record["gains"] = (results["summary"].get("baselines") or {}).get("random_init", {})
        record["init_check"] = results["summary"].get("init_check")
        record["report_md"] = os.path.join(sop["report"], "report.md")
        for name in ("report.md", "pretraining_curves.png"):
            if os.path.exists(os.path.join(sop["report"], name)):
                shutil.copy(os.path.join(sop["report"], name), os.path.join(out, name))
    if not args.skip_nsp:
        no_bench = ["benchmarks.glue_dir=null", "benchmarks.squad_dir=null", "benchmarks.race_dir=null"]
        nsp_cfg = resolve_config(build_config("small", overrides=overrides + common + no_bench +
                                              ["train.sentence_task=nsp", "datagen.sop_mode=nsp"]), local=True)
        t0 = time.time()
        run_local(nsp_cfg, runner=args.runner)
        seconds["nsp_pipeline"] = time.time() - t0
        record["node_seconds"]["nsp"] = node_seconds(nsp_cfg.metadata_path)
        nsp = find_run_artifacts(nsp_cfg.metadata_path, "nsp")
        record["nsp_run"] = nsp
        t0 = time.time()
        n = args.sentence_eval_instances
        record["sop_nsp"] = {"instances_cap": n, **{
            trained: {"on_sop": sentence_eval(run["model"], trained, sop["examples"], n),
                      "on_nsp": sentence_eval(run["model"], trained, nsp["examples"], n)}
            for trained, run in (("sop", sop), ("nsp", nsp))}}
        record["sop_nsp"]["instances"] = sorted({c["instances"] for t in ("sop", "nsp")
                                                 for c in record["sop_nsp"][t].values()})
        seconds["sentence_eval"] = time.time() - t0
    seconds["total"] = time.time() - started
    with open(os.path.join(out, "recipe.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=2, sort_keys=True, default=str)
    print(write_up(out, record))
    print(f"Recipe: {os.path.join(out, 'recipe.md')}")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown (see pipeline/cli.py::_exit)


if __name__ == "__main__":
    main()
