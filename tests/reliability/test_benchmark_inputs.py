"""Bad rows in the downstream benchmark data (GLUE TSV, SQuAD JSON, RACE files), cut from data/sample.

Policy: GLUE rows with missing columns or unknown labels and RACE files missing options stop the run
with an error naming the file (and line / question): they are a wrong file or a broken download, and
a score on a silently shrunken dev set is not comparable to the paper. SQuAD answers whose
``answer_start`` does not point at the answer text are skipped and counted (``skipped_questions`` in
the benchmark's metrics): the official SQuAD files contain a handful of such questions, and skipped dev
questions still count as wrong in the official scoring (scores stay comparable).
"""
import inspect
import json
import os
import shutil

import pytest

from components.evaluation.glue import glue_data as glue
from components.evaluation.race import race_data as race
from components.evaluation.squad.reading import SquadFormatError, read_squad
from tests.reliability import fixtures

SAMPLE = fixtures.SAMPLE


def _copy_glue_task(tmp_path, task):
    dst = tmp_path / "glue" / task
    shutil.copytree(os.path.join(SAMPLE, "glue", task), dst)
    return dst


def _edit_line(path, line_no, edit):
    lines = open(path, encoding="utf-8-sig").read().split("\n")
    lines[line_no - 1] = edit(lines[line_no - 1])
    open(path, "w", encoding="utf-8").write("\n".join(lines))


def test_glue_row_with_missing_column_names_file_and_line(tmp_path):
    task_dir = _copy_glue_task(tmp_path, "MRPC")
    _edit_line(task_dir / "dev.tsv", 3, lambda row: "\t".join(row.split("\t")[:4]))  # #2 String lost
    with pytest.raises(ValueError, match=r"MRPC/dev.tsv:3: GLUE MRPC dev row has 4 tab-separated columns"):
        glue.read_glue("MRPC", "dev", str(tmp_path / "glue"))


def test_glue_bad_label_names_file_and_line(tmp_path):
    task_dir = _copy_glue_task(tmp_path, "CoLA")
    _edit_line(task_dir / "train.tsv", 5, lambda row: row.replace("\t1\t", "\tyes\t", 1).replace("\t0\t", "\tyes\t", 1))
    with pytest.raises(ValueError, match=r"CoLA/train.tsv:5: GLUE CoLA label 'yes' is not one of"):
        glue.read_glue("CoLA", "train", str(tmp_path / "glue"))


def test_glue_sts_b_non_numeric_score_is_an_error(tmp_path):
    path = fixtures.write(tmp_path / "STS-B" / "dev.tsv",
                          "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
                          "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man plays.\tA man plays.\tfive\n")
    with pytest.raises(ValueError, match=r"STS-B/dev.tsv:2: GLUE STS-B score 'five' is not a number"):
        glue.read_glue_file("STS-B", path)


def _squad_with_bad_answers(tmp_path):
    data = json.load(open(os.path.join(SAMPLE, "squad", "dev-v1.1-sample.json"), encoding="utf-8"))
    qas = data["data"][0]["paragraphs"][0]["qas"]
    qas[0]["answers"][0]["answer_start"] += 7  # off by a few characters
    qas[1]["answers"][0]["answer_start"] = 10 ** 6  # past the end of the context
    path = fixtures.write(tmp_path / "squad" / "dev-v1.1.json", json.dumps(data))
    return path, data, [qas[0]["id"], qas[1]["id"]]


def test_squad_answer_start_mismatch_is_an_error_by_default(tmp_path):
    path, data, bad = _squad_with_bad_answers(tmp_path)
    with pytest.raises(SquadFormatError, match=f": article 'Super_Bowl_50', question id {bad[0]}: "
                                               "answer_start .* does not point at answer"):
        read_squad(path)


def test_squad_answer_start_mismatch_is_skipped_and_counted_by_the_benchmark(tmp_path):
    path, data, bad = _squad_with_bad_answers(tmp_path)
    total = sum(len(p["qas"]) for a in data["data"] for p in a["paragraphs"])
    skipped = []
    examples = read_squad(path, on_bad_answer="skip", skipped=skipped)
    assert [qid for _, qid, _ in skipped] == bad
    assert len(examples) == total - 2 and not {e.qid for e in examples} & set(bad)
    # The benchmark component reads SQuAD in skip mode and records the count in metrics.json.
    from components.evaluation.squad import run_squad

    source = inspect.getsource(run_squad)
    assert 'on_bad_answer="skip"' in source and '"skipped_questions"' in source


def _race_file(tmp_path, edit):
    obj = json.load(open(os.path.join(SAMPLE, "race", "dev", "high", "98.txt"), encoding="utf-8"))
    edit(obj)
    return fixtures.write(tmp_path / "RACE" / "dev" / "high" / "98.txt", json.dumps(obj))


def test_race_file_without_options_field_names_the_file(tmp_path):
    path = _race_file(tmp_path, lambda o: o.pop("options"))
    with pytest.raises(race.RaceFormatError, match=r"high/98.txt: missing field\(s\) options"):
        race.read_race(str(tmp_path / "RACE"), split="dev")
    assert path


def test_race_question_with_three_options_names_file_and_question(tmp_path):
    _race_file(tmp_path, lambda o: o["options"][2].pop())
    with pytest.raises(race.RaceFormatError, match=r"high/98.txt: question 2 has 3 options, expected 4"):
        race.read_race(str(tmp_path / "RACE"), split="dev")


def test_race_fewer_option_lists_than_questions_names_the_file(tmp_path):
    _race_file(tmp_path, lambda o: o["options"].pop())
    with pytest.raises(race.RaceFormatError, match=r"high/98.txt: 5 questions but 4 option lists"):
        race.read_race(str(tmp_path / "RACE"), split="dev")
