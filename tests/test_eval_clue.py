"""Classification tasks as configuration (components/evaluation/glue/task_spec_reader.py) and CLUE in its released formats
(components/evaluation/glue/clue.py): the specs and their checks, the readers on fixtures written for these tests
(tests/fixtures/clue/README.md), every bad-input error, C3 as RACE examples, and CMRC2018 through the SQuAD reader
and the alignment that gives token-level answer positions, with a WordPiece and a SentencePiece tokenizer."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from components.evaluation.glue import clue as C
from components.evaluation.glue.glue_data import GlueExample
from components.evaluation.race.race_data import RaceExample, convert_race_examples
from components.evaluation.squad.alignment import align_contexts
from components.evaluation.squad.squad_features import convert_squad_examples
from components.evaluation.glue.task_spec_reader import ClassificationSpec, read_task, specs_from_config
from config.errors import InputError, MissingInputError, UserError
from config.schema import ConfigError

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "clue"
WORDPIECE_VOCAB = REPO / "tests" / "fixtures" / "wordpiece" / "vocab.txt"
SPM_MODEL = REPO / "data" / "sample" / "vocab" / "30k-clean.model"

AFQMC = {"format": "jsonl", "files": {"train": "train.json", "dev": "dev.json"}, "text_a": "sentence1",
         "text_b": "sentence2", "label": "label", "labels": ["0", "1"], "metrics": ["accuracy"]}


@pytest.fixture(scope="module")
def wordpiece():
    from components.text.wordpiece import WordPieceTokenizer
    return WordPieceTokenizer(str(WORDPIECE_VOCAB))


@pytest.fixture(scope="module")
def albert():
    if not SPM_MODEL.exists():
        pytest.skip(f"{SPM_MODEL} not present")
    from components.text.tokenization import AlbertTokenizer
    return AlbertTokenizer(str(SPM_MODEL))


def one_line(error: BaseException) -> str:
    """The error's message, checked to be one line of a user error (exit code 2 at the CLI)."""
    assert isinstance(error, UserError)
    message = str(error)
    assert "\n" not in message
    return message


# ---------------------------------------------------------------------------------------------
# The spec


def test_spec_from_plain_data():
    spec = ClassificationSpec.from_dict("AFQMC", AFQMC)
    assert spec == ClassificationSpec(
        name="AFQMC", format="jsonl", files={"train": "train.json", "dev": "dev.json"}, text_a="sentence1",
        text_b="sentence2", label="label", labels=("0", "1"), metrics=("accuracy",), regression=False, header=False,
        id=None, list_join=None, skip_labels=())
    assert (spec.num_labels, spec.is_regression, spec.has_text_b, spec.label_id("1")) == (2, False, True, 1)
    assert spec.setting("labels") == "benchmarks.tasks.AFQMC.labels"


def test_spec_defaults_and_yaml_integers():
    sts = ClassificationSpec.from_dict("STS", {"format": "tsv", "files": {"train": "train.tsv"}, "text_a": 7,
                                               "text_b": 8, "label": "score", "regression": True})
    assert (sts.header, sts.labels, sts.metrics, sts.num_labels) == (True, (), ("pearson", "spearman"), 1)
    nli = ClassificationSpec.from_dict("KLUE-NLI", {"format": "jsonl", "files": {"dev": "dev.json"},
                                                    "text_a": "premise", "text_b": "hypothesis", "label": "label",
                                                    "labels": [0, 1, 2]})
    assert (nli.labels, nli.metrics) == (("0", "1", "2"), ("accuracy",))
    specs = specs_from_config({"AFQMC": AFQMC, "KLUE-NLI": {**AFQMC, "labels": ["a", "b", "c"]}})
    assert list(specs) == ["AFQMC", "KLUE-NLI"] and specs["KLUE-NLI"].labels == ("a", "b", "c")


