"""Pure rules of remote job submission: batch states, fair share, progress."""
