"""mlguild: an autonomous machine-learning engineer.

The core concepts are small Protocols in ``mlguild.core.protocols``; implementations are picked
by name from small tables, and heavy providers are imported lazily so that
``import mlguild`` stays fast.
"""

__version__ = "0.1.0"
