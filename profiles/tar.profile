# tar: one tar run (an extraction, an archive written) is all-or-nothing.
description "Each tar run is one transaction, with the compressors it starts: an extraction that fails or is killed leaves none of its files; one that succeeds appears at once."

on exec tar do begin
on exit do commit-if status == 0
