#!/bin/sh
# Cobblestone demo application. Reads in.txt, works for a moment, writes out.txt.
# A plain (non-BOINC-API) app must create boinc_finish_called itself, holding its exit status.
work_seconds=${1:-1}
if [ ! -f in.txt ]; then
    echo "in.txt missing" >&2
    exit 1
fi
sleep "$work_seconds"
size=$(wc -c < in.txt | tr -d ' ')
digest=$(md5sum < in.txt | cut -d' ' -f1)
printf '%s %s\n' "$size" "$digest" > out.txt
echo "demo worker processed $size bytes" >&2
echo 0 > boinc_finish_called
exit 0
