"""Benchmarking on task suites: the suite runner, offline MLE-bench grading and medals."""
