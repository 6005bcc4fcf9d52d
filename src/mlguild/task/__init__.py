"""A task: its folder and task.yaml, the data profile, column kinds and parsers, community
knowledge, and the brief a run writes from them."""
