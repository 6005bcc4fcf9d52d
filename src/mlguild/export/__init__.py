"""Taking a run's result away: ``export`` writes the final solution as a folder a person can
hand over (``bundle``), ``predict`` applies it to new rows in the sandbox (``predict``)."""
