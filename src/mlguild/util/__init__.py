"""Small helpers with no knowledge of mlguild: safe file writes and reads, SQLite set-up."""
