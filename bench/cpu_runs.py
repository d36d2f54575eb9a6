#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU and wall time per run of several commands, measured in turn.

usage: cpu_runs.py RUNS -- CMD1 ARGS... -- CMD2 ARGS... [-- ...]

Each round starts every command once, one after the other (so a change in
the machine's load touches them all alike), with stdout and stderr on
/dev/null.  A run's CPU time is the child's user + system time from wait4()
(the kernel's own accounting, to the microsecond: no 10 ms clock ticks as
with GNU time over a loop).  Prints one line per command, in the order
given: "median_cpu_ms mean_cpu_ms median_wall_ms" then the command.
"""
import os
import statistics
import sys
import time


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write(__doc__)
        return 2
    runs = int(argv[1])
    cmds, cur = [], []
    for a in argv[3:]:
        if a == "--":
            cmds.append(cur)
            cur = []
        else:
            cur.append(a)
    cmds.append(cur)
    if runs < 1 or any(not c for c in cmds):
        sys.stderr.write(__doc__)
        return 2
    null = os.open(os.devnull, os.O_RDWR)
    acts = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
            (os.POSIX_SPAWN_DUP2, null, 2)]
    cpu = [[] for _ in cmds]
    wall = [[] for _ in cmds]
    for _ in range(runs):
        for k, c in enumerate(cmds):
            t0 = time.monotonic()
            pid = os.posix_spawnp(c[0], c, os.environ, file_actions=acts)
            _, _, ru = os.wait4(pid, 0)
            wall[k].append((time.monotonic() - t0) * 1e3)
            cpu[k].append((ru.ru_utime + ru.ru_stime) * 1e3)
    for k, c in enumerate(cmds):
        print("%.3f %.3f %.3f %s" % (statistics.median(cpu[k]),
                                     statistics.mean(cpu[k]),
                                     statistics.median(wall[k]), " ".join(c)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
