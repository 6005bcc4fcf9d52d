"""The sealed judge: strict submission reading, validation and scoring against sealed labels,
result flags, and the floors a run must beat. Runs outside the sandbox."""