@pytest.mark.parametrize("change,message", [
    ({"colour": "red"}, "config benchmarks.tasks.AFQMC.colour is not a setting: a task takes format, files, text_a, "
                        "text_b, label, labels, regression, metrics, header, id, list_join, skip_labels, "
                        "languages, train_language, language_column"),
    ({"format": None}, "config benchmarks.tasks.AFQMC.format is missing: every task needs format, files, text_a and "
                       "label"),
    ({"format": "csv"}, "config benchmarks.tasks.AFQMC.format='csv' is invalid: expected jsonl, json or tsv"),
    ({"header": True}, "config benchmarks.tasks.AFQMC.header is for tsv files only; benchmarks.tasks.AFQMC.format "
                       "is jsonl"),
    ({"files": {}}, "config benchmarks.tasks.AFQMC.files={} is invalid: expected a mapping of split to file name, "
                    "e.g. {train: train.json, dev: dev.json}"),
    ({"files": {"dev": ""}}, "config benchmarks.tasks.AFQMC.files.dev='' is invalid: expected a file name"),
    ({"text_a": 3}, "config benchmarks.tasks.AFQMC.text_a=3 is invalid: a jsonl task names JSON keys"),
    ({"label": ["label"]}, "config benchmarks.tasks.AFQMC.label=['label'] is invalid: expected a key or column "
                           "name"),
    ({"labels": ["1"]}, "config benchmarks.tasks.AFQMC.labels=['1'] is invalid: expected at least two label strings "
                        "in label-id order (or benchmarks.tasks.AFQMC.regression: true)"),
    ({"labels": ["0", "1", "0"]}, "config benchmarks.tasks.AFQMC.labels lists '0' twice"),
    ({"labels": "01"}, "config benchmarks.tasks.AFQMC.labels='01' is invalid: expected a list"),
    ({"regression": True}, "config benchmarks.tasks.AFQMC.labels must be empty for a regression task "
                           "(benchmarks.tasks.AFQMC.regression is true)"),
    ({"regression": "yes"}, "config benchmarks.tasks.AFQMC.regression='yes' is invalid: expected true or false"),
    ({"metrics": ["bleu"]}, "config benchmarks.tasks.AFQMC.metrics: unknown metric 'bleu'; expected some of "
                            "accuracy, f1, macro_f1, mcc, pearson, spearman"),
    ({"metrics": ["pearson"]}, "config benchmarks.tasks.AFQMC.metrics: pearson is a regression metric, and this "
                               "task is a classification task"),
    ({"labels": ["a", "b", "c"], "metrics": ["f1"]},
     "config benchmarks.tasks.AFQMC.metrics: f1 (of label id 1) needs exactly two labels, "
     "benchmarks.tasks.AFQMC.labels has 3 (macro_f1 averages every class's F1)"),
    ({"list_join": 1}, "config benchmarks.tasks.AFQMC.list_join=1 is invalid: expected a string (the separator put "
                       "between the list's items)"),
    ({"skip_labels": ["1"]}, "config benchmarks.tasks.AFQMC.skip_labels: '1' is also one of "
                             "benchmarks.tasks.AFQMC.labels"),
])
def test_spec_errors_name_the_setting(change, message):
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("AFQMC", {**AFQMC, **change})
    assert one_line(caught.value) == message


def test_tsv_spec_errors():
    tsv = {"format": "tsv", "files": {"train": "train.tsv"}, "text_a": "sentence", "label": "label",
           "labels": ["0", "1"]}
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("SST", {**tsv, "header": False})
    assert one_line(caught.value) == (
        "config benchmarks.tasks.SST.text_a='sentence' names a column, but benchmarks.tasks.SST.header is false: a "
        "file without a header row takes 0-based column indices")
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("SST", {**tsv, "text_a": -1})
    assert one_line(caught.value) == ("config benchmarks.tasks.SST.text_a=-1 is invalid: expected a 0-based column "
                                      "index")
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("a.b", tsv)
    assert one_line(caught.value) == ("config benchmarks.tasks: task name 'a.b' is invalid: expected a non-empty "
                                      "name without dots or surrounding spaces")


# ---------------------------------------------------------------------------------------------
# Reading JSON lines and TSV


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def rows(*objects) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


GOOD = {"sentence1": "花呗怎么还款", "sentence2": "花呗如何还钱", "label": "1"}


def test_jsonl_reader_takes_the_folder_or_the_task_folder_and_skips_blank_lines(tmp_path):
    spec = ClassificationSpec.from_dict("AFQMC", {**AFQMC, "id": "id"})
    write(tmp_path / "AFQMC" / "dev.json", rows(GOOD, {**GOOD, "label": 0, "id": 17}) + "\n  \n")
    expected = [GlueExample("dev-0", "花呗怎么还款", "花呗如何还钱", "1"),
                GlueExample("dev-17", "花呗怎么还款", "花呗如何还钱", "0")]
    assert read_task(spec, "dev", str(tmp_path)) == expected
    assert read_task(spec, "dev", str(tmp_path / "AFQMC")) == expected


@pytest.mark.parametrize("content,message", [
    (rows(GOOD) + '{"sentence1": "好", \n', "{path}:2: not a JSON object (Expecting property name enclosed in "
                                             "double quotes at column 20); benchmarks.tasks.AFQMC.format says one "
                                             "JSON object a line"),
    (rows(GOOD) + '["好", "好", "1"]\n', "{path}:2: a JSON list, not an object; benchmarks.tasks.AFQMC.format says "
                                       "one JSON object a line"),
    (rows(GOOD, {"sentence1": "好"}), "{path}:2: no key 'sentence2' (benchmarks.tasks.AFQMC.text_b)"),
    (rows({"sentence1": "好", "sentence2": "好"}), "{path}:1: no key 'label' (benchmarks.tasks.AFQMC.label)"),
    (rows(GOOD, GOOD, {**GOOD, "label": "2"}), "{path}:3: label '2' (key 'label') is not one of ['0', '1'] "
                                               "(benchmarks.tasks.AFQMC.labels)"),
    (rows({**GOOD, "label": None}), "{path}:1: label None (key 'label') is not one of ['0', '1'] "
                                    "(benchmarks.tasks.AFQMC.labels)"),
    (rows({**GOOD, "sentence1": 12}), "{path}:1: key 'sentence1' holds 12, not a string "
                                      "(benchmarks.tasks.AFQMC.text_a)"),
    (rows({**GOOD, "sentence2": ["花呗", "还款"]}), "{path}:1: key 'sentence2' holds a list; set "
                                                  "benchmarks.tasks.AFQMC.list_join to join its items "
                                                  "(benchmarks.tasks.AFQMC.text_b)"),
])
def test_jsonl_errors_name_file_line_key_and_setting(tmp_path, content, message):
    path = write(tmp_path / "dev.json", content)
    with pytest.raises(InputError) as caught:
        read_task(ClassificationSpec.from_dict("AFQMC", AFQMC), "dev", str(tmp_path))
    assert one_line(caught.value) == message.format(path=path)


