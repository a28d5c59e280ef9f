"""Capability broker: the only holder of effect credentials."""
