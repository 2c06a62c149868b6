"""Registries over their HTTP API (Docker Registry v2 / OCI distribution): the client (client.py, every
answer checked: a manifest is the hash of its bytes, each kind of answer read by one reader), on the
one HTTP policy of core/http.py; whose credentials go to which host, and when (auth.py)."""
