"""The file-system benchmark harness behind bench/run: the paper's configurations side by side
on file systems it creates itself (DESIGN.md §7)."""
