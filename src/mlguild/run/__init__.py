"""A run, from its folder to its last node: the run folder and its journal, the replayed state,
the session that holds a run's services, the loop and the one function that runs a node."""
