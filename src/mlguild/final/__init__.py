"""The end of a run: the final choice (refit or not, blend or single node) and the once-only grade."""
