# cp: a copy is all-or-nothing.
description "Each cp run (cp -r of a tree, cp -a) is one transaction: a copy that fails or is killed leaves nothing at the destination; one that succeeds appears at once."

on exec cp do begin
on exit do commit-if status == 0
