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
