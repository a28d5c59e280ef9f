"""Tessera processes, one package each; they never import each other."""
