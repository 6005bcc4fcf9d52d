"""A run folder and what is written in it: the folder itself (``folder``), the append-only
journal (``journal``) and the record every event writes (``records``), the state replayed
from it (``replay``), ``results.tsv`` (``results``), a user's interventions (``interventions``)
and a full disk as one resumable error (``disk_full``).

Every layer may read a run folder, so nothing here imports the search (``mlguild.run``), the
final stage or the views.
"""
