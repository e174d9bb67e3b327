"""git under `amino run`: init, add, commit, branch, merge, log and fsck give the same commits
(same hashes: same objects) and the same repository as natively."""

import ittest
from ittest import write

DATES = "2021-06-01T12:00:00Z"
ENV = {
    "GIT_AUTHOR_NAME": "Ada Amino", "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada Amino", "GIT_COMMITTER_EMAIL": "ada@example.org",
    "GIT_AUTHOR_DATE": DATES, "GIT_COMMITTER_DATE": DATES,
}

SCRIPT = r"""
set -e
git init -q -b main repo
cd repo
mkdir -p src docs
for i in $(seq 1 40); do echo "line $i of file $i" > src/file$i.txt; done
printf '#!/bin/sh\necho hi\n' > run.sh; chmod +x run.sh
ln -s src/file1.txt link
git add -A
git commit -q -m "first commit"
git mv src/file1.txt docs/moved.txt
git rm -q src/file2.txt
echo changed >> src/file3.txt
git commit -q -am "second: move, remove, change"
git checkout -q -b topic
echo topic > topic.txt; git add topic.txt; git commit -q -m "topic work"
git checkout -q main
echo main >> src/file4.txt; git commit -q -am "main work"
git merge -q --no-edit topic
git tag -a v1 -m "tag one"
git log --format=%H%n%s
git log --stat --format='%s' -2
git fsck --full --strict
git status --porcelain
git diff HEAD~2 --stat
git cat-file -p HEAD^{tree}
git show v1 --format=%H -s
git count-objects
"""

# The index records inode numbers and ctimes, which differ between any two runs.
VOLATILE = ("repo/.git/index",)


class GitTest(ittest.ScenarioTest):
    def test_init_add_commit_log_fsck(self):
        self.check(["/bin/sh", "script.sh"], setup=lambda root: write(root, "script.sh", SCRIPT),
                   env=ENV, volatile=VOLATILE, timeout=300, expect_status=0)

    def test_clone_and_gc(self):
        # A local clone copies objects with hard links or copies; gc packs them (single-threaded,
        # so the pack is the same each time).
        script = SCRIPT + "cd ..\ngit clone -q repo clone\ncd clone\ngit log --format=%H -1\n" \
            "git -c pack.threads=1 gc -q --aggressive\ngit count-objects -v | grep -v size\n" \
            "git fsck --full\n"
        self.check(["/bin/sh", "script.sh"], setup=lambda root: write(root, "script.sh", script),
                   env=ENV, volatile=VOLATILE + ("clone/.git/index",), timeout=300,
                   expect_status=0)


if __name__ == "__main__":
    ittest.main()
