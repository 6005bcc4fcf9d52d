"""The workers on a real two-node Ray cluster (tests/run/ray_cluster.py: two `ray start`
processes on this machine, each with its own temp dir), with no shared disk: scripts run on
both nodes from copies the object store carried, the sealed labels never reach a node, and a
node killed mid-run fails only the scripts it ran, the run finishing on the other. Each run's
driver is a process of its own (tests/run/ray_driver.py).

How "no shared disk" is proved: every Python process of both Ray nodes refuses (an audit
hook) to open, list, enter or start a process in any path under the driver's folder, where
the runs are, and logs each refusal; the tests assert the log is empty once the runs are
over, after a Ray task on the worker node showed that the refusal works. The scripts say
where they ran: in the scratch folders under each node's temp dir, never in the run folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from ray_driver import drive

from mlguild.core.vocabulary import FailureKind

pytest.importorskip("ray")

from ray_cluster import node_pids, start_cluster, stop_cluster

# One Ray on the machine at a time: with the local instance's tests, on one xdist worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("driver"))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def _drive(scenario: str, cluster, **args) -> dict:
    said = drive(scenario, cluster_auth=True, address=cluster.address, **args)
    for name, node_id in said.get("cluster", {}).items():
        cluster.nodes[name].node_id = node_id
    return said


def _hashes(root: Path) -> dict[str, Path]:
    return {
        hashlib.sha256(p.read_bytes()).hexdigest(): p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
    }


def _ran_on(said: dict, cluster) -> list[str]:
    """The cluster node that ran each finished script, in the order they finished."""
    return [
        next((name for name, node in cluster.nodes.items() if node.node_id and node.node_id in r.get("host", "")), "?")
        for r in said["runs_on"]
    ]


def test_the_refusal_works_on_the_worker_node(cluster):
    """The control of the proof: a Ray process of the worker node cannot read the driver's folder."""
    probe = cluster.forbidden / "probe.txt"
    probe.write_text("driver only")
    said = _drive("refusal", cluster, probe=str(probe))
    assert said["read"].startswith("refused: no shared disk"), said["read"]
    assert cluster.refused() and "probe.txt" in cluster.refused()[-1]
    cluster.refused_log.unlink()


def test_a_search_runs_on_the_worker_node_without_a_shared_disk(cluster):
    said = _drive("search_on_worker_node", cluster, folder=str(cluster.forbidden / "both"), iterations=4)
    assert said["finished"]
    nodes = said["nodes"]
    assert len(nodes) == 4 and all(n["ok"] for n in nodes), nodes
    # The head's one CPU was held: every script ran on the worker node.
    assert _ran_on(said, cluster) == ["w2"] * 4, said["runs_on"]
    assert cluster.refused() == [], "a Ray process reached for the run folder"
    # Each script ran in its node's scratch folder, on the data copied there.
    w2_temp = str(cluster.nodes["w2"].temp_dir)
    for node_dir in said["node_dirs"].values():
        where = [line.split()[1:] for line in (Path(node_dir) / "stdout.txt").read_text().splitlines()]
        cwd, data = next(w for w in where if len(w) == 2)
        # (the namespace layer mounts the data, here the node's copy, at /data)
        assert cwd.startswith(w2_temp) and (data == "/data" or data.startswith(w2_temp)), (cwd, data)
        assert said["run"] not in cwd + data
    # The public data reached the worker node; no sealed file did, under any name.
    w2_files = _hashes(cluster.nodes["w2"].temp_dir)
    assert hashlib.sha256(Path(said["train"]).read_bytes()).hexdigest() in w2_files
    sealed = _hashes(Path(said["run"]) / "sealed")
    assert sealed, "the run has sealed files"
    for node in cluster.nodes.values():
        leaked = set(sealed) & set(_hashes(node.temp_dir))
        assert not leaked, [str(sealed[h]) for h in leaked]


def test_a_killed_worker_node_fails_only_its_nodes_and_the_run_finishes(cluster):
    w2 = cluster.nodes["w2"]
    folder = str(cluster.forbidden / "killed")
    said = _drive("kill_worker_node", cluster, folder=folder, iterations=6, pgid=w2.process.pid, mark=w2.mark)
    assert said["killed_at"], "no script ran on the worker node"
    w2.process.wait(timeout=30)  # the driver killed it; reaped here, its child
    assert said["finished"] and said["w2_left"] == [] and node_pids(w2) == []
    nodes = said["nodes"]
    assert len(nodes) == 6
    failed = [n for n in nodes if not n["ok"]]
    assert failed and all(n["status"] == FailureKind.WORKER_LOST for n in failed), nodes
    assert all("the Ray worker running the script was lost" in n["failure"] for n in failed)
    assert len(failed) <= 2  # the script it ran, and at most one sent to it before it was known dead
    # Every script that finished after the kill ran on the head.
    ran = list(zip(said["runs_on"], _ran_on(said, cluster)))
    after = [name for r, name in ran[said["killed_at"][0] :] if r.get("host")]
    assert after and set(after) == {"head"}, said["runs_on"]
    assert cluster.refused() == []
