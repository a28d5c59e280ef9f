"""Data Agent runtime: the turn loop and the six model tools. Holds no warehouse or effect credentials."""
