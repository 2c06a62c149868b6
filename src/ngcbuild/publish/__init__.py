"""An image -> registries: push with digests read back (and the layer cache), multi-arch lists (also
from the platform jobs' records), promotion by digest with its attestations checked (supply/)."""
