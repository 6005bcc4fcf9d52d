"""Scorer: real files in tmp_path, one test per way a submission can be wrong."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from mlguild.config import load_config
from mlguild.core.errors import ScorerIntegrityError, SubmissionError
from mlguild.metrics import get_metric
from mlguild.scoring.integrity import PACKAGE_DIR, SOURCES, check_fingerprint, fingerprint
from mlguild.scoring.scorer import (
    SubmissionFormat,
    load_answers,
    read_submission,
    score_submission,
)

FMT = SubmissionFormat("id", ["id", "target"])
IDS = ["a", "b", "c", "d"]
ANSWERS = pd.DataFrame({"id": IDS, "target": ["0", "1", "1", "0"]}, dtype=object)
GOOD = "id,target\na,0.1\nb,0.8\nc,0.35\nd,0.4\n"


def write(tmp_path, text: str | bytes, name: str = "sub.csv"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def score(tmp_path, text, metric="roc_auc", answers=ANSWERS, fmt=FMT, **kw):
    targets = kw.pop("target_columns", ["target"])
    return score_submission(write(tmp_path, text), answers, fmt, get_metric(metric), targets, **kw)


def reason(tmp_path, text, **kw) -> str:
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, text, **kw)
    assert exc.value.message and exc.value.fix
    return exc.value.reason


# ------------------------------------------------------------------ valid files


def test_valid_submission_scores(tmp_path):
    result = score(tmp_path, GOOD)
    assert result.metric == "roc_auc" and result.n_rows == 4
    assert result.score.value == pytest.approx(skm.roc_auc_score([0, 1, 1, 0], [0.1, 0.8, 0.35, 0.4]))
    assert result.score.direction == "maximize"


def test_shuffled_submission_scores_identically(tmp_path):
    rng = np.random.default_rng(3)
    n = 2000
    ids = [f"id{i}" for i in range(n)]
    answers = pd.DataFrame({"id": ids, "target": rng.integers(0, 2, n).astype(str)}, dtype=object)
    lines = [f"{i},{p!r}" for i, p in zip(ids, np.round(rng.random(n), 3).tolist())]
    original = score(tmp_path, "id,target\n" + "\n".join(lines) + "\n", answers=answers)
    perm = rng.permutation(n)
    shuffled = score(tmp_path, "id,target\n" + "\n".join(lines[i] for i in perm) + "\n", answers=answers)
    assert shuffled.score == original.score


def test_read_submission_returns_strings_in_expected_order_with_file_rows(tmp_path):
    sub = read_submission(write(tmp_path, "id,target\nb,0.80\na,001\n"), FMT, ["a", "b"])
    assert sub["id"].tolist() == ["a", "b"] and sub["target"].tolist() == ["001", "0.80"]
    assert sub.index.tolist() == [2, 1] and sub.index.name == "row"


def test_bom_is_accepted(tmp_path):
    assert score(tmp_path, b"\xef\xbb\xbf" + GOOD.encode()).score.value == score(tmp_path, GOOD).score.value


def test_crlf_and_trailing_blank_lines_are_fine(tmp_path):
    text = GOOD.replace("\n", "\r\n") + "\r\n\r\n"
    assert score(tmp_path, text).score == score(tmp_path, GOOD).score


def test_quoted_field_with_comma(tmp_path):
    answers = pd.DataFrame({"id": ["x,1", "y"], "target": ["1", "0"]}, dtype=object)
    result = score(tmp_path, 'id,target\n"x,1",0.9\ny,"0.2"\n', answers=answers)
    assert result.score.value == 1.0


def test_multiclass_logloss_submission(tmp_path):
    fmt = SubmissionFormat("id", ["id", "cat", "dog", "fox"])
    answers = pd.DataFrame({"id": ["1", "2", "3"], "label": ["dog", "cat", "fox"]}, dtype=object)
    text = "id,cat,dog,fox\n1,0.2,0.7,0.1\n3,0.1,0.1,0.8\n2,0.5,0.25,0.25\n"
    result = score(tmp_path, text, metric="logloss", answers=answers, fmt=fmt, target_columns=["label"])
    assert result.score.value == pytest.approx(-np.mean(np.log([0.7, 0.5, 0.8])))
    assert result.score.direction == "minimize"


def test_multiclass_truth_outside_classes_is_a_task_error(tmp_path):
    fmt = SubmissionFormat("id", ["id", "cat", "dog"])
    answers = pd.DataFrame({"id": ["1"], "label": ["cow"]}, dtype=object)
    with pytest.raises(ValueError, match="cow"):
        score(tmp_path, "id,cat,dog\n1,0.5,0.5\n", metric="logloss", answers=answers, fmt=fmt, target_columns=["label"])


def test_positive_label_maps_truths(tmp_path):
    answers = pd.DataFrame({"id": IDS, "target": ["no", "yes", "yes", "no"]}, dtype=object)
    assert score(tmp_path, GOOD, answers=answers, positive_label="yes").score.value == 0.75
    with pytest.raises(ValueError, match="positive_label"):
        score(tmp_path, GOOD, answers=answers)


def test_f1_labels_and_qwk_integers(tmp_path):
    answers = pd.DataFrame({"id": IDS, "target": ["True", "False", "True", "True"]}, dtype=object)
    text = "id,target\na,True\nb,True\nc,False\nd,True\n"
    assert score(tmp_path, text, metric="f1", answers=answers).score.value == pytest.approx(4 / 6)
    answers = pd.DataFrame({"id": IDS, "target": ["0", "1", "2", "3"]}, dtype=object)
    qwk = score(tmp_path, "id,target\na,0\nb,1\nc,3\nd,3\n", metric="qwk", answers=answers).score.value
    assert qwk == pytest.approx(skm.cohen_kappa_score([0, 1, 2, 3], [0, 1, 3, 3], weights="quadratic"))
    assert reason(tmp_path, "id,target\na,0\nb,1.5\nc,3\nd,3\n", metric="qwk", answers=answers) == "not_integer"
    assert reason(tmp_path, "id,target\na,0\nb,\nc,3\nd,3\n", metric="accuracy", answers=answers) == "empty_label"


def test_multi_column_regression(tmp_path):
    fmt = SubmissionFormat("id", ["id", "y1", "y2"])
    answers = pd.DataFrame({"id": ["1", "2"], "y1": ["1", "2"], "y2": ["10", "20"]}, dtype=object)
    result = score(
        tmp_path, "id,y1,y2\n1,1,13\n2,4,20\n", metric="rmse", answers=answers, fmt=fmt, target_columns=["y1", "y2"]
    )
    assert result.score.value == pytest.approx((np.sqrt(2.0) + np.sqrt(4.5)) / 2)


def test_ranked_list_map_at_k(tmp_path):
    answers = pd.DataFrame({"id": ["1", "2"], "target": ["a b", "c"]}, dtype=object)
    result = score(tmp_path, "id,target\n1,a x b\n2,\n", metric="map_at_k", answers=answers, metric_params={"k": 3})
    assert result.score.value == pytest.approx(((1 + 2 / 3) / 2 + 0) / 2)


def test_200k_rows_score_correctly(tmp_path):
    rng = np.random.default_rng(11)
    n = 200_000
    ids = np.char.add("r", np.arange(n).astype(str))
    y, p = rng.integers(0, 2, n), rng.random(n)
    answers = pd.DataFrame({"id": ids.astype(object), "target": y.astype(str).astype(object)})
    order = rng.permutation(n)
    body = "\n".join(f"{i},{v!r}" for i, v in zip(ids[order], p[order].tolist()))
    result = score(tmp_path, "id,target\n" + body + "\n", answers=answers)
    assert result.n_rows == n
    assert result.score.value == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)


# ------------------------------------------------------------------ file-level rejections


def test_missing_file(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score_submission(tmp_path / "nope.csv", ANSWERS, FMT, get_metric("roc_auc"), ["target"])
    assert exc.value.reason == "missing"


def test_empty_file(tmp_path):
    assert reason(tmp_path, "") == "empty"


def test_header_only_file(tmp_path):
    assert reason(tmp_path, "id,target\n") == "empty"


def test_undecodable_bytes(tmp_path):
    assert reason(tmp_path, GOOD.encode() + b"e,\xff\xfe\n") == "encoding"


def test_too_large_is_refused_by_size_without_reading(tmp_path):
    path = tmp_path / "huge.csv"
    with open(path, "wb") as f:
        f.truncate(1024**3)  # a sparse 1 GB file: reading it would take seconds
    started = time.perf_counter()
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, FMT, IDS)
    assert exc.value.reason == "too_large" and "1,073,741,824" in exc.value.message
    assert time.perf_counter() - started < 0.5
    small = SubmissionFormat("id", ["id", "target"], max_bytes=10)
    with pytest.raises(SubmissionError) as exc:
        read_submission(write(tmp_path, GOOD), small, IDS)
    assert exc.value.reason == "too_large"


# ------------------------------------------------------------------ header


def test_wrong_header(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, GOOD.replace("target", "prediction", 1))
    assert exc.value.reason == "bad_header" and "prediction" in exc.value.message and "target" in exc.value.message


def test_header_with_trailing_space(tmp_path):
    assert reason(tmp_path, GOOD.replace("target", "target ", 1)) == "bad_header"


def test_duplicate_header(tmp_path):
    fmt = SubmissionFormat("id", ["id", "target", "other"])
    with pytest.raises(SubmissionError) as exc:
        read_submission(write(tmp_path, "id,target,target\na,1,2\n"), fmt, ["a"])
    assert exc.value.reason == "bad_header" and "duplicate" in exc.value.message


def test_semicolon_file_is_a_header_mismatch(tmp_path):
    assert reason(tmp_path, GOOD.replace(",", ";")) == "bad_header"


# ------------------------------------------------------------------ rows


def test_first_data_row_with_extra_field(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, "id,target\na,0.1,9\nb,0.8\nc,0.35\nd,0.4\n")
    assert exc.value.reason == "bad_row" and "row 1" in exc.value.message and "3 fields" in exc.value.message


def test_middle_row_with_missing_field(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, "id,target\na,0.1\nb,0.8\nc\nd,0.4\n")
    assert exc.value.reason == "bad_row" and "row 3" in exc.value.message and "1 fields" in exc.value.message


def test_bad_rows_in_quoted_files_too(tmp_path):
    assert reason(tmp_path, 'id,target\n"a",0.1\nb,0.8,1\nc,0.35\nd,0.4\n') == "bad_row"
    assert reason(tmp_path, 'id,target\n"a",0.1\nb\nc,0.35\nd,0.4\n') == "bad_row"
    assert reason(tmp_path, 'id,target\n"a",0.1\n\nb,0.8\nc,0.35\nd,0.4\n') == "bad_row"


def test_blank_line_in_the_middle(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, "id,target\na,0.1\nb,0.8\n\nc,0.35\nd,0.4\n")
    assert exc.value.reason == "bad_row" and "blank" in exc.value.message


# ------------------------------------------------------------------ ids


def test_missing_ids(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, "id,target\na,0.1\nb,0.8\n")
    assert exc.value.reason == "missing_ids" and "2 expected id(s)" in exc.value.message and "'c'" in exc.value.message


def test_duplicate_ids(tmp_path):
    assert reason(tmp_path, GOOD + "a,0.5\n") == "duplicate_ids"


def test_extra_ids(tmp_path):
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, GOOD + "zz,0.5\n")
    assert exc.value.reason == "extra_ids" and "'zz'" in exc.value.message


def test_ids_are_exact_strings(tmp_path):
    answers = pd.DataFrame({"id": ["001", "002"], "target": ["0", "1"]}, dtype=object)
    assert score(tmp_path, "id,target\n001,0.2\n002,0.7\n", answers=answers).score.value == 1.0
    assert reason(tmp_path, "id,target\n1,0.2\n2,0.7\n", answers=answers) == "missing_ids"


def test_non_unique_ids_align_by_position(tmp_path):
    fmt = SubmissionFormat("user", ["user", "item", "score"], ids_unique=False, key_columns=("item",))
    answers = pd.DataFrame(
        {"user": ["u1", "u1", "u2", "u2"], "item": ["i1", "i2", "i1", "i3"], "score": ["1", "0", "0", "1"]},
        dtype=object,
    )
    kw = dict(metric="gauc", answers=answers, fmt=fmt, target_columns=["score"])
    text = "user,item,score\nu1,i1,0.9\nu1,i2,0.1\nu2,i1,0.3\nu2,i3,0.6\n"
    assert score(tmp_path, text, **kw).score.value == 1.0
    reordered = "user,item,score\nu2,i1,0.3\nu1,i1,0.9\nu1,i2,0.1\nu2,i3,0.6\n"
    assert reason(tmp_path, reordered, **kw) == "reordered"
    within_user = "user,item,score\nu1,i2,0.1\nu1,i1,0.9\nu2,i1,0.3\nu2,i3,0.6\n"
    assert reason(tmp_path, within_user, **kw) == "reordered"
    assert reason(tmp_path, "user,item,score\nu1,i1,0.9\nu1,i2,0.1\nu2,i1,0.3\n", **kw) == "missing_ids"


def test_grouped_ndcg_with_group_column(tmp_path):
    fmt = SubmissionFormat("row_id", ["row_id", "score"])
    answers = pd.DataFrame(
        {
            "row_id": ["1", "2", "3", "4", "5"],
            "query": ["q1", "q1", "q1", "q2", "q2"],
            "score": ["2", "0", "1", "0", "0"],
        },
        dtype=object,
    )
    text = "row_id,score\n1,0.1\n2,0.9\n3,0.5\n4,1\n5,2\n"
    result = score(
        tmp_path,
        text,
        metric="ndcg_at_k",
        answers=answers,
        fmt=fmt,
        target_columns=["score"],
        metric_params={"group_column": "query", "k": 3},
    )
    # q1 ranked 2, 3, 1 -> rel 0, 1, 2; q2 has no relevant item and is excluded
    ideal = 2 + 1 / np.log2(3)
    assert result.score.value == pytest.approx((1 / np.log2(3) + 2 / np.log2(4)) / ideal)


# ------------------------------------------------------------------ values


@pytest.mark.parametrize(
    "bad, code",
    [
        ("nan", "non_finite"),
        ("NaN", "non_finite"),
        ("inf", "non_finite"),
        ("-inf", "non_finite"),
        ("1e400", "non_finite"),
        ("", "not_numeric"),
        ("abc", "not_numeric"),
        ("NA", "not_numeric"),
        ("0,5", None),
    ],
)
def test_bad_numbers(tmp_path, bad, code):
    text = f"id,target\na,0.1\nb,{bad}\nc,0.35\nd,0.4\n"
    if code is None:  # "0,5" unquoted is a shifted row, caught before any value check
        assert reason(tmp_path, text) == "bad_row"
        return
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, text)
    assert exc.value.reason == code
    assert "row 2" in exc.value.message and "'target'" in exc.value.message and repr(bad) in exc.value.message


def test_text_in_numeric_column_for_regression(tmp_path):
    answers = pd.DataFrame({"id": IDS, "target": ["1.5", "2", "3", "4"]}, dtype=object)
    assert reason(tmp_path, "id,target\na,1\nb,two\nc,3\nd,4\n", metric="rmse", answers=answers) == "not_numeric"


def test_probabilities_out_of_range(tmp_path):
    assert reason(tmp_path, "id,target\na,0.1\nb,1.2\nc,0.35\nd,0.4\n") == "out_of_range"
    assert reason(tmp_path, "id,target\na,-0.01\nb,0.8\nc,0.35\nd,0.4\n") == "out_of_range"


def test_read_submission_checks_values_when_given_a_metric(tmp_path):
    path = write(tmp_path, "id,target\na,0.1\nb,nan\nc,0.35\nd,0.4\n")
    assert len(read_submission(path, FMT, IDS)) == 4
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, FMT, IDS, metric=get_metric("roc_auc"))
    assert exc.value.reason == "non_finite"


# ------------------------------------------------------------------ answers and integrity


def test_load_answers_keeps_exact_strings(tmp_path):
    answers = load_answers(write(tmp_path, "id,target\n001,NA\n002,null\n", "answers.csv"), "id")
    assert answers["id"].tolist() == ["001", "002"] and answers["target"].tolist() == ["NA", "null"]
    with pytest.raises(ValueError, match="no_such"):
        load_answers(tmp_path / "answers.csv", "no_such")


def test_fingerprint_detects_change():
    fp = fingerprint()
    check_fingerprint(fp)
    with pytest.raises(ScorerIntegrityError):
        check_fingerprint("0" * 64)


def test_the_fingerprint_covers_every_scoring_and_metric_module_the_scorer_reaches():
    """A module of scoring/ or metrics/ that the scorer imports, directly or not, decides scores:
    one left out of SOURCES could be rewritten by a script unnoticed (metrics/correlation.py was)."""
    import ast

    seen, todo = set(), ["scoring/scorer.py"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for node in ast.walk(ast.parse((PACKAGE_DIR / name).read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                base = node.module.removeprefix("mlguild.")
                if node.level:  # relative: from the importing module's package
                    base = ".".join([*name.split("/")[:-1][: len(name.split("/")) - node.level], node.module])
                for part in [base, *(f"{base}.{a.name}" for a in node.names)]:
                    for candidate in (part.replace(".", "/") + ".py", part.replace(".", "/") + "/__init__.py"):
                        if candidate.split("/")[0] in ("scoring", "metrics") and (PACKAGE_DIR / candidate).exists():
                            todo.append(candidate)
    assert seen > {"scoring/scorer.py", "metrics/correlation.py"}
    assert seen <= set(SOURCES), sorted(seen - set(SOURCES))


def test_bootstrap_wins_is_paired_and_strict(tmp_path):
    import numpy as np

    from mlguild.metrics import get_metric
    from mlguild.scoring.scorer import SubmissionFormat, bootstrap_wins

    rng = np.random.default_rng(0)
    ids = [f"r{i}" for i in range(300)]
    truth = rng.integers(0, 2, size=300)
    answers = pd.DataFrame({"id": ids, "y": truth.astype(str)})
    good, noise = tmp_path / "good.csv", tmp_path / "noise.csv"
    pd.DataFrame({"id": ids, "y": truth * 0.6 + rng.random(300) * 0.4}).to_csv(good, index=False)
    pd.DataFrame({"id": ids, "y": rng.random(300)}).to_csv(noise, index=False)
    fmt = SubmissionFormat("id", ["id", "y"])
    args = (answers, fmt, get_metric("roc_auc"), ["y"])
    assert bootstrap_wins(good, noise, *args, n_resamples=50) == 1.0
    assert bootstrap_wins(noise, good, *args, n_resamples=50) == 0.0
    assert bootstrap_wins(good, good, *args, n_resamples=50) == 0.0  # a tie is never a win


# ------------------------------------------------------------------ labels must be known

LABEL_ANSWERS = pd.DataFrame({"id": IDS, "target": ["0", "1", "1", "0"]}, dtype=object)


@pytest.mark.parametrize("bad", ["1.0", "True", " 1", "1 ", "yes", "x" * 100_000])
def test_a_label_that_is_no_known_class_is_refused_not_scored_wrong(tmp_path, bad):
    text = f"id,target\na,0\nb,{bad}\nc,1\nd,0\n"
    with pytest.raises(SubmissionError) as exc:
        score(tmp_path, text, metric="accuracy", answers=LABEL_ANSWERS)
    err = exc.value
    assert err.reason == "unknown_label" and err.message.startswith("row 2 (id 'b'), column 'target'")
    assert "known: '0', '1'" in err.message and len(err.message) < 400
    if bad != bad.strip():
        assert "surrounding spaces" in err.message
    if len(bad) > 60:
        assert "100,000 chars" in err.message


def test_known_labels_come_from_answers_classes_training_labels_and_the_caller(tmp_path):
    text = "id,target\na,0\nb,rare\nc,1\nd,0\n"
    assert reason(tmp_path, text, metric="accuracy", answers=LABEL_ANSWERS) == "unknown_label"
    assert (
        score(tmp_path, text, metric="accuracy", answers=LABEL_ANSWERS, classes=["0", "1", "rare"]).score.value == 0.75
    )
    assert score(tmp_path, text, metric="accuracy", answers=LABEL_ANSWERS, labels={"rare"}).score.value == 0.75
    # load_answers reads the task's training labels from labels.json beside the answers (the
    # firewall writes it): a class too rare to reach the holdout is still a label to predict.
    LABEL_ANSWERS.to_csv(tmp_path / "answers.csv", index=False)
    assert (
        reason(tmp_path, text, metric="accuracy", answers=load_answers(tmp_path / "answers.csv", "id"))
        == "unknown_label"
    )
    (tmp_path / "labels.json").write_text('{"target": ["0", "1", "rare"]}')
    answers = load_answers(tmp_path / "answers.csv", "id")
    assert score(tmp_path, text, metric="accuracy", answers=answers).score.value == 0.75
    assert score(tmp_path, text, metric="accuracy", answers=answers.copy()).score.value == 0.75


def test_integer_labels_are_known_by_value(tmp_path):
    answers = pd.DataFrame({"id": IDS, "target": ["0", "1", "2", "3"]}, dtype=object)
    assert score(tmp_path, "id,target\na,0\nb,01\nc,+2\nd,3\n", metric="qwk", answers=answers).score.value == 1.0
    assert reason(tmp_path, "id,target\na,0\nb,7\nc,2\nd,3\n", metric="qwk", answers=answers) == "unknown_label"


def test_read_submission_checks_labels_when_given_them(tmp_path):
    path = write(tmp_path, "id,target\na,0\nb,1.0\nc,1\nd,0\n")
    assert len(read_submission(path, FMT, IDS, metric=get_metric("accuracy"))) == 4
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, FMT, IDS, metric=get_metric("accuracy"), labels={"0", "1"})
    assert exc.value.reason == "unknown_label"


# ------------------------------------------------------------------ messages stay short


def test_long_values_are_cut_in_every_message(tmp_path):
    long = "z" * 100_000
    cases = [
        (f"id,target\na,0.1\nb,{long}\nc,0.35\nd,0.4\n", "not_numeric"),
        (f"id,target\na,0.1\n{long},0.8\nc,0.35\nd,0.4\n", "missing_ids"),
        (f"id,target\na,0.1\nb,0.8\nc,0.35\nd,0.4\n{long},0.5\n", "extra_ids"),
        (f"id,{long}\na,0.1\nb,0.8\nc,0.35\nd,0.4\n", "bad_header"),
    ]
    for text, code in cases:
        with pytest.raises(SubmissionError) as exc:
            score(tmp_path, text)
        assert exc.value.reason == code and len(exc.value.message) <= 400, exc.value.message
        assert "100,000 chars" in exc.value.message or "…" in exc.value.message


# ------------------------------------------------------------------ oversize and extra rows, streamed


def _ids(n):
    return [f"r{i:06d}" for i in range(n)]


def test_reading_stops_once_a_file_has_more_rows_than_expected(tmp_path):
    """Far more rows than expected: the file is rejected for its extra rows without being read
    to the end (its end is not even UTF-8, which a full read would report instead)."""
    ids = _ids(100)
    rows = "".join(f"{i},0.5\n" for i in ids) + "".join(f"x{i},0.5\n" for i in range(1_200_000))
    path = write(tmp_path, "id,target\n" + rows + "tail,\xff\n", "big.csv")
    path.write_bytes(path.read_bytes().replace("\xff".encode(), b"\xff"))
    assert path.stat().st_size > 8 * 1024**2
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, FMT, ids)
    assert exc.value.reason == "extra_ids"
    assert "more than the 100 rows expected" in exc.value.message and "row 101" in exc.value.message
    # Repeated ids are named as such.
    path.write_bytes(b"id,target\n" + "".join(f"{ids[i % 100]},0.5\n" for i in range(600_000)).encode() + b"\xff\n")
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, FMT, ids)
    assert exc.value.reason == "duplicate_ids" and "row 101 repeats id 'r000000'" in exc.value.message


def test_streaming_handles_quoted_newlines_and_trailing_blank_lines(tmp_path):
    ids = [f"id\n{i}" for i in range(60)]
    quoted = "".join(f'"id\n{i}","{"a " * 3 + chr(10) * 100_000}"\n' for i in range(60))
    fmt = SubmissionFormat("id", ["id", "target"])
    path = write(tmp_path, "id,target\n" + quoted, "quoted.csv")  # 6 MB of newlines, all inside quotes
    assert path.stat().st_size > 5 * 1024**2
    assert read_submission(path, fmt, ids)["id"].tolist() == ids
    extra = "".join(f'"x\n{i}",1\n' for i in range(400_000))
    path = write(tmp_path, "id,target\n" + quoted + extra + "\xff", "quoted_extra.csv")
    path.write_bytes(path.read_bytes().replace("\xff".encode(), b"\xff"))
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, fmt, ids)
    assert exc.value.reason == "extra_ids" and "more than the 60 rows expected" in exc.value.message
    blank_tail = write(tmp_path, GOOD + "\n" * 9_000_000, "blank_tail.csv")
    assert len(read_submission(blank_tail, FMT, IDS)) == 4
    blank_middle = write(tmp_path, GOOD + "\n\n" + "e,0.5\n" * 1_000_000, "blank_middle.csv")
    assert reason(tmp_path, blank_middle.read_text()) == "bad_row"


def test_the_size_cap_comes_from_the_config(tmp_path):
    cfg = load_config(None, ["scorer.max_submission_mb=1"])
    assert load_config().scorer.max_submission_bytes == 512 * 1024**2
    fmt = SubmissionFormat("id", ["id", "target"], max_bytes=cfg.scorer.max_submission_bytes)
    path = write(tmp_path, "id,target\n" + "a,0.1\n" * 200_000)
    with pytest.raises(SubmissionError) as exc:
        read_submission(path, fmt, IDS)
    assert exc.value.reason == "too_large" and "1,048,576" in exc.value.message
