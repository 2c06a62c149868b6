"""The smoke suite: a host-side runner and the checks that run inside the image."""
