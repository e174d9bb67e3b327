"""A Python program that uses libamino through ctypes (run by python_test.py).

  ctypes_client.py LIBAMINO native        amino_available() is 0, amino_begin fails with ENOSYS
  ctypes_client.py LIBAMINO served DIR    under amino run: begin, write DIR/aborted, read it
                                          back, abort (it is gone); begin, write
                                          DIR/committed, commit (it stays); amino_commit with
                                          no transaction fails with ENOENT
Prints "<mode>: ok"; any failed check raises.
"""

import ctypes
import errno
import os
import sys


def load(path):
    lib = ctypes.CDLL(path, use_errno=True)
    lib.amino_begin.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    for name in ("amino_available", "amino_begin", "amino_commit", "amino_abort",
                 "amino_depth"):
        getattr(lib, name).restype = ctypes.c_int
    return lib


def call(fn, *args):
    """(result, errno) of one libamino call."""
    ctypes.set_errno(0)
    r = fn(*args)
    return r, ctypes.get_errno()


def expect(what, got, want):
    if got != want:
        raise SystemExit("FAIL ctypes client: %s gave %r; expected %r" % (what, got, want))


def native(lib):
    expect("amino_available()", lib.amino_available(), 0)
    tid = ctypes.c_uint64(0)
    expect("amino_begin()", call(lib.amino_begin, ctypes.byref(tid)), (-1, errno.ENOSYS))


def served(lib, d):
    expect("amino_available()", lib.amino_available(), 1)
    tid = ctypes.c_uint64(0)
    expect("amino_begin()", call(lib.amino_begin, ctypes.byref(tid)), (0, 0))
    if tid.value == 0:
        raise SystemExit("FAIL ctypes client: amino_begin gave id 0")
    expect("amino_depth()", lib.amino_depth(), 1)
    aborted = os.path.join(d, "aborted")
    with open(aborted, "w") as f:
        f.write("written from Python\n")
    with open(aborted) as f:
        expect("reading back in the transaction", f.read(), "written from Python\n")
    expect("amino_abort()", call(lib.amino_abort), (0, 0))
    expect("amino_depth() after the abort", lib.amino_depth(), 0)
    expect("the aborted file exists", os.path.exists(aborted), False)
    expect("amino_begin()", call(lib.amino_begin, ctypes.byref(tid)), (0, 0))
    with open(os.path.join(d, "committed"), "w") as f:
        f.write("committed from Python\n")
    expect("amino_commit()", call(lib.amino_commit), (0, 0))
    expect("amino_commit() with no transaction", call(lib.amino_commit), (-1, errno.ENOENT))


def main():
    lib = load(sys.argv[1])
    if sys.argv[2] == "native":
        native(lib)
    else:
        served(lib, sys.argv[3])
    print("%s: ok" % sys.argv[2])


if __name__ == "__main__":
    main()