def test_missing_files_bytes_and_splits(tmp_path):
    spec = ClassificationSpec.from_dict("AFQMC", AFQMC)
    with pytest.raises(MissingInputError) as caught:
        read_task(spec, "train", str(tmp_path))
    assert one_line(caught.value) == (f"AFQMC train file not found: neither {tmp_path}/AFQMC/train.json nor "
                                      f"{tmp_path}/train.json exists (benchmarks.tasks.AFQMC.files.train)")
    with pytest.raises(ConfigError) as caught:
        read_task(spec, "test", str(tmp_path))
    assert one_line(caught.value) == "config benchmarks.tasks.AFQMC.files has no split 'test'; it has dev, train"
    path = tmp_path / "dev.json"
    path.write_bytes(rows(GOOD).encode() + b'{"sentence1": "\xe8\x8a", "sentence2": "x", "label": "1"}\n')
    with pytest.raises(InputError) as caught:
        read_task(spec, "dev", str(tmp_path))
    assert one_line(caught.value) == (f"{path}:2: not valid UTF-8 at byte offset 100 "
                                      "(benchmarks.tasks.AFQMC.format)")


def test_nested_keys_lists_skipped_labels_and_unlabeled_splits(tmp_path):
    spec = ClassificationSpec.from_dict("STS", {
        "format": "jsonl", "files": {"dev": "dev.json", "test": "test.json"}, "text_a": "pair.a", "text_b": "pair.b",
        "label": "labels.real", "regression": True, "id": "guid", "list_join": "，"})
    write(tmp_path / "dev.json", rows({"guid": "x-1", "pair": {"a": ["猫", "狗"], "b": "宠物"}, "labels": {"real": 3.7}},
                                      {"pair": {"a": "下雨", "b": "天晴"}, "labels": {"real": "0"}}))
    assert read_task(spec, "dev", str(tmp_path)) == [GlueExample("dev-x-1", "猫，狗", "宠物", "3.7"),
                                                     GlueExample("dev-1", "下雨", "天晴", "0")]
    write(tmp_path / "dev.json", rows({"pair": {"a": "下雨", "b": "天晴"}, "labels": {"real": "NaN"}}))
    with pytest.raises(InputError) as caught:
        read_task(spec, "dev", str(tmp_path))
    assert one_line(caught.value) == (f"{tmp_path / 'dev.json'}:1: key 'labels.real' holds 'NaN', not a finite "
                                      "number (benchmarks.tasks.STS.regression is true)")
    write(tmp_path / "test.json", rows({"pair": {"a": "下雨", "b": "天晴"}}))
    assert read_task(spec, "test", str(tmp_path)) == [GlueExample("test-0", "下雨", "天晴", None)]
    with pytest.raises(InputError):
        read_task(spec, "test", str(tmp_path), labeled=True)


def test_json_array_files_as_klue_ships_them(tmp_path):
    """format: json (one array of objects: KLUE's YNAT, NLI, STS files); errors name the item as path[index]."""
    spec = ClassificationSpec.from_dict("YNAT", {
        "format": "json", "files": {"dev": "ynat_dev.json"}, "text_a": "title", "label": "label",
        "labels": ["IT과학", "경제", "사회", "생활문화", "세계", "스포츠", "정치"], "metrics": ["macro_f1"], "id": "guid"})
    items = [{"guid": "ynat-v1_dev_00000", "title": "5억원 무이자 융자는 되고", "label": "사회"},
             {"guid": "ynat-v1_dev_00001", "title": "왜 수소충전소만 더 멀리", "label": "사회"}]
    path = write(tmp_path / "YNAT" / "ynat_dev.json", json.dumps(items, ensure_ascii=False, indent=1))
    assert read_task(spec, "dev", str(tmp_path)) == [
        GlueExample("dev-ynat-v1_dev_00000", "5억원 무이자 융자는 되고", None, "사회"),
        GlueExample("dev-ynat-v1_dev_00001", "왜 수소충전소만 더 멀리", None, "사회")]
    write(path, json.dumps([items[0], {"guid": "x", "label": "사회"}], ensure_ascii=False))
    with pytest.raises(InputError) as caught:
        read_task(spec, "dev", str(tmp_path))
    assert one_line(caught.value) == f"{path}[1]: no key 'title' (benchmarks.tasks.YNAT.text_a)"
    write(path, json.dumps({"data": items}))
    with pytest.raises(InputError) as caught:
        read_task(spec, "dev", str(tmp_path))
    assert one_line(caught.value) == (f"{path}: a JSON dict, not an array; benchmarks.tasks.YNAT.format says one JSON "
                                      "array of objects")
    with pytest.raises(ConfigError) as caught:
        ClassificationSpec.from_dict("YNAT", {**AFQMC, "format": "json", "text_a": 0})
    assert one_line(caught.value) == "config benchmarks.tasks.YNAT.text_a=0 is invalid: a json task names JSON keys"


TSV_SPEC = {"format": "tsv", "files": {"train": "train.tsv"}, "text_a": "sentence1", "text_b": "sentence2",
            "label": "gold", "labels": ["entailment", "not_entailment"], "id": "index"}


