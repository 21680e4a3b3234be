"""Networking API v2.0 handlers, one module per URL noun; no SQL here (see `network`)."""
