"""What every Tessera service imports: contracts, identities, runtime, errors."""

__version__ = "0.1.0"
