"""Proposal compiler: pure, no database, no network."""
