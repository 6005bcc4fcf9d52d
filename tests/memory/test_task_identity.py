"""A task's identity is its data: two different tasks in folders of the same name share no
earlier runs, and the same data under another folder name still does (task/identity)."""

from __future__ import annotations

import shutil

from conftest import GOOD, make_task, scripted_agent

from mlguild.config import mlguild_home
from mlguild.core.protocols import Action
from mlguild.core.vocabulary import Op
from mlguild.memory import MemoryStore
from mlguild.pools.guild import earlier_records


def _one_run(task, tmp_path):
    agent, run = scripted_agent(task, tmp_path, [GOOD])
    assert agent.step(Action(Op.DRAFT), 60).ok
    agent.session.close()
    return run


def test_same_named_folders_with_different_data_share_no_memory(tmp_path):
    first = _one_run(make_task(tmp_path / "a" / "task", seed=1), tmp_path / "a")
    other = make_task(tmp_path / "b" / "task", seed=2)  # another task, in a folder of the same name
    second = _one_run(other, tmp_path / "b")
    store = MemoryStore(mlguild_home() / "memory.sqlite")
    assert first.spec.name == second.spec.name == "task" and first.task_key != second.task_key
    assert earlier_records(store, second.task_key, second.path.name) == []  # nothing of the first
    shutil.copytree(tmp_path / "a" / "task", tmp_path / "c" / "renamed")  # the first's data, renamed
    yaml = tmp_path / "c" / "renamed" / "task.yaml"
    yaml.write_text(yaml.read_text().replace("name: task", "name: renamed"))
    third = _one_run(tmp_path / "c" / "renamed", tmp_path / "c")
    assert third.spec.name == "renamed"
    found = earlier_records(store, third.task_key, third.path.name)
    assert {e.run for e in found} == {first.path.name}