def test_tsv_reader_names_and_indices(tmp_path):
    write(tmp_path / "train.tsv", 'index\tsentence1\tsentence2\tgold\n'
                                  '7\t他说"好\t他同意了\tentailment\r\n'
                                  '\n'
                                  '8\t下雨了\t天晴了\tnot_entailment \n')
    named = ClassificationSpec.from_dict("RTE-zh", TSV_SPEC)
    expected = [GlueExample("train-7", '他说"好', "他同意了", "entailment"),
                GlueExample("train-8", "下雨了", "天晴了", "not_entailment")]
    assert read_task(named, "train", str(tmp_path)) == expected
    by_index = ClassificationSpec.from_dict("RTE-zh", {**TSV_SPEC, "header": False, "text_a": 1, "text_b": 2,
                                                       "label": 3, "id": 0})
    write(tmp_path / "train.tsv", "7\t他说\"好\t他同意了\tentailment\n8\t下雨了\t天晴了\tnot_entailment\n")
    assert read_task(by_index, "train", str(tmp_path)) == expected
    no_id = ClassificationSpec.from_dict("RTE-zh", {**TSV_SPEC, "id": "idx"})
    write(tmp_path / "train.tsv", "sentence1\tsentence2\tgold\n下雨了\t天晴了\tnot_entailment\n")
    assert read_task(no_id, "train", str(tmp_path)) == [GlueExample("train-0", "下雨了", "天晴了", "not_entailment")]
    write(tmp_path / "train.tsv", "index\tsentence1\tsentence2\n3\t下雨了\t天晴了\n")  # a test file: no label column
    assert read_task(named, "train", str(tmp_path), labeled=False) == [GlueExample("train-3", "下雨了", "天晴了", None)]


def test_tsv_errors_name_the_column_and_setting(tmp_path):
    spec = ClassificationSpec.from_dict("RTE-zh", TSV_SPEC)
    path = write(tmp_path / "train.tsv", "index\tsentence1\thypothesis\tgold\n")
    with pytest.raises(InputError) as caught:
        read_task(spec, "train", str(tmp_path))
    assert one_line(caught.value) == (f"{path}:1: no column 'sentence2' in the header ['index', 'sentence1', "
                                      "'hypothesis', 'gold'] (benchmarks.tasks.RTE-zh.text_b)")
    write(path, "index\tsentence1\tsentence2\tgold\n0\t下雨了\t天晴了\tnot_entailment\n1\t下雨了\t天晴了\n")
    with pytest.raises(InputError) as caught:
        read_task(spec, "train", str(tmp_path))
    assert one_line(caught.value) == (f"{path}:3: row has 3 tab-separated columns, no column 'gold' "
                                      "(benchmarks.tasks.RTE-zh.label)")
    write(path, "index\tsentence1\tsentence2\tgold\n0\t下雨了\t天晴了\tneutral\n")
    with pytest.raises(InputError) as caught:
        read_task(spec, "train", str(tmp_path))
    assert one_line(caught.value) == (f"{path}:2: label 'neutral' (column 'gold') is not one of ['entailment', "
                                      "'not_entailment'] (benchmarks.tasks.RTE-zh.labels)")
    write(path, "")
    with pytest.raises(InputError) as caught:
        read_task(spec, "train", str(tmp_path))
    assert one_line(caught.value) == (f"{path}: empty, but benchmarks.tasks.RTE-zh.header is true (a header row "
                                      "comes first)")


# ---------------------------------------------------------------------------------------------
# CLUE's classification tasks


def test_clue_specs_are_configuration():
    assert list(C.CLUE_TASKS) == ["AFQMC", "TNEWS", "IFLYTEK", "CMNLI", "OCNLI", "CSL", "CLUEWSC2020"]
    assert C.CLUE_TASKS == specs_from_config(C.CLUE_TASK_SETTINGS)
    assert C.get_clue_task("tnews").labels == ("100", "101", "102", "103", "104", "106", "107", "108", "109", "110",
                                               "112", "113", "114", "115", "116")
    assert C.get_clue_task("IFLYTEK").labels == tuple(str(i) for i in range(119))
    assert C.get_clue_task("OCNLI").labels == ("contradiction", "entailment", "neutral")
    assert C.get_clue_task("CLUEWSC2020").labels == ("true", "false")
    assert {spec.metrics for spec in C.CLUE_TASKS.values()} == {("accuracy",)}
    assert {spec.files["dev"] for spec in C.CLUE_TASKS.values()} == {"dev.json"}
    with pytest.raises(ConfigError) as caught:
        C.get_clue_task("CHID")
    assert one_line(caught.value) == ("unknown CLUE task 'CHID' (benchmarks.glue_tasks, or score --task); expected one of AFQMC, TNEWS, IFLYTEK, CMNLI, "
                                      "OCNLI, CSL, CLUEWSC2020")


@pytest.mark.parametrize("task,n_train,dev_labels", [
    ("AFQMC", 4, ["1", "0", "1"]), ("TNEWS", 5, ["101", "108", "110"]), ("IFLYTEK", 4, ["2", "118", "0"]),
    ("CMNLI", 4, ["entailment", "contradiction", "neutral"]), ("OCNLI", 3, ["entailment", "contradiction", "neutral"]),
    ("CSL", 4, ["1", "0", "1"]), ("CLUEWSC2020", 4, ["true", "true", "false"]),
])
def test_clue_fixtures_read(task, n_train, dev_labels):
    assert len(C.read_clue(task, "train", str(FIXTURES))) == n_train
    assert [e.label for e in C.read_clue(task, "dev", str(FIXTURES))] == dev_labels


