"""Chaos runs over one master/slave broker group (see runner.py)."""
