# whole-program: the traced command, and every process it starts, is one transaction.
description "The command and every process it starts is one transaction, begun at its exec: committed when it exits with status 0, aborted when it exits with another status or is killed. Nothing of a failed or interrupted run remains; others see all of a successful run at once."

on exec do begin
on exit do commit-if status == 0
