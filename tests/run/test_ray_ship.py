"""What travels to a Ray node and back (mlguild.run.ray_ship), without Ray: the packing of a
folder, the refusals that keep a node's files and a script's outputs inside their folders,
and the driver's paths made the node's."""

from __future__ import annotations

import os

import pytest

from mlguild.run.ray_ship import _moved, digest, node_files, pack, unpack, write_back


def test_a_folder_travels_whole_with_its_links_left_out(tmp_path):
    src = tmp_path / "src"
    (src / "parents" / "n0001").mkdir(parents=True)
    (src / "solution.py").write_text("print(1)\n")
    (src / "parents" / "n0001" / "oof.csv").write_text("id,y\n1,0.5\n")
    (tmp_path / "secret.csv").write_text("labels")
    (src / "link.csv").symlink_to(tmp_path / "secret.csv")
    (src / "parents" / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    files = pack(src)
    assert set(files) == {"solution.py", "parents/n0001/oof.csv"}
    dest = tmp_path / "dest"
    unpack(files, dest)
    assert (dest / "parents" / "n0001" / "oof.csv").read_text() == "id,y\n1,0.5\n"
    assert pack(dest) == files and digest(pack(dest)) == digest(files)
    (dest / "solution.py").write_text("print(2)\n")
    assert digest(pack(dest)) != digest(files)


@pytest.mark.parametrize("rel", ["../escape.csv", "/etc/passwd", "a/../../b", ""])
def test_a_path_that_leaves_the_folder_is_refused(tmp_path, rel):
    with pytest.raises(ValueError, match="leaves its folder"):
        unpack({rel: b"x"}, tmp_path / "dest")
    assert not (tmp_path / "escape.csv").exists()


def test_a_node_sends_its_files_not_its_old_outputs_and_gets_the_new_ones_back(tmp_path):
    node = tmp_path / "n0003"
    (node / "output").mkdir(parents=True)
    (node / "solution.py").write_text("code")
    (node / "output" / "holdout.csv").write_text("stale")
    (node / "stdout.txt").write_text("old stdout")
    assert set(node_files(node)) == {"solution.py"}
    write_back(
        node, {"holdout.csv": b"new", "model/weights.bin": b"w"}, node / "stdout.txt", node / "stderr.txt", (b"o", b"e")
    )
    assert (node / "output" / "holdout.csv").read_text() == "new"
    assert (node / "output" / "model" / "weights.bin").read_bytes() == b"w"
    assert (node / "stdout.txt").read_text() == "o" and (node / "stderr.txt").read_text() == "e"
    write_back(node, {}, node / "stdout.txt", node / "stderr.txt", (b"", b""))
    assert not (node / "output").exists()  # the script wrote nothing: nothing left to score


def test_the_drivers_folders_are_named_by_their_copies_on_the_node():
    moved = {"/runs/r1/nodes/n0001": "/scratch/nodes/node-x", "/runs/r1/embeddings": "/scratch/inputs/abc"}
    assert _moved("/runs/r1/nodes/n0001", moved) == "/scratch/nodes/node-x"
    assert _moved("/runs/r1/embeddings/a.npy", moved) == "/scratch/inputs/abc/a.npy"
    assert _moved("/runs/r1/nodes/n00010", moved) == "/runs/r1/nodes/n00010"  # another folder
    assert _moved(os.defpath, moved) == os.defpath


def test_a_shipped_scripts_clock_starts_on_the_node_after_the_shipping(tmp_path, monkeypatch):
    # The driver's launch time, shipped with the env, would count the shipping (and the other
    # host's clock) against the script's limit: the node sets MLGUILD_STARTED_AT when it launches.
    import sys
    import time

    from mlguild.core.execution import Limits
    from mlguild.run.ray_ship import run_shipped
    from mlguild.sandbox import get_sandbox

    monkeypatch.setattr("mlguild.run.ray_ship.where", lambda: "this host")  # no Ray: the rest is what a node does
    code = b"import os, time\nprint(os.environ['MLGUILD_STARTED_AT'], time.time())\n"
    env = {"PATH": os.environ.get("PATH", ""), "MLGUILD_STARTED_AT": "1.000"}
    paths = {"cwd": str(tmp_path / "driver" / "n0001"), "python": sys.executable}
    before = time.time()
    result, _, stdout, _ = run_shipped(
        get_sandbox("local"),
        [sys.executable, "solution.py"],
        env,
        Limits(timeout_s=30),
        {"solution.py": code},
        {},
        paths,
    )
    assert result.exit_code == 0, result
    started, seen = (float(v) for v in stdout.decode().split())
    assert before <= started <= seen
