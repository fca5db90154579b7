#!/usr/bin/env bash
# install-stripped.sh SOURCE FOLDER NAME
#
# Installs SOURCE as FOLDER/NAME, 0644 and stripped as dh_strip strips
# (--strip-unneeded, and the .comment and .note sections; the
# dynamic symbols stay), with its debug information in FOLDER/.debug/NAME.debug
# and a .gnu_debuglink to it, where gdb looks by default. Written under a
# temporary name and renamed into place, so a process that has the old file
# mapped keeps it.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 SOURCE FOLDER NAME" >&2; exit 2; }
src=$1 dir=$2 name=$3
install -d "$dir/.debug"
objcopy --only-keep-debug "$src" "$dir/.debug/$name.debug"
chmod 0644 "$dir/.debug/$name.debug"
# The debuglink is made from the .debug file's name: add it from inside the folder.
(cd "$dir" && objcopy --strip-unneeded --remove-section=.comment --remove-section=.note \
  --add-gnu-debuglink=".debug/$name.debug" "$src" ".$name.new")
chmod 0644 "$dir/.$name.new"
mv -f "$dir/.$name.new" "$dir/$name"
