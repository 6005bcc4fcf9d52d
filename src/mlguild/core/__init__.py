"""The words and value types every other part speaks: Protocols, the node vocabulary, the
user-facing errors, the Score value and the search graph of nodes. Nothing here runs anything."""
