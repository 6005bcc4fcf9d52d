"""The workers on a local Ray instance (mlguild.run.ray_workers): the same workers, their scripts
run as Ray tasks in Ray's worker processes; a Ray worker killed mid-script fails that node
only. Runs when the [ray] extra is installed (./scripts/test installs it). The Ray run itself
is in a driver process of its own (tests/run/ray_driver.py)."""

from __future__ import annotations

import pytest
from ray_driver import drive

from mlguild.core.vocabulary import FailureKind

ray = pytest.importorskip("ray")

from mlguild.run.ray_workers import connect  # noqa: E402  (after the skip: needs ray)

pytestmark = pytest.mark.xdist_group("ray")  # one Ray on the machine at a time: the cluster's tests too


def test_an_unreachable_cluster_is_a_clear_error():
    from mlguild.core.errors import ConfigError

    with pytest.raises(ConfigError, match="cannot join the Ray cluster"):
        connect("127.0.0.1:1")
    assert not ray.is_initialized()


def test_workers_run_their_scripts_on_ray_and_a_killed_ray_worker_fails_only_its_node(tmp_path):
    said = drive("local_kill", folder=str(tmp_path), iterations=6)
    assert "Ray cluster with" in said["connected"]
    assert said["finished"] and said["killed_at"], "no Ray worker was running a script"
    nodes = said["nodes"]
    assert len(nodes) == 6
    failed = [n for n in nodes if not n["ok"]]
    assert len(failed) == 1 and failed[0]["status"] == FailureKind.WORKER_LOST, nodes
    assert "the Ray worker running the script was lost" in failed[0]["failure"]
    # The inner sandbox ran each script on a Ray worker; the killed one is Ray's failure.
    layers = {r["layer"] for r in said["runs_on"] if r.get("layer")}
    assert layers == {said["inner_layer"], f"ray+{said['inner_layer']}"}, layers
