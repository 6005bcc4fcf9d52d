"""A run's search: the session that holds a run's services, the budget, the context of a
node, the loop and the one function that runs a node (``node``), the workers, refits and
the baseline ladder's reference models.

The run folder and its journal are ``mlguild.rundir`` (a layer below, which everything may
read); the library's entry point, ``mlguild.launch.start`` and ``resume``, is the layer
above that wires a run together.
"""
