"""Views of a run: the dashboard (server), the report and the live terminal view, all read-only."""
