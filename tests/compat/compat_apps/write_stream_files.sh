#!/bin/sh
# A program producing a file stream (PyCOMPSs's 9_stream_non_native writes files the same
# way): N files into the directory it is given.
set -eu
dir=$1
n=$2
i=0
while [ "$i" -lt "$n" ]; do
    printf 'file %s\n' "$i" > "$dir/part-$i.txt"
    i=$((i + 1))
done
