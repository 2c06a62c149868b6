# CUDA forward compatibility: when the image's CUDA needs a newer driver than the kernel module runs,
# the user-mode driver the image carries can bridge the gap, but only on GPUs that support it
# (data-center GPUs; on others CUDA then fails with error 804 where the plain driver would have worked).
# So it is tried first, in a child process, and enabled only when cuInit succeeds.
# As in NGC's images, it is switched by a link: the build keeps the libraries in compat/lib.real, and
# compat/lib, named in LD_LIBRARY_PATH from the start (after torch's lib), exists only while enabled. The
# path is then the same string either way, torch/lib first, and `docker exec` sees what the entrypoint set.
compat_root=${_CUDA_COMPAT_PATH:-{{ plan.cuda_compat_root }}}
compat_link=$compat_root/lib
compat_real=$compat_root/lib.real
driver_file=${_NVIDIA_DRIVER_VERSION_FILE:-/proc/driver/nvidia/version}
compat_lib=$(ls "$compat_real"/libcuda.so.*.* 2>/dev/null | head -n 1)
compat_enabled=
# A link an earlier start left (the same container started again, on another host, or an image committed from
# it) is not proof for this one.
if [ -L "$compat_link" ]; then
  rm -f "$compat_link" 2>/dev/null || true
fi
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
    # The probe loads libcuda.so.1 as CUDA programs will, the compat libraries before the driver's.
    if [ -n "$probe_python" ] && LD_LIBRARY_PATH="$compat_real${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$probe_python" -c 'import ctypes, sys; sys.exit(ctypes.CDLL("libcuda.so.1").cuInit(0))' >/dev/null 2>&1; then
      # A user who set LD_LIBRARY_PATH anew (docker run -e) dropped the link's entry: it goes last.
      case ":$LD_LIBRARY_PATH:" in
        *":$compat_link:"*) ;;
        *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$compat_link" ;;
      esac
      if [ -e "$compat_link" ] || ! ln -s lib.real "$compat_link" 2>/dev/null; then
        # Not writable here (a non-root user): the entry names the libraries themselves, in its place.
        compat_path=":$LD_LIBRARY_PATH:"
        compat_path=${compat_path/":$compat_link:"/":$compat_real:"}
        compat_path=${compat_path#:}
        export LD_LIBRARY_PATH="${compat_path%:}"
      fi
      compat_enabled=1
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
# A link left that this user cannot remove (not root) must not enable what was not tried or failed here: its
# entry leaves the path, the folders before it keep their order (torch/lib first).
if [ -z "$compat_enabled" ] && [ -L "$compat_link" ]; then
  compat_path=":$LD_LIBRARY_PATH:"
  compat_path=${compat_path//":$compat_link:"/":"}
  compat_path=${compat_path#:}
  export LD_LIBRARY_PATH="${compat_path%:}"
fi
