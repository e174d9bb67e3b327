# per-function:SYMBOL: each call of the program's function SYMBOL is a transaction, and the
# C convention says how it ended: a negative int result is a failure.
description "Use as per-function:SYMBOL. Each call of the function SYMBOL (in the program or a library it loads) is a transaction, nested in the caller's: committed when the call returns zero or a positive int, aborted when it returns a negative one, and aborted when the call is left another way (longjmp, the thread's end). Other calls, and other threads, are not in it."

on call ${ARG} do begin nested
on return ${ARG} do commit-if result >= 0
