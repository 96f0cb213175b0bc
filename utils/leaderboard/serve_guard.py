"""The leader of a server's process group (`serve`): `python -m evalpack.leaderboard.serve_guard
PARENT_PID COMMAND` runs the shell command as its child, in its own group, and exits with the
command's status; should its parent (the worker that started it) die without stopping the
server, killed -9 itself or with the board, it kills the whole group. So no server outlives the
board, however the board ends. A SIGTERM to the group (the worker stopping its servers) ends
the guard and reaches the server itself at once, which then shuts down as it does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

CHECK_EVERY = 0.5  # seconds


def main(argv: list[str]) -> int:
    parent, command = int(argv[0]), argv[1]
    server = subprocess.Popen(command, shell=True)  # in the guard's group
    while server.poll() is None:
        if os.getppid() != parent:  # the worker is gone: this group must go too
            os.killpg(os.getpgid(0), signal.SIGKILL)
        time.sleep(CHECK_EVERY)
    code = server.returncode
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
