#!/bin/bash
# NGC-style entrypoint of the PyTorch {{ release.release }} image: run the start-up snippets in
# /opt/nvidia/entrypoint.d (*.sh sourced, *.txt printed) in name order, then the command.
set -e
for snippet in /opt/nvidia/entrypoint.d/*; do
  case "$snippet" in
    *.sh) source "$snippet" ;;
    *.txt) cat "$snippet" ;;
  esac
done
echo

if [ $# -eq 0 ]; then
  exec /bin/bash
fi
exec "$@"
