"""Untrusted text: the read-path screen and its rules, and text made safe to show."""
