"""tar under `amino run`: archiving, listing and extracting a tree of a few thousand small files
gives the same archive, listing and tree as natively."""

import os

import ittest

# 3000 files by default (30 directories of 10 subdirectories of 10 files); AMINO_IT_LARGE=1: 30000.
TOP = 300 if ittest.LARGE else 30


def many_files(root):
    for i in range(TOP):
        for j in range(10):
            d = os.path.join(root, "data", f"d{i:03}", f"s{j}")
            os.makedirs(d)
            for k in range(10):
                n = i * 100 + j * 10 + k
                with open(os.path.join(d, f"f{k}.txt"), "wb") as f:
                    f.write(f"file {n}\n".encode() * (n % 17))
                if n % 7 == 0:
                    os.chmod(os.path.join(d, f"f{k}.txt"), 0o600)
    os.symlink("d000/s0/f1.txt", os.path.join(root, "data", "link"))


class TarTest(ittest.ScenarioTest):
    def test_create_list_extract(self):
        # One scenario, so that the big tree is built only once per run. The archive is made
        # with --sort=name: members otherwise come in the order the file system lists a
        # directory, which is its own (ext4: a hash of each name).
        self.check(["/bin/sh", "-c",
                    "tar --sort=name -cf archive.tar data && tar tf archive.tar > list.txt && wc -l < list.txt "
                    "&& tar tvf archive.tar | tail -5 && mkdir out && tar xf archive.tar -C out && "
                    "diff -r --no-dereference data out/data && echo same && "
                    # extraction of a part, after removing it
                    "rm -r out/data/d001 && tar xf archive.tar -C out data/d001/s3 data/link && "
                    "find out/data/d001 | sort && "
                    # from one tar to another through a pipe, preserving permissions
                    "mkdir copy && tar cf - data | tar xpf - -C copy && "
                    "tar cf - -C copy data | tar tvf - | sort | md5sum && "
                    # deleting members from an archive rewrites it in place
                    "tar --delete -f archive.tar data/d002 && tar tf archive.tar | wc -l"],
                   setup=many_files, timeout=600, expect_status=0)


if __name__ == "__main__":
    ittest.main()
