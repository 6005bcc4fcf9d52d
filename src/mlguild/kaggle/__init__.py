"""Kaggle: the API client mlguild talks to, and the submitter of a run's results."""
