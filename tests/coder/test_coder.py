"""The coder: extraction, truncation and continuation, SEARCH/REPLACE edits, stepwise
assembly, and failure messages, driven by recorded replies in tests/fixtures/replies."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlguild.coder import (
    MAX_CONTINUATIONS,
    MESSAGE_LIMIT,
    STEP_ORDER,
    Edit,
    apply_edits,
    assemble_parts,
    continue_prompt,
    diff_retry_prompt,
    extract_code,
    failure_from_node,
    join_continuation,
    parse_edits,
    should_fallback_to_rewrite,
)
from mlguild.core.vocabulary import FAILURES

REPLIES = Path(__file__).parents[1] / "fixtures" / "replies"


def reply(name: str) -> str:
    return (REPLIES / name).read_text()


@pytest.fixture(scope="module")
def base() -> str:
    return (REPLIES / "base_solution.txt").read_text()


def compiles(code: str) -> bool:
    try:
        compile(code, "solution.py", "exec")
    except SyntaxError:
        return False
    return True


# --- extraction ------------------------------------------------------------------------


def test_full_script_reply_gives_code_and_plan(base):
    got = extract_code(reply("full_script.md"), finish_reason="stop")
    assert got.ok and got.failure is None
    assert got.code == base
    assert got.plan.startswith("I'll start with a solid gradient-boosting baseline")
    assert "Early stopping (100 rounds)" in got.plan  # prose after the code belongs to the plan
    assert "```" not in got.plan and "import lightgbm" not in got.plan


def test_two_blocks_takes_the_python_script_not_the_shell_snippet(base):
    got = extract_code(reply("two_blocks.md"))
    assert got.code == base
    assert "pip install lightgbm scikit-learn" in got.plan  # the other block stays in the plan


def test_largest_python_block_wins_over_a_small_python_snippet(base):
    text = "Change one line:\n```python\nparams['num_leaves'] = 63\n```\n\nFull script:\n```python\n" + base + "```\n"
    assert extract_code(text).code == base


def test_py_label_and_unlabelled_python_fences_are_accepted(base):
    assert extract_code("Script:\n```py\n" + base + "```").code == base
    assert extract_code("Script:\n```\n" + base + "```\n").code == base
    assert extract_code("```Python title=solution.py\n" + base + "```").code == base


def test_unlabelled_block_of_program_output_is_not_code():
    got = extract_code("It printed:\n```\nfold 0: auc 0.8412\ncv_score: 0.84\n```\nLooks good.")
    assert got.failure.kind == "no_code"


def test_bare_code_reply_is_accepted(base):
    got = extract_code(reply("bare_code.txt"), finish_reason="stop")
    assert got.code == base and got.plan == ""


def test_bare_code_after_a_line_of_prose_keeps_the_prose_as_plan(base):
    got = extract_code("Here is the solution using LightGBM.\n\n" + base + "\nThis should score well.\n")
    assert got.code == base
    assert got.plan == "Here is the solution using LightGBM.\n\nThis should score well."


def test_prose_only_refusal_is_no_code():
    got = extract_code(reply("refusal.md"), finish_reason="stop")
    assert got.code is None and got.failure.kind == "no_code"
    assert "```python" in got.failure.message
    assert got.plan.startswith("I'd be happy to help")


def test_prose_cut_by_the_length_limit_before_any_code_is_no_code_with_a_reason():
    got = extract_code("Let me think about the features first. The tenure column", finish_reason="length")
    assert got.failure.kind == "no_code" and "output limit" in got.failure.message


def test_single_word_or_json_reply_is_not_code():
    assert extract_code("Done").failure.kind == "no_code"
    assert extract_code('```json\n{"lr": 0.1}\n```').failure.kind == "no_code"


def test_only_a_shell_block_names_its_language():
    got = extract_code("Run:\n```bash\npython solution.py --folds 5\n```")
    assert got.failure.kind == "no_code" and "bash" in got.failure.message


# --- truncation ------------------------------------------------------------------------


@pytest.mark.parametrize("finish_reason", [None, "unknown", "length", "max_tokens", "FinishReason.MAX_TOKENS"])
def test_reply_cut_off_mid_script_is_truncated_not_syntax_error(base, finish_reason):
    got = extract_code(reply("truncated.md"), finish_reason=finish_reason)
    assert got.code is None
    assert got.failure.kind == "truncated"
    assert got.partial == got.failure.detail
    assert base.startswith(got.partial)  # every line written so far is kept
    assert got.partial.endswith("holdout_pred += model.predict_proba(holdout[feat")
    assert "holdout[feat" in got.failure.message and "do not start over" in got.failure.message
    assert got.plan.startswith("I'll build a LightGBM baseline")


def test_unclosed_fence_that_compiles_is_truncated_unless_the_model_stopped_itself(base):
    cut_at_line = base[: base.index("os.makedirs")]  # a cut on a line boundary compiles
    text = "```python\n" + cut_at_line
    assert compiles(cut_at_line)
    assert extract_code(text).failure.kind == "truncated"
    assert extract_code(text, finish_reason="length").failure.kind == "truncated"
    # Some providers strip the closing fence when it is a stop sequence: then it is complete.
    assert extract_code("```python\n" + base, finish_reason="stop").code == base


def test_closed_fence_that_does_not_compile_is_truncated_only_with_a_length_stop(base):
    broken = base[: base.index("    )\n    oof[va]")]  # ends inside model.fit(
    text = "```python\n" + broken + "```\n"
    assert extract_code(text, finish_reason="length").failure.kind == "truncated"
    plain = extract_code(text, finish_reason="stop")
    assert plain.failure is None and plain.code.startswith('"""LightGBM')  # a syntax error: the guard names it


