"""What a built image is made of and who vouches for it: the SBOM (sbom.py), the vulnerability audit
of what it lists (audit.py, advisories.py), the signed provenance (provenance.py, signing.py) and how
the three are attached to the image in a registry and verified there (attachments.py, attest.py)."""
