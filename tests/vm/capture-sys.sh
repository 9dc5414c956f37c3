#!/bin/sh
# Runs inside a test-bed guest: copies the sysfs files lib/topology.c reads into
# $1/devices/system/..., so that tests/data/sys/<topology>/ holds a real kernel's
# view of that topology. Used to (re)make the snapshots:
#   tests/vm/vmrun 2n2c sh tests/vm/capture-sys.sh tests/data/sys/2n2c
set -eu
out=$1
node=/sys/devices/system/node
mkdir -p "$out/devices/system/node" "$out/devices/system/cpu"
cp "$node/online" "$node/has_memory" "$node/has_cpu" "$out/devices/system/node/"
cp /sys/devices/system/cpu/online "$out/devices/system/cpu/"
for d in "$node"/node[0-9]*; do
        n=$(basename "$d")
        mkdir -p "$out/devices/system/node/$n"
        for f in cpulist distance meminfo; do
                cp "$d/$f" "$out/devices/system/node/$n/"
        done
done
