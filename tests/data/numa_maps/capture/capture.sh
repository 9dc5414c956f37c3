#!/bin/bash
# Captures real numa_maps from a NUMA guest (virtme-ng, TCG). Usage:
#   capture.sh OUTDIR two|wide
# two:  2 nodes of 1G, one CPU each (the policy/page-kind capture)
# wide: 32 nodes of 64M, nodes 0-1 with CPUs (long node lists: the 63-char cut)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1; kind=$2
kernel=${KERNEL:-/boot/vmlinuz-6.1.0-56-amd64}
mkdir -p "$out"
gcc -O1 -Wall -o "$here/capture" "$here/capture.c"
args=(--run "$kernel" --disable-kvm --cpus 2 --rwdir "$out")
if [ "$kind" = two ]; then
  args+=(-m 2G --numa 1G,cpus=0 --numa 1G,cpus=1); mask=0
else
  args+=(-m 2G --numa 64M,cpus=0 --numa 64M,cpus=1)
  for i in $(seq 2 31); do args+=(--numa 64M); done
  mask=0x55555555   # nodes 0,2,...,30
fi
PATH=/tmp/vngvenv/bin:$PATH vng "${args[@]}" --exec "sh $here/guest.sh $out $mask"
cat "$out/guest-info.txt"
