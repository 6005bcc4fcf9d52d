"""The documentation's references, generated from the code so they cannot drift: every
command and option of the ``mlguild`` command (from the typer app) and every configuration
setting (from the pydantic sections). The docs site's build hook (``docs/hooks/reference.py``)
puts them into ``docs/reference/cli.md`` and ``docs/reference/config.md``."""

from __future__ import annotations

from typing import Any

import typer

from ..config import settings

# Typer builds click objects of its own vendored click: they are read by their attributes
# (a group has ``commands``; a parameter says ``param_type_name``), not by click's classes.
Command = Any
Parameter = Any


def _command_tree() -> Command:
    from .app import app

    return typer.main.get_command(app)


def commands() -> list[tuple[str, Command]]:
    """(full name, command) for every command, group members under their group's name."""
    found: list[tuple[str, Command]] = []

    def walk(group: Command, prefix: str) -> None:
        for name in sorted(group.commands):
            command = group.commands[name]
            if command.hidden:
                continue
            full = f"{prefix} {name}".strip()
            if hasattr(command, "commands"):
                walk(command, full)
            else:
                found.append((full, command))

    walk(_command_tree(), "")
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option_names(param: Parameter) -> str:
    names = [*param.opts, *getattr(param, "secondary_opts", [])]
    return ", ".join(f"`{n}`" for n in names)


def _default(param: Parameter) -> str:
    if param.required:
        return "required"
    default = param.default
    if default is None or default == () or default == []:
        return ""
    if getattr(param, "is_flag", False):
        return "on" if default else "off"
    return f"`{default}`"


def cli_reference() -> str:
    """Markdown: each command, its arguments and its options with their defaults and help."""
    out = [
        "Every command of `mlguild`, generated from the command itself (`mlguild COMMAND --help` says the same).",
        "",
    ]
    for name, command in commands():
        out += [f"## `mlguild {name}`", ""]
        help_text = (command.help or "").strip()
        if help_text:
            out += [help_text.split("\n\n")[0].replace("\n", " "), ""]
            rest = "\n\n".join(help_text.split("\n\n")[1:]).strip()
            if rest:
                out += [" ".join(rest.split()), ""]
        arguments = [p for p in command.params if p.param_type_name == "argument"]
        options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
        usage = " ".join((a.metavar or a.name.upper()) for a in arguments)
        out[-2:-2] = [f"`mlguild {name} {usage}{' [OPTIONS]' if options else ''}`".replace("  ", " "), ""]
        if arguments:
            out += ["| argument | what it is |", "|---|---|"]
            for argument in arguments:
                out.append(
                    f"| `{argument.metavar or argument.name.upper()}` | {_cell(getattr(argument, 'help', '') or '')} |"
                )
            out.append("")
        if options:
            out += ["| option | default | what it does |", "|---|---|---|"]
            for option in options:
                out.append(f"| {_option_names(option)} | {_default(option)} | {_cell(option.help or '')} |")
            out.append("")
    return "\n".join(out)


def config_reference() -> str:
    """Markdown: every setting, section by section, with its default and meaning."""
    out = [
        "Every setting a run takes, generated from the configuration's own definitions (`mlguild config` "
        "prints the same). Set one with `--set section.field=value`, or many in a YAML file given "
        "with `--config file.yaml`.",
        "",
    ]
    section = None
    for name, default, description in settings():
        top = name.split(".")[0]
        if top != section:
            section = top
            out += [f"## `{section}`", "", "| setting | default | what it does |", "|---|---|---|"]
        out.append(f"| `{name}` | `{default}` | {_cell(description)} |")
    # every section's table ends before the next heading
    return "\n".join(out).replace("|\n## ", "|\n\n## ") + "\n"
