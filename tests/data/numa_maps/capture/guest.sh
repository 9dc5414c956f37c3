#!/bin/sh
# Runs inside the guest (see capture.sh). $1: output dir (an --rwdir), $2: wide mask or 0.
set -u
out=$1
echo madvise > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
echo 8 > /proc/sys/vm/nr_hugepages
{
  uname -r
  cat /sys/kernel/mm/transparent_hugepage/enabled
  cat /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages
  cat /proc/sys/kernel/numa_balancing
  ls /sys/devices/system/node | grep node
} > "$out/guest-info.txt" 2>&1
"$(dirname "$0")/capture" "$out" "$2"
echo "rc=$?" >> "$out/guest-info.txt"