def test_clue_examples_exactly():
    data = str(FIXTURES)
    assert C.read_clue("AFQMC", "train", data)[1] == GlueExample("train-1", "借呗可以提前还吗", "花呗的额度怎么提高", "0")
    assert C.read_clue("AFQMC", "test", data) == [GlueExample("test-0", "花呗账单在哪里查", "怎么查看花呗的账单", None),
                                                  GlueExample("test-1", "借呗能借多久", "余额宝转出要多久到账", None)]
    assert C.read_clue("TNEWS", "train", data)[0] == GlueExample("train-0", "这部新电影上映三天票房过亿", None, "102")
    assert C.read_clue("IFLYTEK", "train", data)[3] == GlueExample(
        "train-3", "小区附近的生鲜超市，水果蔬菜半小时送到家门口。", None, "110")
    # CMNLI and OCNLI: the rows labelled "-" (no majority) are left out; the others keep their row numbers / ids.
    assert [e.guid for e in C.read_clue("CMNLI", "train", data)] == ["train-0", "train-1", "train-2", "train-4"]
    assert [e.guid for e in C.read_clue("OCNLI", "train", data)] == ["train-0", "train-1", "train-2"]
    # CSL: the keywords joined by a space (text_a), then the abstract (text_b), as CLUE's baselines.
    assert C.read_clue("CSL", "dev", data)[2] == GlueExample(
        "dev-7", "粒子群算法 车间调度", "提出一种改进的粒子群算法用于求解车间调度问题，算例验证了算法的有效性。", "1")


def test_cluewsc_marks_the_candidate_and_the_pronoun():
    assert [(e.guid, e.text_a, e.label) for e in C.read_clue("CLUEWSC2020", "train", str(FIXTURES))] == [
        ("train-0", "小明把_书包_放在桌子上，因为[它]太重了，他背不动。", "true"),
        ("train-1", "小明把书包放在_桌子_上，因为[它]太重了，他背不动。", "false"),
        ("train-2", "老师表扬了_小红_，因为[她]的作业写得最认真。", "true"),
        ("train-3", "_老师_表扬了小红，因为[她]的作业写得最认真。", "false"),
    ]
    # The pronoun before its candidate (span2_index < span1_index): the marks still wrap each span.
    assert C.read_clue("CLUEWSC2020", "dev", str(FIXTURES))[0] == GlueExample(
        "dev-0", "[它]一直趴在门口等着，直到主人回家，_小狗_才肯吃饭。", None, "true")
    assert C.mark_wsc_spans("甲乙丙丁", ("丁", 3), ("甲", 0)) == "[甲]乙丙_丁_"


@pytest.mark.parametrize("target,message", [
    ({"span1_text": "书包", "span1_index": 4, "span2_text": "它", "span2_index": 13},
     "{path}:1: target.span1_text '书包' is not at span1_index 4 (the text has '包放' there) "
     "(benchmarks.tasks.CLUEWSC2020.text_a)"),
    ({"span1_text": "书包", "span1_index": 3, "span2_text": "包", "span2_index": 4},
     "{path}:1: target.span1 '书包' at 3 and span2 '包' at 4 overlap (benchmarks.tasks.CLUEWSC2020.text_a)"),
    ({"span1_text": "书包", "span1_index": "3", "span2_text": "它", "span2_index": 13},
     "{path}:1: target.span1_text must be a string and target.span1_index an integer, got '书包' and '3' "
     "(benchmarks.tasks.CLUEWSC2020.text_a)"),
    ({"span1_text": "书包", "span1_index": 3},
     "{path}:1: key 'target' must hold span1_text, span1_index, span2_text, span2_index (CLUEWSC2020's format; "
     "benchmarks.tasks.CLUEWSC2020.text_a)"),
])
def test_cluewsc_errors(tmp_path, target, message):
    path = write(tmp_path / "train.json", rows({"target": target, "idx": 0, "label": "true",
                                                "text": "小明把书包放在桌子上，因为它太重了，他背不动。"}))
    with pytest.raises(InputError) as caught:
        C.read_clue("CLUEWSC2020", "train", str(tmp_path))
    assert one_line(caught.value) == message.format(path=path)


# ---------------------------------------------------------------------------------------------
# C3: multiple choice as RACE examples


def test_c3_reads_into_race_examples():
    dev = C.read_c3(str(FIXTURES / "C3"), "dev")
    assert dev == [
        RaceExample("d-2-1-0", "d", "男：你怎么又迟到了？\n女：路上堵车，我坐的公共汽车半个小时才走了两站。", "女的为什么迟到？",
                    ("起床晚了", "路上堵车", "无效答案", "无效答案"), 1),
        RaceExample("d-2-1-1", "d", "男：你怎么又迟到了？\n女：路上堵车，我坐的公共汽车半个小时才走了两站。", "女的是怎么来的？",
                    ("走路", "骑车", "坐公共汽车", "开车"), 2),
        RaceExample("m-m2-1-0", "m", "小王每天早上六点起床跑步，他说跑步让他一整天都有精神。", "小王为什么每天跑步？",
                    ("为了减肥", "让自己有精神", "为了参加比赛", "医生让他跑"), 1),
    ]
    train = C.read_c3(str(FIXTURES / "C3"), "train")
    assert [(e.example_id, e.level, e.label, len(e.options)) for e in train] == [
        ("d-1-1-0", "d", 1, 4), ("d-1-2-0", "d", 1, 4), ("d-1-2-1", "d", 0, 4), ("m-m1-1-0", "m", 1, 4),
        ("m-m1-1-1", "m", 0, 4)]
    test = C.read_c3_file(str(FIXTURES / "C3" / "test1.0.json"), "test", require_answers=False)
    assert test == [RaceExample("test-t-1-0", "test", "女：明天的会几点开始？\n男：九点，别忘了带材料。", "会议几点开始？",
                                ("八点", "九点", "十点", "无效答案"), None)]
    assert C.c3_accuracy([1, 2, 0], [e.label for e in dev], [e.level for e in dev]) == {
        "d": 1.0, "n_d": 2, "m": 0.0, "n_m": 1, "all": 2 / 3, "n_all": 3}


