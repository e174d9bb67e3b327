"""File-system transactions for Python programs run under `amino run` (libamino over ctypes).

Between begin() and commit() every file call the calling thread makes on an Amino mount belongs
to one transaction: other processes see none of its effects until the commit, and abort()
undoes all of them. See include/amino/amino.h for nesting, sharing and conflicts.

    with amino.transaction():
        ...  # committed at the end of the block, aborted if it raises
"""

import contextlib
import ctypes
import errno
import os

__all__ = ["AminoError", "AminoAborted", "available", "begin", "commit", "abort", "attach",
           "detach", "suspend", "current", "depth", "transaction"]

#: The errno of calls in a transaction the system aborted (AMINO_EABORTED).
EABORTED = errno.EDEADLK


class AminoError(OSError):
    """A libamino call failed; .errno says why (ENOSYS outside `amino run`)."""


class AminoAborted(AminoError):
    """The system aborted the transaction (a deadlock victim, or a lock wait longer than
    `amino run --lock-timeout`): its calls failed with EDEADLK and none of it took effect."""


def _load():
    path = os.environ.get("AMINO_LIBRARY") or "libamino.so.0"
    try:
        lib = ctypes.CDLL(path, use_errno=True)
    except OSError as e:
        raise ImportError("amino: cannot load %s (%s): install Amino (cmake --install), or set "
                          "AMINO_LIBRARY to the path of libamino.so" % (path, e)) from e
    txn_p = ctypes.POINTER(ctypes.c_uint64)
    for name, args in (("amino_available", []), ("amino_begin", [txn_p]), ("amino_commit", []),
                       ("amino_abort", []), ("amino_attach", [ctypes.c_uint64]),
                       ("amino_detach", []), ("amino_suspend", [txn_p]),
                       ("amino_current", [txn_p]), ("amino_depth", [])):
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    return lib


_lib = _load()


def _error(what):
    err = ctypes.get_errno()
    cls = AminoAborted if err == EABORTED else AminoError
    return cls(err, "%s: %s" % (what, os.strerror(err)))


def _call(what, fn, *args):
    r = fn(*args)
    if r < 0:
        raise _error(what)
    return r


def available():
    """True when the program runs under a monitor that provides transactions."""
    return _lib.amino_available() == 1


def begin():
    """Begins a transaction (a child of the current one, if any), makes it current and returns
    its id."""
    txn = ctypes.c_uint64()
    _call("amino_begin", _lib.amino_begin, ctypes.byref(txn))
    return txn.value


def commit():
    """Commits the current transaction; its parent (or none) becomes current."""
    _call("amino_commit", _lib.amino_commit)


def abort():
    """Aborts the current transaction; its parent (or none) becomes current."""
    _call("amino_abort", _lib.amino_abort)


def attach(txn_id):
    """Makes transaction `txn_id` current (shared with the threads already attached to it)."""
    _call("amino_attach", _lib.amino_attach, ctypes.c_uint64(txn_id))


def detach():
    """Drops the current transaction; it is aborted if no thread remains attached to it."""
    _call("amino_detach", _lib.amino_detach)


def suspend():
    """Puts the current transaction aside (still attached) and returns its id for attach()."""
    txn = ctypes.c_uint64()
    _call("amino_suspend", _lib.amino_suspend, ctypes.byref(txn))
    return txn.value


def current():
    """The current transaction's id, or 0 when there is none."""
    txn = ctypes.c_uint64()
    _call("amino_current", _lib.amino_current, ctypes.byref(txn))
    return txn.value


def depth():
    """Nesting depth of the current transaction: 1 for a top-level one, 0 when none."""
    return _call("amino_depth", _lib.amino_depth)


@contextlib.contextmanager
def transaction():
    """A transaction for the block: begun on entry (nested in the current one, if any),
    committed when the block ends, aborted when it raises, the exception going on. A call the
    system failed with EDEADLK inside the block (the transaction was aborted) comes out as
    AminoAborted."""
    txn_id = begin()
    try:
        yield txn_id
    except BaseException as e:
        abort()
        if isinstance(e, OSError) and not isinstance(e, AminoError) and e.errno == EABORTED:
            raise AminoAborted(e.errno, "the system aborted the transaction: %s" % e) from e
        raise
    commit()
