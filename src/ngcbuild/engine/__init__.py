"""build/R/ -> an image on a Docker engine: the client (local or remote), the build and its event
stream, reuse by context hash, the registry client (one retrying session) it looks images up with,
the layer cache shared through a registry, base images, leftovers of unfinished builds, the build
record, wheels, transfer progress, pruning, and the one way a container is run once (container.py)."""
