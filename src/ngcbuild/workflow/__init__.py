"""The release workflow's own logic: the releases a manual dispatch names (choose.py) and the local
rehearsal of the workflow through act (rehearse.py)."""
