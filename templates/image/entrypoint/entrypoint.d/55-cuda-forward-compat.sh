# CUDA forward compatibility: when the image's CUDA needs a newer driver than the kernel module runs,
# use the user-mode driver the image carries in /usr/local/cuda/compat (images without one skip this).
compat_lib=$(ls /usr/local/cuda/compat/lib*/libcuda.so.*.* 2>/dev/null | head -n 1)
kernel_driver=$(sed -n 's/.*Kernel Module *\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version 2>/dev/null | head -n 1)
if [ -n "$compat_lib" ] && [ -n "$kernel_driver" ]; then
  compat_driver=${compat_lib##*/libcuda.so.}
  if [ "${kernel_driver%%.*}" -lt "${compat_driver%%.*}" ]; then
    export LD_LIBRARY_PATH="${compat_lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo
    echo "NOTE: CUDA Forward Compatibility mode ENABLED."
    echo "  Using CUDA ${CUDA_VERSION%.*} driver version $compat_driver with kernel driver version $kernel_driver."
    echo "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details."
  fi
fi
