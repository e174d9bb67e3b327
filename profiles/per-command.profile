# per-command: one transaction per command a shell script or make runs.
description "Each program the traced command starts (a command of a shell script, a recipe line of make) is a transaction with everything it starts in turn: committed when it exits with status 0, aborted otherwise. The traced command itself runs outside them, so what earlier commands did stays when a later one fails."

on exec when depth > 0 do begin
on exit do commit-if status == 0