def test_c3_featurizes_with_the_race_code(wordpiece):
    dev = C.read_c3(str(FIXTURES / "C3"), "dev")
    arrays = convert_race_examples(dev, wordpiece, max_seq_length=48, max_qa_length=16)
    assert arrays["input_ids"].shape == (3, 4, 48)
    assert arrays["label_ids"].tolist() == [1, 2, 1]
    # [CLS] passage [SEP] question+choice [SEP]; the padded choice is a real sequence, never the answer.
    ids = arrays["input_ids"][0, 2]
    n = int(arrays["input_mask"][0, 2].sum())
    sep = [i for i in range(n) if ids[i] == wordpiece.sep_id]
    assert wordpiece.convert_ids_to_pieces(ids[sep[0] + 1:n]) == [
        "[UNK]", "的", "为", "什", "么", "[UNK]", "到", "？", "[UNK]", "[UNK]", "[UNK]", "案", "[SEP]"]
    assert int(arrays["segment_ids"][0, 2].sum()) == n - sep[0] - 1


@pytest.mark.parametrize("document,message", [
    ([["男：好。"], [{"question": "谁说话？", "choice": ["男的", "女的"], "answer": "老师"}], "9-1"],
     "{path}: document 0 (id 9-1), question 0: answer '老师' is not one of its choices ['男的', '女的'] (C3's "
     "format: [[passage lines], [{{question, choice, answer}}], id] per document)"),
    ([["男：好。"], [{"question": "谁说话？", "choice": ["一", "二", "三", "四", "五"], "answer": "一"}], "9-1"],
     "{path}: document 0 (id 9-1), question 0: 'choice' must be a list of 2 to 4 strings, got ['一', '二', '三', "
     "'四', '五'] (C3's format: [[passage lines], [{{question, choice, answer}}], id] per document)"),
    (["男：好。", [], "9-1"],
     "{path}: document 0 (id 9-1): the passage must be a list of strings (C3's format: [[passage lines], "
     "[{{question, choice, answer}}], id] per document)"),
])
def test_c3_errors(tmp_path, document, message):
    path = write(tmp_path / "d-dev.json", json.dumps([document], ensure_ascii=False))
    with pytest.raises(InputError) as caught:
        C.read_c3(str(tmp_path), "dev", subsets=("d",))
    assert one_line(caught.value) == message.format(path=path)


def test_c3_file_names(tmp_path):
    document = [["男：好。"], [{"question": "谁说话？", "choice": ["男的", "女的"], "answer": "男的"}], "9-1"]
    write(tmp_path / "c3-d-dev.json", json.dumps([document], ensure_ascii=False))
    assert C.read_c3(str(tmp_path), "dev", subsets=("d",)) == [
        RaceExample("d-9-1-0", "d", "男：好。", "谁说话？", ("男的", "女的", "无效答案", "无效答案"), 0)]
    with pytest.raises(MissingInputError) as caught:
        C.read_c3(str(tmp_path), "dev")
    assert one_line(caught.value) == (f"C3 dev file not found: neither {tmp_path}/m-dev.json nor "
                                      f"{tmp_path}/c3-m-dev.json exists")


# ---------------------------------------------------------------------------------------------
# CMRC2018: SQuAD's reader, then token-level answer positions with each tokenizer


def test_cmrc2018_reads_with_read_squad():
    train = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "train")
    assert [(e.qid, e.answer_text, e.start_char, e.end_char) for e in train] == [
        ("TRAIN_1_QUERY_0", "2024年", 13, 18), ("TRAIN_1_QUERY_1", "apt", 31, 34),
        ("TRAIN_1_QUERY_2", "很多志愿者", 58, 63)]
    dev = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "dev")
    assert [[(a["text"], a["answer_start"]) for a in e.answers] for e in dev] == [
        [("网站上", 9), ("在网站上", 8), ("网站", 9)], [("12", 35), ("版本12", 33), ("12", 35)]]
    assert train[0].title == "debian" and train[0].context[13:18] == "2024年"


def _answer_pieces(examples, tokenizer):
    alignment = align_contexts([examples[0].context], tokenizer)[0]
    out = []
    for example in examples:
        for answer in example.answers:
            start = int(answer["answer_start"])
            first, last = alignment.answer_pieces(start, start + len(answer["text"]))
            out.append(alignment.pieces[first:last + 1])
    return alignment, out


