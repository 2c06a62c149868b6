"""Registries over their HTTP API (Docker Registry v2 / OCI distribution): the client (client.py), on
the one HTTP session policy of core/http.py; whom it authenticates to, and how, is its own business."""