def test_length_stop_in_the_prose_after_a_closed_block_keeps_the_code(base):
    text = "```python\n" + base + "```\n\nNotes: the early stopping patience of 100 rounds was chos"
    assert extract_code(text, finish_reason="length").code == base


def test_bare_code_with_a_length_stop_is_truncated(base):
    got = extract_code(base[:2000], finish_reason="length")
    assert got.failure.kind == "truncated" and got.partial == base[:2000].strip("\n")


def test_reasoning_section_is_ignored(base):
    text = (
        "<think>\nMaybe:\n```python\nimport os\nprint('draft')\n```\nNo, use LightGBM.\n</think>\n```python\n"
        + base
        + "```"
    )
    got = extract_code(text)
    assert got.code == base and "draft" not in got.plan


def test_crlf_reply_gives_lf_code(base):
    got = extract_code(reply("full_script.md").replace("\n", "\r\n"))
    assert got.code == base and "\r" not in got.plan


def test_indented_fence_inside_a_list_is_dedented():
    text = "1. Save this:\n\n   ```python\n   import os\n   print(os.getcwd())\n   ```\n"
    assert extract_code(text).code == "import os\nprint(os.getcwd())\n"


def test_four_backtick_fence_may_contain_triple_backticks():
    code = 'README = """\n```\nusage\n```\n"""\nprint(README)\n'
    assert extract_code("````python\n" + code + "````\n").code == code


def test_edit_blocks_where_a_script_was_asked_for_are_named():
    got = extract_code(reply("diff_clean.md"))
    assert got.failure.kind == "no_code" and "SEARCH/REPLACE" in got.failure.message


# --- continuation ----------------------------------------------------------------------


def test_continue_prompt_shows_the_last_40_lines_and_how_to_resume(base):
    partial = extract_code(reply("truncated.md")).partial
    prompt = continue_prompt(partial)
    tail = partial.split("\n")[-40:]
    assert "\n".join(tail) in prompt
    assert partial.split("\n")[-41] not in prompt.split("```python")[1]
    assert "incomplete" in prompt and "writing that whole line again" in prompt
    complete = continue_prompt(base[: base.index('print(f"cv_score')])
    assert "right after the last line" in complete


def test_continuation_that_repeats_lines_and_reopens_a_fence_joins_cleanly(base):
    partial = extract_code(reply("truncated.md"), finish_reason="length").partial
    got = join_continuation(partial, reply("continuation.md"), finish_reason="stop")
    assert got.ok, got.failure
    assert got.code == base
    assert compiles(got.code)
    assert got.code.count("oof[va] = model.predict_proba(X.iloc[va])[:, 1]") == 1  # the repeated line, once
    assert got.plan.startswith("This completes the script")


