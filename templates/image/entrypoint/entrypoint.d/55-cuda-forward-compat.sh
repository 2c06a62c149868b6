# CUDA forward compatibility: when the image's CUDA needs a newer driver than the kernel module runs,
# the user-mode driver the image carries in /usr/local/cuda/compat can bridge the gap, but only on GPUs
# that support it (data-center GPUs; on others CUDA then fails with error 804 where the plain driver
# would have worked). So it is tried first, in a child process, and enabled only when cuInit succeeds.
compat_root=${_CUDA_COMPAT_PATH:-/usr/local/cuda/compat}
driver_file=${_NVIDIA_DRIVER_VERSION_FILE:-/proc/driver/nvidia/version}
# CUDA 12/13 bases keep the libraries in compat/lib (lib.real behind it in some); the CUDA 10.2 and 11.1
# bases of 2020 keep them in compat/ itself.
compat_lib=$(ls "$compat_root"/lib*/libcuda.so.*.* "$compat_root"/libcuda.so.*.* 2>/dev/null | head -n 1)
# NVIDIA's note names the CUDA release as MAJOR.MINOR ("CUDA 13.1"), whatever form CUDA_VERSION has in the
# base (13.1.0 or cuda-dl-base's four parts).
cuda_release=$(printf '%s\n' "$CUDA_VERSION" | sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
# The kernel module's version follows "Kernel Module" in the proprietary module's line and "Kernel
# Module for <arch>" in the open module's (the default since R560, the only one on Blackwell):
#   NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:56:04 UTC 2025
#   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.172.08  Release Build  ...
# An unreadable or unknown file leaves it empty: forward compatibility is then not tried.
kernel_driver=$(sed -n 's/^NVRM version:.*Kernel Module\( for [^ ]*\)\{0,1\}  *\([0-9][0-9]*\.[0-9][0-9.]*\) .*/\2/p' \
  "$driver_file" 2>/dev/null | head -n 1)
if [ -n "$compat_lib" ] && [ -n "$kernel_driver" ]; then
  compat_driver=${compat_lib##*/libcuda.so.}
  if [ "${kernel_driver%%.*}" -lt "${compat_driver%%.*}" ]; then
    probe_python=$(command -v python3 || command -v python || true)
    # The probe loads libcuda.so.1 as CUDA programs will, with the compat folder first on the path.
    if [ -n "$probe_python" ] && LD_LIBRARY_PATH="${compat_lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$probe_python" -c 'import ctypes, sys; sys.exit(ctypes.CDLL("libcuda.so.1").cuInit(0))' >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="${compat_lib%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo
      echo "NOTE: CUDA Forward Compatibility mode ENABLED."
      echo "  Using CUDA $cuda_release driver version $compat_driver with kernel driver version $kernel_driver."
      echo "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details."
    else
      echo
      echo "NOTE: CUDA Forward Compatibility is not supported on this GPU or driver (it was tried and failed);"
      echo "  using kernel driver version $kernel_driver as it is. CUDA $cuda_release may need a newer driver."
    fi
  fi
fi
