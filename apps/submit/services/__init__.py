"""Remote job submission: permissions, batches, fair share, job files and outputs."""
