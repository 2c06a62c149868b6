"""build/R/ -> an image on a Docker engine: where the engine is (address.py) and its two clients
(local_engine.py on the socket, client.py through the SDK), the build and its event stream, reuse by
context hash, the layer cache shared through a registry, base images, leftovers of unfinished builds,
wheels, transfer progress, pruning, and the one way a container is run once (container.py); the release
image made from the engine's save where it leaves (release_image.py: the save streamed, image_save.py, into
what image/ rewrites; nothing loaded back) and two images compared by their release images (compare.py).
What an image is as data is image/'s."""
