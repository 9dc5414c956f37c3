#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# meson install script: installs numabalanced.conf into the sysconfdir only where no
# file of that name exists yet, so that an operator's edits survive a reinstall or an
# upgrade (install_data would overwrite them). Honours DESTDIR, as meson sets it.
# Usage: install-conf.sh SOURCE SYSCONFDIR
set -eu
src=$1
dir=${DESTDIR:-}$2
if [ -e "$dir/numabalanced.conf" ] || [ -L "$dir/numabalanced.conf" ]; then
        echo "Keeping the existing $dir/numabalanced.conf"
else
        install -D -m 0644 "$src" "$dir/numabalanced.conf"
        echo "Installing $src to $dir/numabalanced.conf"
fi
