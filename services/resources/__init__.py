"""Resource Gateway: the only holder of the read-only warehouse credential."""
