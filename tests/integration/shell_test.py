"""Shell scripts under `amino run`: pipes, subshells, redirections, here-documents, background
jobs and wait behave as natively, in dash and in bash."""

import ittest
from ittest import write

PIPES = r"""
seq 1 5000 | grep 7 | sort -rn | head -5 | tr '\n' ' '; echo
seq 1 100 | awk '{ s += $1 } END { print "sum", s }'
printf 'b\na\nc\n' | sort | tee sorted.txt | wc -l
false | true; echo "status of false|true: $?"
yes | head -3
cat /dev/null | wc -c
"""

SUBSHELLS = r"""
x=outer
(x=inner; echo "in subshell: $x"; cd sub && echo "in $(basename "$(pwd)")")
echo "after subshell: $x, $(test -d sub && echo back in the top directory)"
y=$(echo nested $(echo deeper $(echo deepest)))
echo "$y"
( exit 3 ); echo "subshell status $?"
{ echo grouped; echo commands; } > grouped.txt
count=$(ls sub | wc -l); echo "sub holds $count entries"
"""

REDIRECTIONS = r"""
echo first > out.txt
echo second >> out.txt
echo to-stderr >&2
echo hidden 2>/dev/null >&2
ls nothing-here 2> err.txt; echo "ls status $?"
exec 3> fd3.txt
echo via-fd3 >&3
echo also-fd3 1>&3
exec 3>&-
exec 4< in.txt
read -r line <&4; echo "read from fd 4: $line"
exec 4<&-
cat < in.txt > copy.txt 2>&1
{ echo out; echo err >&2; } > both.txt 2>&1
echo rw > rw.txt; exec 5<> rw.txt; read -r w <&5; echo "read-write: $w"; echo more >&5; exec 5>&-
set -C; echo clobber > out.txt; echo "noclobber status $?"; set +C
: > truncated.txt
cat out.txt fd3.txt copy.txt both.txt rw.txt
"""

HEREDOCS = r"""
name=world
cat <<END
hello $name
  indented $((6 * 7))
END
cat <<'END' > literal.txt
not expanded: $name $(date)
END
cat <<-END
	tabs stripped for $name
	END
tr a-z A-Z <<END | sed 's/^/> /'
piped here-document
END
while read -r a b; do echo "$b:$a"; done <<END
1 one
2 two
END
"""

BACKGROUND = r"""
for i in 1 2 3 4; do
  (sleep 0.$i; echo "job $i" > job$i.txt) &
done
wait
cat job1.txt job2.txt job3.txt job4.txt
sleep 0.1 & pid=$!
wait $pid; echo "sleep status $?"
(exit 3) & wait $!; echo "background status $?"
sh -c 'kill -TERM $$' & wait $!; echo "killed status $?"
# The job writes only once told through the FIFO, after the check: no race with its sleep.
mkfifo gate
(read go < gate; sleep 0.2; echo late > late.txt) &
echo "before wait: $(ls late.txt 2>/dev/null || echo none)"
echo go > gate
wait
rm gate
echo "after wait: $(cat late.txt)"
"""


def scripts(root):
    for name, text in (("pipes", PIPES), ("subshells", SUBSHELLS),
                       ("redirections", REDIRECTIONS), ("heredocs", HEREDOCS),
                       ("background", BACKGROUND)):
        write(root, f"{name}.sh", text, 0o755)
    write(root, "in.txt", "line one\nline two\n")
    write(root, "sub/a", "a")
    write(root, "sub/b", "b")


class ShellTest(ittest.ScenarioTest):
    def run_script(self, shell, name):
        self.check([shell, f"{name}.sh"], setup=scripts)

    def test_dash_pipes(self):
        self.run_script("/bin/sh", "pipes")

    def test_dash_subshells(self):
        self.run_script("/bin/sh", "subshells")

    def test_dash_redirections(self):
        self.run_script("/bin/sh", "redirections")

    def test_dash_heredocs(self):
        self.run_script("/bin/sh", "heredocs")

    def test_dash_background(self):
        self.run_script("/bin/sh", "background")

    def test_bash_all(self):
        self.check(["/bin/bash", "-c", "for s in pipes subshells redirections heredocs background; "
                    "do echo \"== $s\"; bash $s.sh; done"], setup=scripts)

    def test_stdin_from_a_pipe(self):
        data = b"".join(b"line %d\n" % i for i in range(100000))
        self.check(["/bin/sh", "-c", "wc -lc; echo more | cat"], stdin=data, expect_status=0)
        self.check(["/bin/sh", "-c", "head -3 > head.txt; tail -2"], stdin=data, expect_status=0)

    def test_descriptors_seen_in_proc(self):
        # /proc/PID/fd shows what each descriptor is: the same under amino.
        self.check(["/bin/sh", "-c", "exec 3<in.txt 4>>out.txt 5<sub 6<>rw.txt; echo x | "
                    "{ for fd in 0 1 3 4 5 6 7; do printf '%s -> %s\\n' $fd \"$(readlink "
                    "/proc/$$/fd/$fd || echo none)\"; done; } | sed 's/pipe:\\[[0-9]*\\]/pipe/'; "
                    "cat /proc/$$/fdinfo/4 | grep flags"], setup=scripts)

    def test_many_short_processes(self):
        # Hundreds of processes, eight at a time, each creating a file.
        self.check(["/bin/sh", "-c", "seq 1 400 | xargs -P 8 -n 1 sh -c 'echo $0 > f$0; exit 0' "
                    "&& cat f* | sort -n | md5sum && ls | wc -l"], expect_status=0)


if __name__ == "__main__":
    ittest.main()
