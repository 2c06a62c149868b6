"""build/R/ -> an image on a Docker engine: where the engine is (address.py) and its two clients
(local_engine.py on the socket, client.py through the SDK), the build and its event stream, reuse by
context hash, the layer cache shared through a registry, base images, leftovers of unfinished builds,
wheels, transfer progress, pruning, and the one way a container is run once (container.py); the
normalising step's talk with the engine (normalise.py: its save streamed, image_save.py, to what image/
rewrites, the result loaded back, image_load.py, and the memo tag). What an image is as data is image/'s."""
