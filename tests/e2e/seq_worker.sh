#!/bin/sh
# A sequence step for the end-to-end test: reads the previous step's state (prev_state.txt),
# appends one line, writes the new state (state.txt) and a report (out.txt).
if [ ! -f prev_state.txt ]; then
    echo "prev_state.txt missing" >&2
    exit 1
fi
# A client started with SEQ_WORKER_STALL_AT=N never finishes a step whose previous state has N
# lines or more: the relocation test's host that vanishes while computing.
if [ -n "$SEQ_WORKER_STALL_AT" ] && [ "$(wc -l < prev_state.txt)" -ge "$SEQ_WORKER_STALL_AT" ]; then
    sleep 3600
fi
cp prev_state.txt state.txt
echo "step done" >> state.txt
wc -l < state.txt | tr -d ' ' > out.txt
echo "sequence step wrote $(cat out.txt) lines of state" >&2
echo 0 > boinc_finish_called
exit 0
