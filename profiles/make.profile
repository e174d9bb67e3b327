# make: each command make runs is all-or-nothing; a failed build keeps what succeeded.
description "Each command make runs (a recipe line, with the programs it starts) is a transaction: committed when it succeeds, aborted when it fails or is killed. A failed build keeps the outputs of the commands that succeeded and nothing of the one that failed (no half-written object file)."

on exec by make do begin
on exit do commit-if status == 0
