"""The docs' references cannot drift from the code: every command, option and setting is in
them, and the site builds with ``mkdocs build --strict`` (broken links, missing pages fail)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel

from mlguild.cli.app import app
from mlguild.cli.reference import cli_reference, config_reference
from mlguild.config import Config

ROOT = Path(__file__).resolve().parents[2]


def _leaf_commands(command, prefix=""):
    """Every command of the typer app, walked here on its own (not with the generator's walk)."""
    for name, sub in command.commands.items():
        if sub.hidden:
            continue
        full = f"{prefix} {name}".strip()
        if hasattr(sub, "commands"):
            yield from _leaf_commands(sub, full)
        else:
            yield full, sub


def _fields(model: type[BaseModel], prefix: str = ""):
    for name, info in model.model_fields.items():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            yield from _fields(info.annotation, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_command_and_option_is_in_the_cli_reference():
    text = cli_reference()
    sections = dict(re.findall(r"^## `mlguild ([^`]+)`\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M))
    found = list(_leaf_commands(typer.main.get_command(app)))
    assert {"run", "resume", "export", "predict", "knowledge add", "memory list"} <= {name for name, _ in found}
    for name, command in found:
        assert name in sections, f"mlguild {name} is missing from the CLI reference"
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden:
                for flag in [*param.opts, *param.secondary_opts]:
                    assert f"`{flag}`" in sections[name], f"{flag} of mlguild {name} is missing"
            elif param.param_type_name == "argument":
                assert f"`{param.metavar or param.name.upper()}`" in sections[name]


def test_every_setting_is_in_the_config_reference():
    text = config_reference()
    names = list(_fields(Config))
    assert "firewall.holdout_fraction" in names and len(names) > 50
    for name in names:
        assert f"| `{name}` |" in text, f"setting {name} is missing from the configuration reference"


@pytest.mark.skipif(shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists(),
                    reason="mkdocs is not installed: pip install 'mlguild[docs]'")  # fmt: skip
def test_the_docs_site_builds_strictly_with_the_generated_references(tmp_path):
    mkdocs = shutil.which("mkdocs") or str(Path(sys.executable).parent / "mkdocs")
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "--script-timeout" in cli and "mlguild predict" in cli
    config = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "firewall.holdout_fraction" in config


def test_the_readme_is_a_front_page_whose_links_lead_into_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, "the README is the front page: move reference text into docs/"
    assert "./scripts/demo" in readme and "./scripts/test" in readme and "pip install" in readme
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert "docs/quickstart.md" in links and "docs/reference/cli.md" in links
    for link in links:
        assert (ROOT / link).is_file(), f"the README links to {link}, which does not exist"
    nav = (ROOT / "mkdocs.yml").read_text()
    for link in links:
        if link.startswith("docs/"):
            assert link.removeprefix("docs/") in nav, f"{link} is linked from the README but not in mkdocs.yml's nav"
