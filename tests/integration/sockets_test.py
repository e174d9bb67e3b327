"""AF_UNIX sockets named by paths in the scratch directory (an Amino mount in the mount modes):
bind, connect, datagrams sent to a path (sendto, sendmsg with a descriptor passed, sendmmsg), their errors, the names getsockname and getpeername
report, the socket file as stat, listings, rename, link and unlink see it, and the peer
credentials a server reads give the same results as natively; so do paths relative to a socket
or pipe descriptor."""

import ittest
from ittest import write

SCRIPT = r'''
import ctypes, errno, os, socket, stat, struct

def err(f):
    try:
        r = f()
        return "ok" if r is None else r
    except OSError as e:
        return errno.errorcode[e.errno]

def stream():
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

libc = ctypes.CDLL(None, use_errno=True)

class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]

class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]

def send_all(sock, items):
    # sendmmsg of (data, path or None: the path before) messages until all are sent, as a
    # caller must (it may send fewer than given): the lengths sent, or an error.
    keep, vec = [], (mmsghdr * len(items))()
    path = None
    for i, (data, to) in enumerate(items):
        path = to or path
        buf = ctypes.create_string_buffer(data, len(data))
        iov = iovec(ctypes.cast(buf, ctypes.c_void_p), len(data))
        # An abstract name (a NUL first) has no NUL at its end.
        addr = struct.pack("H", socket.AF_UNIX) + path.encode() + (b"" if path[0] == "\0" else b"\0")
        name = ctypes.create_string_buffer(addr, len(addr))
        keep += [buf, iov, name]
        vec[i].hdr.iov, vec[i].hdr.iovlen = ctypes.pointer(iov), 1
        vec[i].hdr.name, vec[i].hdr.namelen = ctypes.cast(name, ctypes.c_void_p), len(addr)
    lengths, done = [], 0
    while done < len(items):
        rest = ctypes.byref(vec, done * ctypes.sizeof(mmsghdr))
        r = libc.sendmmsg(sock.fileno(), rest, len(items) - done, 0)
        if r < 0:
            return lengths + [errno.errorcode[ctypes.get_errno()]]
        lengths += [vec[done + k].len for k in range(r)]
        done += r
    return lengths

os.umask(0o022)
os.mkdir("sock")
open("plain", "w").close()
srv = stream()
print("bind", err(lambda: srv.bind("sock/s")))
print("bind a bound socket", err(lambda: srv.bind("sock/t")), os.path.exists("sock/t"))
other = stream()
print("bind a taken name", err(lambda: other.bind("sock/s")))
print("bind over a file", err(lambda: other.bind("plain")))
print("bind in a missing directory", err(lambda: other.bind("nodir/s")))
print("bind under a file", err(lambda: other.bind("plain/s")))
st = os.lstat("sock/s")
print("a socket:", stat.S_ISSOCK(st.st_mode), oct(stat.S_IMODE(st.st_mode)), st.st_nlink)
print("listing:", sorted(os.listdir("sock")))
print("getsockname:", srv.getsockname())
srv.listen(8)

cli = stream()
print("connect", err(lambda: cli.connect("sock/s")))
conn, peer = srv.accept()
print("accepted from", repr(peer), "getpeername:", cli.getpeername())
pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                    struct.calcsize("3i")))
print("peer credentials are the client's:", pid == os.getpid(), uid == os.getuid(),
      gid == os.getgid())
cli.sendall(b"hello")
print("server read", conn.recv(16))
conn.sendall(b"back")
print("client read", cli.recv(16))

absolute = stream()
print("connect by absolute path", err(lambda: absolute.connect(os.path.abspath("sock/s"))))
srv.accept()[0].close()
nobody = stream()
print("connect to a file", err(lambda: nobody.connect("plain")))
print("connect to a directory", err(lambda: nobody.connect("sock")))
print("connect to nothing", err(lambda: nobody.connect("sock/none")))

os.rename("sock/s", "sock/renamed")
os.link("sock/renamed", "sock/linked")
for name in ("sock/renamed", "sock/linked"):
    c = stream()
    print("connect", name, err(lambda: c.connect(name)))
    a = srv.accept()[0]
    c.sendall(b"x")
    print("  and through it", a.recv(1))
    a.close()
    c.close()
print("link count", os.lstat("sock/linked").st_nlink)
os.unlink("sock/renamed")
os.unlink("sock/linked")
late = stream()
print("connect after unlink", err(lambda: late.connect("sock/renamed")))
cli.sendall(b"still")
print("the open connection still works:", conn.recv(16))

gone = stream()
gone.bind("sock/gone")
gone.close()
print("a socket file nobody listens on", err(lambda: stream().connect("sock/gone")))
os.unlink("sock/gone")

d1 = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
d1.settimeout(10)  # a datagram that went elsewhere fails the comparison instead of hanging
d1.bind("sock/dgram")
d2 = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print("datagram connect", err(lambda: d2.connect("sock/dgram")), d2.getpeername())
d2.send(b"datagram")
print("datagram read", d1.recv(64))
d3 = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print("sendto a path", err(lambda: d3.sendto(b"addressed", "sock/dgram")))
print("datagram read", d1.recvfrom(64))
print("sendto nothing", err(lambda: d3.sendto(b"x", "sock/none")))
print("sendto a file", err(lambda: d3.sendto(b"x", "plain")))
print("sendto on a stream socket", err(lambda: cli.sendto(b"x", "sock/dgram")))
r, w = os.pipe()
print("sendmsg to a path, with a descriptor",
      err(lambda: d3.sendmsg([b"by ", b"sendmsg"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                      struct.pack("i", w))], 0, "sock/dgram")))
got, fds, _, _ = socket.recv_fds(d1, 64, 1)
os.write(fds[0], b"through the passed pipe")
print("datagram read", got, os.read(r, 64))
print("sendmsg to nothing", err(lambda: d3.sendmsg([b"x"], [], 0, "sock/none")))
print("sendmsg to a file", err(lambda: d3.sendmsg([b"x"], [], 0, "plain")))
print("sendmsg to a path by a relative link", err(lambda: os.symlink("dgram", "sock/to_dgram")),
      err(lambda: d3.sendmsg([b"linked"], [], 0, "sock/to_dgram")), d1.recv(64))
os.unlink("sock/to_dgram")
print("sendmmsg to a path", send_all(d3, [(b"one", "sock/dgram"), (b"two", None),
                                          (b"three", "sock/dgram")]), [d1.recv(64) for _ in "123"])
ab = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
ab.bind("\0amino-sockets-test-%d" % os.getpid())
print("sendmmsg to an abstract name, then a path",
      send_all(d3, [(b"abstract", ab.getsockname().decode()), (b"path", "sock/dgram")]),
      ab.recv(64), d1.recv(64))
print("sendmmsg to nothing", send_all(d3, [(b"x", "sock/none")]))
os.unlink("sock/dgram")

os.chdir("sock")
rel = stream()
rel.bind("rel")
rel.listen(1)
print("relative name:", rel.getsockname())
c = stream()
os.chdir("..")
print("connect from elsewhere", err(lambda: c.connect("sock/rel")), c.getpeername())
os.unlink("sock/rel")

os.umask(0o077)
masked = stream()
masked.bind("sock/masked")
print("mode under umask 077", oct(stat.S_IMODE(os.lstat("sock/masked").st_mode)))
os.chmod("sock/masked", 0o600)
print("after chmod", oct(stat.S_IMODE(os.lstat("sock/masked").st_mode)))
os.unlink("sock/masked")

# A socket or a pipe is no directory to walk from, also for a rename or link between the host
# and a mount.
r, w = os.pipe()
for fd in (stream().fileno(), r):
    print("paths from a non-directory descriptor:",
          err(lambda: os.rename("plain", "moved", src_dir_fd=fd)),
          err(lambda: os.rename("plain", "moved", dst_dir_fd=fd)),
          err(lambda: os.link("plain", "linked", dst_dir_fd=fd)),
          err(lambda: os.stat("x", dir_fd=fd)), err(lambda: os.mkdir("x", dir_fd=fd)))

abstract = stream()
abstract.bind("\0amino-it-abstract-%d" % os.getpid())
abstract.listen(1)
c = stream()
c.connect("\0amino-it-abstract-%d" % os.getpid())
print("abstract names still work:", abstract.accept()[0] is not None)
print("left:", sorted(os.listdir("sock")))
'''


class SocketsTest(ittest.ScenarioTest):
    def test_unix_sockets_by_path(self):
        self.check(["/usr/bin/python3", "script.py"],
                   setup=lambda root: write(root, "script.py", SCRIPT))


if __name__ == "__main__":
    ittest.main()
