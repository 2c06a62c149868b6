# PyTorch data loaders need more shared memory than Docker's default 64 MB.
shm_kb=$(df -k /dev/shm 2>/dev/null | awk 'NR == 2 { print $2 }')
if [ -n "$shm_kb" ] && [ "$shm_kb" -lt 1048576 ]; then
  echo
  echo "NOTE: The SHMEM allocation limit is set to $((shm_kb / 1024)) MB.  This may be"
  echo "   insufficient for PyTorch.  NVIDIA recommends the use of the following flags:"
  echo "   docker run --gpus all --ipc=host --ulimit memlock=-1 --ulimit stack=67108864 ..."
fi
