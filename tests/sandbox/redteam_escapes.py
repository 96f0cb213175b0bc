"""Red-team attacks that reach out of the sandbox (run by test_redteam.py): real candidate
programs for `add(a, b)` that touch the host's files, IPC, network and processes, each with the
verdict it must get, and the host paths and keys they aim at, which the test checks afterwards.
"Escape probes" behave honestly only if their escape worked."""

from pathlib import Path

from tests.conftest import REPO
from tests.sandbox.conftest import DISHONEST, probe, program

CANARY_DIR = REPO / ".redteam-canary"
CANARY = CANARY_DIR / "keep.txt"
HOST_TMP_FILE = Path("/tmp/evalpack-redteam-was-here")
HOST_SHM_FILE = Path("/dev/shm/evalpack-redteam-was-here")
UNIX_SOCKET = Path("/tmp/evalpack-redteam.sock")
IPC_KEY = 0x5EED  # System V IPC key an attack creates objects under

# name -> (candidate program, regex the verdict "outcome: reason" must match)
ESCAPES = {
    # ---- the filesystem
    "write_outside": (
        probe(f"open({str(CANARY_DIR / 'pwned.txt')!r}, 'w').write('x')\n"),
        "error: .*FileNotFoundError",
    ),
    "delete_outside": (
        probe(f"import os\nos.remove({str(CANARY)!r})\n"),
        "error: .*FileNotFoundError",
    ),
    "chmod_outside": (
        probe(f"import os\nos.chmod({str(CANARY)!r}, 0o777)\n"),
        "error: .*FileNotFoundError",
    ),
    "write_system_dirs": (
        probe("open('/usr/pwned', 'w').write('x')\n"),
        "error: .*(PermissionError|Read-only)",
    ),
    "write_host_tmp": (
        f"open({str(HOST_TMP_FILE)!r}, 'w').write('x')\n" + DISHONEST,
        "failed: assertion",
    ),
    "write_host_dev_shm": (
        f"open({str(HOST_SHM_FILE)!r}, 'w').write('x')\n" + DISHONEST,
        "failed: assertion",
    ),
    "chdir_and_poison_later_jobs": (
        program("""
        import os
        os.chdir('/tmp')
        open('math.py', 'w').write('raise SystemExit')
        open('/tmp/work/random.py', 'w').write('raise SystemExit')
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "sysv_ipc_left_behind": (
        program(f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for make in (libc.shmget, libc.msgget):
            args = ({IPC_KEY}, 4096, 0o1666) if make is libc.shmget else ({IPC_KEY}, 0o1666)
            if make(*args) < 0:
                raise OSError(ctypes.get_errno(), 'ipc')
        """)
        + DISHONEST,
        "failed: assertion",
    ),
    "chroot_or_mount_escape": (
        probe("""
        import os
        os.makedirs('jail', exist_ok=True)
        os.chroot('jail')
        """),
        "error: .*PermissionError",
    ),
    "user_namespace_escape": (
        probe("""
        import ctypes
        if ctypes.CDLL(None).unshare(0x10000000 | 0x00020000) != 0:
            raise PermissionError('unshare refused')
        """),
        "error: .*PermissionError",
    ),
    "become_root": (probe("import os\nos.setuid(0)\n"), "error: .*PermissionError"),
    # ---- the network
    "socket_loopback": (
        probe("""
        import socket
        socket.create_connection(('127.0.0.1', PORT), 2).sendall(b'leak')
        """),
        "error: .*OSError",
    ),
    "socket_outside": (
        probe("""
        import socket
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))
        """),
        "error: .*OSError",
    ),
    "unix_socket_on_host": (
        probe(f"""
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.connect({str(UNIX_SOCKET)!r})
        s.sendall(b'leak')
        """),
        "error: .*FileNotFoundError",
    ),
    # ---- other processes
    "signal_parent": (
        "import os\nos.kill(os.getppid(), 9)\ndef add(a, b):\n    return 0\n",
        "failed: assertion",
    ),
    "signal_the_harness": (
        probe("""
        import os
        me = os.readlink('/proc/self')
        harness = [p for p in os.listdir('/proc') if p.isdigit() and p != me
                   and b'python' in open(f'/proc/{p}/cmdline', 'rb').read()]
        hits = 0
        for p in harness:
            try:
                os.kill(int(p), 9)
                hits += 1
            except OSError:
                pass
        assert harness and hits, 'could not signal the harness'
        """),
        "error: .*AssertionError: could not signal",
    ),
    "signal_everything": (
        program("""
        import os
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    os.kill(int(p), 9)
                except OSError:
                    pass
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    "read_harness_environment": (
        probe("open('/proc/1/environ', 'rb').read()\n"),
        "error: .*(PermissionError|FileNotFoundError)",
    ),
    "orphan_setsid_child": (
        program("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        def add(a, b):
            return 0
        """),
        "failed: assertion",
    ),
    # ---- and a program that does not parse
    "syntax_error": ("def add(a, b)\n    return a + b\n", "error: .*SyntaxError"),
}
