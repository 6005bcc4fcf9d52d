"""The ``mlguild`` command."""

from __future__ import annotations

import signal

import click
import typer
import typer.core

from .. import __version__
from .bench_cmd import bench
from .config_cmd import config
from .export_cmd import export, predict
from .grade_cmd import grade
from .inspect_cmd import show, status
from .knowledge_cmd import knowledge_app
from .memory_cmd import memory_app
from .run_cmd import resume, run
from .task_cmd import examples, init
from .view_cmd import report, serve

app = typer.Typer(
    name="mlguild",
    help="An autonomous ML engineer: improves a solution unattended, scored on labels it keeps sealed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _plain_types() -> None:
    """Option help without typer's type noise: a flag takes no value, so it shows none (not
    ``<bool>``), and a repeatable option shows its element (``<str>``, not ``<list[str]>``)."""
    option = getattr(typer.core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if option is None or shown is None:  # an older typer prints click's plain TEXT/INTEGER
        return

    def display_type_rich(self: typer.core.TyperOption, ctx: click.Context) -> str | None:
        if self.is_flag and self.metavar is None:
            return None
        label = shown(self, ctx)
        return label.replace("<list[", "<").replace("]>", ">") if isinstance(label, str) else label

    option.display_type_rich = display_type_rich


_plain_types()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mlguild {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version of mlguild and exit."
    ),
) -> None:
    """An autonomous ML engineer: improves a solution unattended, scored on labels it keeps sealed."""


app.command()(init)
app.command()(examples)
app.command()(run)
app.command()(resume)
app.command()(status)
app.command()(show)
app.command()(config)
app.command()(grade)
app.command()(export)
app.command()(predict)
app.command()(bench)
app.command()(serve)
app.command()(report)
app.add_typer(memory_app, name="memory")
app.add_typer(knowledge_app, name="knowledge")


def main() -> None:
    _hear_ctrl_c()
    app()


def _hear_ctrl_c() -> None:
    """Ctrl-C stops a run cleanly (exit 130, the resume command printed), however mlguild was
    started: a launcher can hand SIGINT down ignored or blocked (both survive exec; a shell
    does it to background jobs), and Python then never raises KeyboardInterrupt."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)


if __name__ == "__main__":
    main()
