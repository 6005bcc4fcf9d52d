"""The words and value types every other part speaks: Protocols, the node vocabulary and the
journal's events, the keys of a node's meta, the user-facing errors, the Score value and the
search graph of nodes. Nothing here runs anything."""
