"""Two versions of a document compared: blocks aligned deterministically (no server), each
change added, removed, changed or moved with both anchors; then the model's explanation,
asked about both versions whole as a set (A = old, B = new)."""
