"""ngcbuild: NGC-style PyTorch container images from one manifest per release."""
