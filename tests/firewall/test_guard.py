from pathlib import Path

from mlguild.firewall.guard import check_code

RUN = Path("/runs/r1")
NODE = RUN / "nodes" / "n0001"
FORBIDDEN = [RUN / "sealed", RUN / "journal.jsonl"]


def verdict(code):
    return check_code(code, NODE, FORBIDDEN)


def test_clean_script_passes():
    code = (
        'import os\nsplits = {"test": (1, 2)}\nopen(os.environ["MLGUILD_DATA"] + "/test.csv")\nprint("sealed deal")\n'
    )
    assert verdict(code).ok  # a name like "test" or the word "sealed" is not a capability


def test_syntax_error_is_named_with_line():
    v = verdict("x = (1,\nprint(x)\n")
    assert not v.ok and v.kind == "syntax_error" and "line" in v.reason


def test_paths_into_sealed_data_are_rejected():
    for path in [
        "/runs/r1/sealed/holdout_answers.csv",
        "../../sealed/holdout_answers.csv",
        "../../sealed",
        "../../journal.jsonl",
        "/runs/r1/nodes/../sealed/x",
    ]:
        v = verdict(f"open({path!r}).read()\n")
        assert not v.ok and v.kind == "guard_rejected" and "MLGUILD_DATA" in v.reason, path


def test_neighbouring_paths_are_allowed():
    assert verdict("open('/runs/r1/sealed_notes_elsewhere.txt')\nopen('output/holdout.csv', 'w')\n").ok


DATA = RUN / "workspace" / "data"


def test_built_paths_into_sealed_data_are_rejected():
    attacks = [
        'import os\nopen(os.path.join(os.environ["MLGUILD_DATA"], "..", "..", "sealed", "holdout_answers.csv"))\n',
        'from pathlib import Path\nimport os\nD = Path(os.environ["MLGUILD_DATA"])\nopen(D / ".." / ".." / "sealed" / "x.csv")\n',
        'import os\nopen(os.environ["MLGUILD_DATA"] + "/../../journal.jsonl")\n',
        'import os\nd = os.environ["MLGUILD_DATA"]\nopen(f"{d}/../../sealed/holdout_answers.csv")\n',
        'from pathlib import Path\nopen(Path("..") / ".." / "sealed")\n',
    ]
    for code in attacks:
        v = check_code(code, NODE, FORBIDDEN, data_dir=DATA)
        assert not v.ok and v.kind == "guard_rejected", code


def test_honest_path_building_passes():
    code = (
        'import os\nfrom pathlib import Path\nD = Path(os.environ["MLGUILD_DATA"])\n'
        'train = D / "train.csv"\nout = os.path.join("output", "holdout.csv")\n'
        'name = "sealed"\nmodels = {"test": 1, "sealed": 2}\nprint(f"{D}/train.csv")\n'
    )
    assert check_code(code, NODE, FORBIDDEN, data_dir=DATA).ok


def _script(i: int) -> str:
    """A script deep enough to keep the parser busy, reading a sealed path every third time."""
    nested = "(" * 60 + str(i) + ")" * 60
    body = "\n".join(f"def f{j}(x):\n    return [{nested} for _ in range(x)]" for j in range(20))
    bad = 'open("/runs/r1/sealed/answers.csv")\n' if i % 3 == 0 else ""
    return f"import os\n{body}\n{bad}print(f0(2))\n"


def test_many_scripts_guarded_from_several_threads_at_once_get_the_verdicts_of_one_thread():
    """CPython 3.11's parser is not thread-safe (issue 25: `AST constructor recursion depth
    mismatch` from two workers guarding at once): every parse is serialised."""
    from concurrent.futures import ThreadPoolExecutor

    scripts = [_script(i) for i in range(160)]
    alone = [verdict(code) for code in scripts]
    assert [v.ok for v in alone] == [i % 3 != 0 for i in range(160)]
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=8) as pool:
            together = list(pool.map(verdict, scripts))
        assert together == alone


def test_a_guard_waits_while_another_thread_parses():
    import threading

    from mlguild.util import pysource

    done = threading.Event()
    with pysource._LOCK:  # as if another worker's script were being parsed
        worker = threading.Thread(target=lambda: (verdict("x = 1\n"), done.set()))
        worker.start()
        assert not done.wait(0.3)  # the guard's parse waits for the lock
    assert done.wait(10)
    worker.join()