def test_continuation_cut_again_is_truncated_and_a_second_round_completes_it(base):
    lines = base.split("\n")
    partial = "\n".join(lines[:40]) + "\n"
    at = lines.index("    learning_rate=0.03,")
    first = "```python\n" + "\n".join(lines[40:at]) + "\n    learning_ra"  # cut again, mid-line
    got = join_continuation(partial, first, finish_reason="length")
    assert got.failure.kind == "truncated"
    assert base.startswith(got.partial)
    rounds = 1
    second = "```python\n" + "\n".join(lines[at:]) + "```\n"  # repeats the cut line in full
    while got.failure is not None and rounds < MAX_CONTINUATIONS:
        got = join_continuation(got.partial, second, finish_reason="stop")
        rounds += 1
    assert got.code == base


def test_raw_continuation_closed_by_a_bare_fence(base):
    cut = base.index('print(f"cv_score')
    text = "Continuing from where I left off:\n" + base[cut:] + "```\n\nThat writes both files."
    got = join_continuation(base[:cut], text)
    assert got.code == base and got.plan == "That writes both files."


def test_continuation_of_a_mid_line_cut_that_writes_only_the_remainder(base):
    cut = base.index("[features])[:, 1] / folds.n_splits\n    test_pred")
    got = join_continuation(base[:cut], "```python\n" + base[cut:] + "```")
    assert got.code == base


def test_continuation_that_restarts_from_the_top_replaces_the_partial(base):
    got = join_continuation(base[:1500], "Here is the full script again:\n```python\n" + base + "```")
    assert got.code == base


def test_placeholder_lines_are_dropped(base):
    cut = base.index("os.makedirs")
    got = join_continuation(base[:cut], "```python\n# ... previous code unchanged ...\n" + base[cut:] + "```")
    assert got.code == base


def test_a_short_repeated_line_is_kept_when_it_is_real_code():
    partial = "x = dict(\n    a=list(\n        range(3)\n    )\n"
    got = join_continuation(partial, "```python\n    )\nprint(x)\n```")
    assert got.code == partial + "    )\nprint(x)\n" and compiles(got.code)


# --- SEARCH/REPLACE edits --------------------------------------------------------------


def test_clean_diff_applies_exactly(base):
    edits = parse_edits(reply("diff_clean.md"))
    assert [e.index for e in edits] == [1, 2] and all(e.complete for e in edits)
    result = apply_edits(base, edits)
    assert result.ok and result.applied == 2 and result.match_kinds == ["exact", "exact"]
    assert "    learning_rate=0.02,\n    num_leaves=63,\n    min_child_samples=40,\n" in result.code
    assert "lgb.early_stopping(200, verbose=False)" in result.code and "num_leaves=31" not in result.code
    assert compiles(result.code) and result.failure() is None


def test_indentation_drift_and_whitespace_differences_apply_tolerantly(base):
    result = apply_edits(base, parse_edits(reply("diff_indent_drift.md")))
    assert result.failures == [] and result.applied == 3
    assert result.match_kinds == ["rstrip", "indent", "spaces"]
    # The loop body was written at column 0; its replacement is re-indented into the loop.
    assert (
        "    fold_pred = model.predict_proba(X.iloc[va])[:, 1]\n    oof[va] = fold_pred\n"
        "    holdout_pred += model.predict_proba(holdout[features])[:, 1] / folds.n_splits\n"
    ) in result.code
    assert "    n_estimators=3000,\n    learning_rate=0.03,\n    reg_alpha=0.1,\n    num_leaves=31," in result.code
    assert compiles(result.code)


def test_a_search_indented_deeper_than_the_code_is_dedented():
    code = "def f():\n    x = 1\n    return x\n"
    edit = Edit("        x = 1\n        return x\n", "        x = 2\n        if x:\n            return x\n", 1)
    result = apply_edits(code, [edit])
    assert result.match_kinds == ["indent"]
    assert result.code == "def f():\n    x = 2\n    if x:\n        return x\n"


def test_missing_search_names_the_block_and_shows_the_closest_region(base):
    result = apply_edits(base, parse_edits(reply("diff_missing.md")))
    assert result.applied == 1 and len(result.failures) == 1  # the good block still applies
    failure = result.failures[0]
    assert failure.index == 1 and failure.reason == "no_match"
    assert failure.first_line == "oof[val_idx] = clf.predict_proba(X.iloc[val_idx])[:, 1]"
    assert "Block 1" in failure.message and "oof[val_idx]" in failure.message
    assert "oof[va] = model.predict_proba(X.iloc[va])[:, 1]" in failure.closest
    assert len(failure.closest.split("\n")) <= 12
    prompt = diff_retry_prompt(result.failures, result.code)
    assert failure.closest in prompt and "do not send them again" in prompt
    assert "73 |" not in prompt  # no line numbers to copy into a SEARCH
    named = result.failure()
    assert named.kind == "diff_mismatch" and "block 1 (no match)" in named.message
    assert len(named.message) <= MESSAGE_LIMIT


