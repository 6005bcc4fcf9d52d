"""The firewall: the workspace a script may read (labels sealed elsewhere), its independent
verifier, and the static guard on code before it runs."""
