"""python3 under `amino run`: threads doing file I/O, subprocesses with pipes, os.fork and
waitpid, and a multiprocessing pool give the same results and files as natively."""

import ittest
from ittest import write

SCRIPT = r'''
import hashlib, multiprocessing, os, shutil, subprocess, sys, threading

def worker(i, results):
    name = f"thread-{i}.txt"
    with open(name, "w") as f:
        for j in range(500):
            f.write(f"thread {i} line {j}\n")
    with open(name, "rb") as f:
        results[i] = hashlib.sha256(f.read()).hexdigest()[:16]
    os.rename(name, f"done-{i}.txt")

results = {}
threads = [threading.Thread(target=worker, args=(i, results)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
for i in sorted(results): print("thread", i, results[i])

out = subprocess.run(["sort", "-r", "done-3.txt"], capture_output=True, check=True).stdout
print("sort -r | first line:", out.splitlines()[0].decode())
p = subprocess.Popen(["wc", "-l"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
print("wc -l of 1234 lines:", p.communicate(b"x\n" * 1234)[0].decode().strip())
print("false exits", subprocess.call(["false"]))
with open("from-child.txt", "w") as f:
    subprocess.run(["sh", "-c", "echo written by a child; echo err >&2"], stdout=f,
                   stderr=subprocess.STDOUT, check=True)

pids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        with open(f"forked-{i}.txt", "w") as f:
            f.write(f"forked child {i}\n")
        os._exit(10 + i)
    pids.append(pid)
for i, pid in enumerate(pids):
    _, status = os.waitpid(pid, 0)
    print("fork", i, "exit", os.waitstatus_to_exitcode(status))

r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, open("forked-2.txt", "rb").read())
    os._exit(0)
os.close(w)
data = b""
while chunk := os.read(r, 100):
    data += chunk
os.waitpid(pid, 0)
print("through a pipe from a forked child:", data.decode().strip())

def square_file(n):
    with open(f"pool-{n}.txt", "w") as f:
        f.write(str(n * n))
    return n * n

with multiprocessing.get_context("fork").Pool(2) as pool:
    print("pool:", pool.map(square_file, range(10)))

os.makedirs("tree/a/b", exist_ok=True)
shutil.copytree("tree", "tree-copy")
shutil.copy2("done-0.txt", "tree-copy/a/b/")
shutil.rmtree("tree")
os.symlink("tree-copy/a", "link-a")
print("listing:", sorted(os.listdir(".")))
print("walk:", [(d, sorted(f)) for d, _, f in sorted(os.walk("tree-copy"))])
sys.exit(4)
'''


class PythonTest(ittest.ScenarioTest):
    def test_threads_subprocess_fork(self):
        self.check(["/usr/bin/python3", "script.py"],
                   setup=lambda root: write(root, "script.py", SCRIPT), expect_status=4)


if __name__ == "__main__":
    ittest.main()