def test_ambiguous_search_fails_and_names_every_place(base):
    result = apply_edits(base, parse_edits(reply("diff_ambiguous.md")))
    assert result.applied == 1
    [failure] = result.failures
    assert failure.reason == "ambiguous" and failure.index == 1 and failure.first_line == "df = df.copy()"
    assert "2 places" in failure.message and "lines 25, 31" in failure.message
    assert "df.columns.str.strip()" not in result.code  # nothing was guessed


def test_one_block_per_identical_occurrence_applies_in_order(base):
    edits = [
        Edit("    return df\n", "    return df.reset_index(drop=True)\n", 1),
        Edit("    return df\n", "    return df.fillna(0)\n", 2),
    ]
    result = apply_edits(base, edits)
    assert result.ok
    assert result.code.index("reset_index") < result.code.index("fillna(0)")
    assert "    return df\n" not in result.code


def test_no_similarity_matching_to_a_different_statement(base):
    edits = parse_edits("<<<<<<< SEARCH\n    learning_rate=0.05,\n=======\n    learning_rate=0.01,\n>>>>>>> REPLACE\n")
    result = apply_edits(base, edits)
    assert result.applied == 0 and result.failures[0].reason == "no_match"
    assert "learning_rate=0.03" in result.failures[0].closest


def test_matching_is_by_whole_lines_not_substrings():
    result = apply_edits("max_depth = 10\n", [Edit("x_depth = 1\n", "x_depth = 2\n", 1)])
    assert result.applied == 0 and result.code == "max_depth = 10\n"


def test_crlf_diff_parses_and_applies(base):
    raw = (REPLIES / "crlf_diff.md").read_bytes()
    assert b"\r\n" in raw  # the fixture really is CRLF
    edits = parse_edits(raw.decode())
    assert len(edits) == 2 and "\r" not in edits[0].search + edits[0].replace
    result = apply_edits(base.replace("\n", "\r\n"), edits)
    assert result.ok and "\r" not in result.code and "num_leaves=63" in result.code


def test_missing_trailing_newline_and_unfenced_blocks():
    edits = parse_edits("<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE")
    assert edits == [Edit("a = 1\n", "a = 2\n", 1)]
    assert apply_edits("a = 1\nb = a\n", edits).code == "a = 2\nb = a\n"


def test_empty_search_appends_at_the_end():
    result = apply_edits("x = 1\n", parse_edits("<<<<<<< SEARCH\n=======\nprint(x)\n>>>>>>> REPLACE\n"))
    assert result.ok and result.match_kinds == ["append"] and result.code == "x = 1\n\nprint(x)\n"


def test_block_cut_before_its_replace_marker_is_incomplete(base):
    text = reply("diff_clean.md")
    cut = text[: text.rindex("lgb.early_stopping(200")]
    edits = parse_edits(cut)
    assert [e.complete for e in edits] == [True, False]
    result = apply_edits(base, edits)
    assert result.applied == 1 and result.failures[0].reason == "incomplete"
    assert "early_stopping(100" in result.code  # the cut block is never applied


def test_fallback_to_rewrite_policy():
    result = apply_edits("a = 1\n", parse_edits(reply("diff_missing.md")))
    assert result.total == 2 and len(result.failures) == 2
    assert should_fallback_to_rewrite(1, result.failures, blocks=result.total)  # every block failed
    one = result.failures[:1]
    assert not should_fallback_to_rewrite(1, one, blocks=3)
    assert not should_fallback_to_rewrite(2, one, blocks=3)
    assert should_fallback_to_rewrite(3, one, blocks=3)  # after two failed re-prompts
    assert not should_fallback_to_rewrite(1, one, blocks=1)  # one block: re-prompt first
    assert not should_fallback_to_rewrite(5, [], blocks=3)


# --- stepwise assembly -----------------------------------------------------------------