def test_cmrc2018_alignment_with_wordpiece(wordpiece):
    """WordPiece pieces of Chinese are single characters: every answer maps to exactly its own pieces, over
    [UNK] pieces (志愿) and full-width commas. WordPiece contexts are aligned by offsets (squad/alignment.py
    wordpiece_piece_spans), not by the official SentencePiece LCS: each [UNK] covers exactly its own character."""
    train = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "train")
    alignment, pieces = _answer_pieces(train, wordpiece)
    assert not alignment.official   # offsets, not the LCS
    assert pieces == [["2024", "年"], ["apt"], ["很", "多", "[UNK]", "[UNK]", "者"]]
    assert alignment.spans[50:53].tolist() == [[60, 61], [61, 62], [62, 63]]   # 志, 愿, 者
    assert [(p, train[0].context[s:e]) for p, (s, e) in zip(alignment.pieces[:10], alignment.spans.tolist())] == [
        ("debian", "debian"), ("是", "是"), ("一", "一"), ("个", "个"), ("发", "发"), ("行", "行"), ("版", "版"),
        ("，", "，"), ("2024", "2024"), ("年", "年")]
    dev = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "dev")
    assert _answer_pieces(dev, wordpiece)[1] == [["网", "站", "上"], ["在", "网", "站", "上"], ["网", "站"], ["12"],
                                                 ["版", "本", "12"], ["12"]]


def test_cmrc2018_alignment_with_the_english_sentencepiece_model(albert):
    """An English SentencePiece model keeps each run of unknown CJK characters as one piece, so an answer inside a
    run maps to the whole run: the token-level labels are right only at the model's granularity."""
    train = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "train")
    alignment, pieces = _answer_pieces(train, albert)
    assert alignment.official
    assert pieces == [["20", "24", "年发布了新版本。用户可以使用"], ["ap", "t"],
                      ["也可以从源码编译。这个系统的维护者是很多志愿者。"]]
    dev = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "dev")
    assert _answer_pieces(dev, albert)[1][:2] == [["这个软件包的文档在网站上"]] * 2


def test_cmrc2018_features_with_sentencepiece(albert):
    train = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), "train")
    arrays, metas = convert_squad_examples(train, albert, max_seq_length=64, doc_stride=32, max_query_length=16,
                                           is_training=True)
    assert arrays["start_positions"].tolist() == [10, 12, 16]
    assert arrays["end_positions"].tolist() == [12, 13, 16]
    assert [m.doc_offset for m in metas] == [6, 5, 5]


def _wordpiece_features(tokenizer, split):
    examples = C.read_cmrc2018(str(FIXTURES / "CMRC2018"), split)
    return convert_squad_examples(examples, tokenizer, max_seq_length=64, doc_stride=32, max_query_length=16,
                                  is_training=True)


EXPECTED_WORDPIECE = {"start_positions": [21, 0, 38, 0, 0, 29], "end_positions": [22, 0, 38, 0, 0, 33],
                      "is_impossible": [0, 1, 0, 1, 1, 0]}


def test_cmrc2018_features_with_wordpiece(wordpiece):
    """The windows (two per question at 64 positions) carry each answer's first and last piece; ids come from the
    tokenizer's own vocabulary (piece_to_id), whichever kind it is."""
    arrays, metas = _wordpiece_features(wordpiece, "train")
    assert {k: arrays[k].tolist() for k in EXPECTED_WORDPIECE} == EXPECTED_WORDPIECE
    assert [(m.doc_offset, m.doc_start, m.doc_length) for m in metas] == [
        (13, 0, 50), (13, 32, 22), (15, 0, 48), (15, 32, 22), (13, 0, 50), (13, 32, 22)]
    first = arrays["input_ids"][0]
    assert wordpiece.convert_ids_to_pieces(first[21:23]) == ["2024", "年"]


def test_mostly_unknown_context_aligns_with_wordpiece(wordpiece):
    """A context of mostly [UNK] pieces (which the SentencePiece LCS would call a MISMATCH) aligns exactly too, and
    so do words cut by WordPiece, accents, full-width letters and the control characters BERT drops."""
    context = "春眠不觉晓，处处闻啼鸟。"
    alignment = align_contexts([context], wordpiece)[0]
    assert alignment.pieces == wordpiece.tokenize(context)
    assert alignment.spans.tolist() == [[k, k + 1] for k in range(len(context))]
    mixed = "Ｄebian\u00a0Straße, naïve ΣΑΣ  x\x0by 的 [UNK] ##ab"
    alignment = align_contexts([mixed], wordpiece)[0]
    assert [(p, mixed[s:e]) for p, (s, e) in zip(alignment.pieces, alignment.spans.tolist())] == [
        ("[UNK]", "Ｄebian"), ("straße", "Straße"), (",", ","), ("n", "n"), ("##a", "a"), ("##i", "ï"),
        ("##v", "v"), ("##e", "e"), ("[UNK]", "ΣΑΣ"), ("x", "x"), ("##y", "y"), ("的", "的"), ("[", "["),
        ("unk", "UNK"), ("]", "]"), ("#", "#"), ("#", "#"), ("a", "a"), ("##b", "b")]


# ---------------------------------------------------------------------------------------------
# CMRC2018's official scorer (components/evaluation/squad/cmrc2018.py) on known predictions


