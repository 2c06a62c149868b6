# Warn when no NVIDIA driver is visible: the image still starts, the GPU is not there. The driver's version
# file is the one 55-cuda-forward-compat.sh reads (_NVIDIA_DRIVER_VERSION_FILE: a stand-in in the tests).
if [ ! -e "${_NVIDIA_DRIVER_VERSION_FILE:-/proc/driver/nvidia/version}" ] && [ ! -e /dev/nvidiactl ]; then
  echo
  echo "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available."
  echo "   Use the NVIDIA Container Toolkit to start this container with GPU support; see"
  echo "   https://docs.nvidia.com/datacenter/cloud-native/ ."
fi