def test_assemble_parts_orders_sections_and_hoists_imports():
    parts = {
        "train": (
            "import numpy as np\nfrom sklearn.linear_model import (\n    LogisticRegression,\n)\n\n"
            "model = LogisticRegression().fit(X, y)\n"
        ),
        "data": (
            "from __future__ import annotations\nimport numpy as np\nimport pandas as pd\n\n"
            "X = np.zeros((4, 2))\ny = np.array([0, 1, 0, 1])\n"
        ),
        "predict": (
            "import numpy as np\ntry:\n    import lightgbm\nexcept ImportError:\n    lightgbm = None\n"
            "pred = model.predict_proba(X)[:, 1]\n"
        ),
        "features": "",
    }
    script = assemble_parts(parts)
    assert compiles(script)
    head = script.split("# ====")[0]
    assert head == (
        "from __future__ import annotations\nimport numpy as np\nimport pandas as pd\n"
        "from sklearn.linear_model import LogisticRegression\n\n"
    )
    assert script.count("import numpy as np") == 1
    order = [script.index(f" {name} ") for name in ("data", "train", "predict")]
    assert order == sorted(order) and " features " not in script
    assert "try:\n    import lightgbm" in script  # a conditional import stays put
    assert STEP_ORDER == ("data", "features", "model", "train", "predict")


def test_assemble_parts_rejects_an_unknown_part():
    with pytest.raises(ValueError, match="training"):
        assemble_parts({"data": "x = 1\n", "training": "y = 2\n"})


def test_assemble_parts_with_a_broken_part_still_hoists_single_line_imports():
    script = assemble_parts({"data": "import pandas as pd\nx = (\n", "model": "import pandas as pd\ny = 1\n"})
    assert script.startswith("import pandas as pd\n\n") and script.count("import pandas") == 1


# --- failure messages ------------------------------------------------------------------


def test_kinds_are_the_documented_names():
    for kind in (
        "truncated",
        "no_code",
        "diff_mismatch",
        "syntax_error",
        "guard_rejected",
        "timeout",
        "memory",
        "crash",
        "missing_output",
        "invalid_output",
        "brain_error",
    ):
        assert kind in FAILURES


def test_crash_points_at_the_solution_line_and_the_final_exception():
    stderr = reply("traceback_keyerror.txt")
    failure = failure_from_node("crash", "exit code 1\n" + stderr, stderr)
    assert failure.kind == "crash"
    message = failure.message
    assert message.startswith("KeyError: 'TotalCharges'")
    assert "solution.py line 26 (in clean)" in message
    assert 'df["TotalCharges"] = pd.to_numeric(df["TotalCharges"], errors="coerce")' in message
    assert "pandas/core/indexes/base.py:3812 get_loc" in message
    assert "UserWarning" not in message and "index.pyx" not in message and "^^^" not in message
    assert len(message) <= MESSAGE_LIMIT
    assert "direct cause" not in failure.detail and "line 26, in clean" in failure.detail  # the last traceback only


def test_crash_message_from_the_failure_text_when_stderr_is_empty():
    stderr = reply("traceback_keyerror.txt")
    assert "solution.py line 26" in failure_from_node("crash", "exit code 1\n" + stderr, "").message


def test_crash_without_a_traceback_says_how_it_ended():
    failure = failure_from_node(
        "crash", "killed by signal SIGSEGV\n[LightGBM] [Fatal] bad alloc", "[LightGBM] [Fatal] bad alloc"
    )
    assert "SIGSEGV" in failure.message and "no Python traceback" in failure.message and "[Fatal]" in failure.message


def test_crash_with_a_long_multiline_exception_stays_short():
    stderr = (
        'Traceback (most recent call last):\n  File "/n/solution.py", line 9, in <module>\n'
        "    model.fit(X, y)\nValueError: " + "Input contains NaN. " * 80 + "\nsecond line\n"
    )
    failure = failure_from_node("crash", "exit code 1", stderr)
    assert len(failure.message) <= MESSAGE_LIMIT and "solution.py line 9: model.fit(X, y)" in failure.message


