"""The command-line interface: a typer app, one file per command group."""
