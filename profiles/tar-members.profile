# tar-members: tar extracts member by member, each one whole or not at all.
description "For tar x: each regular file tar extracts is a transaction from its creation to its close, data and attributes set on the descriptor included, so an extraction that fails or is killed leaves only whole members. Directories and links are made by single calls, each atomic."

on open write by tar when count == 1 do begin
on close write by tar when count == 0 do commit
on exit by tar do abort