def test_crash_in_a_worker_uses_the_last_traceback():
    stderr = (
        'joblib.externals.loky.process_executor._RemoteTraceback: \n"""\nTraceback (most recent call last):\n'
        '  File "/venv/site-packages/joblib/externals/loky/process_executor.py", line 463, in _process_worker\n'
        '    r = call_item()\nValueError: could not convert string to float: \'Male\'\n"""\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "/r/nodes/n3/solution.py", line 58, in <module>\n'
        "    scores = cross_val_score(pipe, X, y, n_jobs=4)\n"
        '  File "/venv/lib/python3.11/site-packages/joblib/parallel.py", line 754, in _return_or_raise\n'
        "    raise self._result\nValueError: could not convert string to float: 'Male'\n"
    )
    message = failure_from_node("crash", "exit code 1", stderr).message
    assert message.startswith("ValueError: could not convert string to float: 'Male'")
    assert "solution.py line 58: scores = cross_val_score(pipe, X, y, n_jobs=4)" in message
    assert "joblib/parallel.py:754" in message


def test_timeout_names_the_limit_and_how_to_fit():
    failure = failure_from_node(
        "timeout", "wall-clock timeout after 600.0 s; killed\n[LightGBM] fold 3", "[LightGBM] fold 3"
    )
    assert failure.kind == "timeout"
    assert "600 s" in failure.message and "subsample" in failure.message and "fewer boosting rounds" in failure.message
    assert "fold 3" in failure.message and len(failure.message) <= MESSAGE_LIMIT


def test_memory_names_the_cap_and_suggests_smaller_types():
    failure = failure_from_node("memory", "process tree used 8300 MiB, over the 8192 MiB cap; killed", "")
    assert "8192 MiB" in failure.message and "float32" in failure.message and "batches" in failure.message
    stderr = (
        'Traceback (most recent call last):\n  File "/n/solution.py", line 12, in <module>\n'
        "    X = pd.get_dummies(train)\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate 9.3 GiB\n"
    )
    located = failure_from_node("memory", "script ran out of memory (MemoryError / ENOMEM)\n" + stderr, stderr)
    assert "solution.py line 12: X = pd.get_dummies(train)" in located.message


def test_syntax_error_gives_line_and_message():
    failure = failure_from_node("syntax_error", "SyntaxError at line 74: '(' was never closed", "")
    assert failure.kind == "syntax_error" and failure.message == "SyntaxError at line 74: '(' was never closed"


def test_output_failures_pass_the_harness_message_through():
    text = "output/submission.csv is invalid (bad_row_count): expected 1409 rows, got 1408 (row 1409 missing)"
    failure = failure_from_node("invalid_output", text, "")
    assert failure.kind == "invalid_output" and failure.message == text
    missing = failure_from_node("missing_output", "the script finished but did not write output/holdout.csv", "")
    assert "output/holdout.csv" in missing.message and "working directory" in missing.message
    guard = failure_from_node("guard_rejected", "line 3: the path '../../sealed/answers.csv' reaches sealed, ...", "")
    assert guard.message.startswith("line 3: the path")


def test_a_scored_node_is_not_a_failure():
    with pytest.raises(ValueError):
        failure_from_node("scored", None, "")


def test_other_statuses_keep_their_name_and_first_line():
    failure = failure_from_node("sandbox_error", "sandbox failed: bwrap: No permission\nlong tail", "")
    assert failure.kind == "sandbox_error" and failure.message == "sandbox failed: bwrap: No permission"
    assert str(failure) == "sandbox_error: sandbox failed: bwrap: No permission"


@pytest.mark.parametrize("text", ["", "```", "```python", "````", "<<<<<<< SEARCH", "\r\n\r\n", "<think>", "~~~\n"])
def test_degenerate_replies_are_named_not_raised(text):
    got = extract_code(text)
    assert got.failure is not None and got.failure.kind in ("no_code", "truncated") and got.code is None


def test_a_continuation_that_refuses_leaves_the_script_truncated(base):
    partial = base[:1200]
    got = join_continuation(partial, "I apologize, but I cannot continue this script.", finish_reason="stop")
    assert got.failure.kind == "truncated" and got.partial == partial


def test_a_continuation_that_only_closes_the_fence_completes_a_whole_script(base):
    assert join_continuation(base, "```", finish_reason="stop").code == base
    assert join_continuation(base, "```\n\nThe script is complete.").plan == "The script is complete."


def test_whitespace_tolerance_never_joins_two_words():
    result = apply_edits("import os\n", [Edit("importos\n", "import sys\n", 1)])
    assert result.applied == 0 and result.failures[0].reason == "no_match"
