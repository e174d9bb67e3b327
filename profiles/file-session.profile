# file-session: a transaction from a process's first open of a file on a mount to the close
# of the last file it had open there (the paper's file sessions).
description "Each process's file session is a transaction: begun when it opens its first file on a mount, committed when it has closed every file it opened there. A process that exits with files still open commits on status 0 and aborts otherwise (killed included)."

on open when count == 1 do begin
on close when count == 0 do commit
on exit do commit-if status == 0