def test_nltk_word_tokenizer_restated():
    """Expected lists written by nltk 3.10.4's NLTKWordTokenizer().tokenize (what nltk.word_tokenize applies to each
    sentence); the restatement also agreed with it on 3,000 random strings of quotes, brackets and punctuation."""
    from components.evaluation.squad.cmrc2018 import word_tokenize
    assert word_tokenize("iPhone 12, (3.5GHz) don't Mr. Smith. ok.") == [
        "iPhone", "12", ",", "(", "3.5GHz", ")", "do", "n't", "Mr.", "Smith.", "ok", "."]
    assert word_tokenize('He said "hi" -- and left...') == ["He", "said", "``", "hi", "''", "--", "and", "left",
                                                            "..."]
    assert word_tokenize("cannot gonna 'twas") == ["can", "not", "gon", "na", "'", "twas"]
    assert word_tokenize("$3.88 (roughly 3,36 euros)") == ["$", "3.88", "(", "roughly", "3,36", "euros", ")"]
    assert word_tokenize("«hi» ‘x’ “y” a:b, c:1 d;e 5%") == [
        "«", "hi", "»", "‘", "x", "’", "“", "y", "”", "a", ":", "b", ",", "c:1", "d", ";", "e", "5", "%"]


def test_cmrc2018_segmentation_and_scores():
    from components.evaluation.squad import cmrc2018 as M
    # Each Chinese character a segment, English runs NLTK's words; the listed punctuation dropped for F1 (a single
    # "…" is not in the list: the list holds "……", two characters).
    assert M.mixed_segmentation("版本12支持Linux。") == ["版", "本", "12", "支", "持", "linux", "。"]
    assert M.mixed_segmentation("《版本12》支持 iPhone 12，好…", rm_punc=True) == [
        "版", "本", "12", "支", "持", "iphone", "12", "好", "…"]
    assert M.remove_punctuation(" 《网站上》，") == "网站上"
    # find_lcs: the longest common *contiguous* run of segments (a subsequence would be 3 here, not 2).
    assert M.find_lcs(["在", "网", "站", "上"], ["网", "站", "的", "上"]) == (["网", "站"], 2)
    # F1 = 2PR/(P+R) with P over the prediction's segments, R over the answer's; the best gold answer counts.
    assert M.f1_score(["网站上", "在网站上"], "网站") == pytest.approx(2 * 1.0 * (2 / 3) / (1.0 + 2 / 3))
    assert M.f1_score(["版本12"], "12") == pytest.approx(2 * 1.0 * (1 / 3) / (1 + 1 / 3))   # 版 本 12 vs 12
    assert M.f1_score(["网站"], "邮件") == 0.0
    assert (M.em_score(["在网站上"], "在网站上。"), M.em_score(["网站"], "网 站")) == (1, 0)


def test_cmrc2018_metrics_on_known_predictions(tmp_path):
    from components.evaluation.score import score
    from components.evaluation.squad.cmrc2018 import cmrc2018_metrics
    dev = str(FIXTURES / "CMRC2018" / "dev.json")
    # Question 0's golds: 网站上 / 在网站上 / 网站; question 1's: 12 / 版本12 / 12.
    predictions = {"DEV_1_QUERY_0": "网站上，", "DEV_1_QUERY_1": "版本12支持"}
    # Question 0: "，" is dropped, so EM 1 and F1 1. Question 1: 版 本 12 支 持 (5 segments) against 版 本 12
    # (P 3/5, R 1: F1 0.75) or 12 (P 1/5, R 1: F1 1/3); no exact match.
    assert cmrc2018_metrics(dev, predictions) == {"exact_match": 50.0, "f1": 100 * (1.0 + 0.75) / 2, "total": 2,
                                                  "missing": 0}
    assert cmrc2018_metrics(dev, {"DEV_1_QUERY_1": "12"}) == {"exact_match": 50.0, "f1": 50.0, "total": 2,
                                                               "missing": 1}
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(predictions, ensure_ascii=False), encoding="utf-8")
    assert score("cmrc2018", dev, str(path)) == {**cmrc2018_metrics(dev, predictions), "benchmark": "cmrc2018",
                                                 "dataset": dev}


def test_macro_f1_is_sklearns():
    import numpy as np
    from sklearn.metrics import f1_score

    from components.evaluation.metrics import glue_metrics, macro_f1
    rng = np.random.RandomState(0)
    for n, classes in ((1, 2), (7, 3), (50, 7), (200, 5)):
        labels, predictions = rng.randint(0, classes, n), rng.randint(0, classes, n)
        assert macro_f1(predictions, labels) == pytest.approx(f1_score(labels, predictions, average="macro"),
                                                              abs=1e-12)
    assert macro_f1([0, 0, 0], [0, 1, 2]) == pytest.approx(f1_score([0, 1, 2], [0, 0, 0], average="macro"))
    spec = ClassificationSpec.from_dict("YNAT", {"format": "jsonl", "files": {"dev": "dev.json"}, "text_a": "title",
                                                 "label": "label", "labels": ["a", "b", "c"],
                                                 "metrics": ["macro_f1", "accuracy"]})
    values = glue_metrics(spec, [0, 1, 1, 2], [0, 1, 2, 2])
    assert values == {"macro_f1": pytest.approx((1 + 2 / 3 + 2 / 3) / 3), "accuracy": 0.75,
                      "score": pytest.approx(((1 + 2 / 3 + 2 / 3) / 3 + 0.75) / 2), "n": 4}


def test_pure_cores_import_no_framework():
    code = ("import sys\nimport components.evaluation.glue.task_spec_reader, components.evaluation.glue.clue, "
            "components.evaluation.squad.cmrc2018, components.evaluation.glue.task_spec\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'apache_beam', 'tfx', "
            "'keras', 'tf_keras')))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
