"""Host-wide inode counters that a candidate both moves and reads, moved by the zygote before
every candidate so that the place a job leaves them at tells the next job nothing.

Two kernel counters number the inodes of objects any program makes and inspects:
`get_next_ino` (pipes, sockets, proc's inodes, POSIX message queues: `fstat`, `/proc/self/fd`)
and the internal shmem mount (shared anonymous maps, System V shared memory: the inode column of
`/proc/self/maps`; `memfd_create`, its third user, is refused by seccomp). No filter can refuse
the calls or hide `st_ino`. Each hands its numbers to CPUs in batches of BATCH: a CPU counts up
through its batch and takes the next free batch when it is used up. So a job could leave its
CPU at a place in the batch of its choice, and the next job on that CPU read it back exactly.

A slot's zygote and its candidates are pinned to one CPU (`pool`; a candidate cannot change its
CPUs or leave the slot's cgroup), so that CPU's places are the only ones a candidate moves or
reads. `Scrambler.scramble`, in the zygote at set-up and after each candidate is gone (the slot
asks, `pool.Slot.kill`, before it makes anything for the next job: the next candidate's channel
socket and output memfd, whose inode numbers it can read, come from the fresh places), moves
them to a fresh uniform place: whatever place the last job chose, the next one's is independent
of it.

* `get_next_ino`: moved every time by a fresh random count in [0, BATCH) of sockets that the
  kernel makes and drops at once (a `socket` call with a protocol its family refuses numbers a
  socket inode before it fails: one system call, no descriptor), 1 to 2 us each.
* shmem: a shared map costs about 6 us, so it is moved only when a job moved it. The zygote
  probes its place with one shared map of its own (its other maps are private); if the number is
  not the one its previous probe predicts (the next but one: the slot's trusted worker makes one
  memfd on this CPU between two scrambles, for the next candidate's output), something on this
  CPU (the last candidate, or another process) took numbers since, and it moves the counter by a
  fresh random count in [0, BATCH) of shared maps.
  A job that moved nothing leaves the place its own probe left, which the harness drew, not the
  job (the last draw stays secret: no job can tell it from a fresh one).

What remains shared is the count of batches taken (docs/security.md, "Kernel state that stays
shared"): a job moves it only by using up whole batches of its CPU, and reads it only when its
CPU takes a new one.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import secrets

from .rootfs import libc as _libc
from .rootfs import map_memory

BATCH = 1024  # numbers a CPU takes from either counter at a time (the kernel's LAST_INO_BATCH,
#               SHMEM_INO_BATCH)
WORKER_SHMEM = 1  # shmem numbers the slot's trusted worker takes between two scrambles
#                   (`harness`: the memfd holding the next candidate's output)
SCRAMBLE = b"s"  # the slot's request to the zygote, once a candidate is gone, and its answer
PAGE = mmap.PAGESIZE
AF_UNIX, SOCK_DGRAM, REFUSED_PROTOCOL = 1, 2, 99

_socket = _libc.socket
_socket.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int)
_munmap = _libc.munmap
_munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
MAP_SHARED_ANONYMOUS = mmap.MAP_SHARED | mmap.MAP_ANONYMOUS


def move_socket_inodes(count: int) -> None:
    """`count` numbers of `get_next_ino` taken on this CPU (each call fails after its socket
    inode was made: AF_UNIX accepts protocol 0 only)."""
    make = _socket
    for _ in range(count):
        make(AF_UNIX, SOCK_DGRAM, REFUSED_PROTOCOL)


def shared_page() -> int:
    """A page of shared anonymous memory, mapped (it takes a number of the shmem counter)."""
    return map_memory(PAGE, mmap.PROT_READ, MAP_SHARED_ANONYMOUS, -1, "a shared page")


def move_shmem_inodes(count: int) -> None:
    """`count` numbers of the shmem counter taken on this CPU (a shared page each)."""
    for _ in range(count):
        _munmap(shared_page(), PAGE)


class _MapQuery(ctypes.Structure):
    """struct procmap_query (Linux 6.11+): the map covering `query_addr`, its inode number."""

    _fields_ = [
        *((name, ctypes.c_uint64) for name in ("size", "query_flags", "query_addr")),
        *((name, ctypes.c_uint64) for name in ("vma_start", "vma_end", "vma_flags")),
        *((name, ctypes.c_uint64) for name in ("vma_page_size", "vma_offset", "inode")),
        *((name, ctypes.c_uint32) for name in ("dev_major", "dev_minor")),
        *((name, ctypes.c_uint32) for name in ("vma_name_size", "build_id_size")),
        *((name, ctypes.c_uint64) for name in ("vma_name_addr", "build_id_addr")),
    ]


PROCMAP_QUERY = 0xC0000000 | ctypes.sizeof(_MapQuery) << 16 | ord("f") << 8 | 17  # _IOWR
_libc.ioctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)


def _inode_of_map(maps: int, address: int) -> int:
    """The inode number of the map at `address`, asked of /proc/self/maps (open as `maps`):
    PROCMAP_QUERY, about 10 us, else the file read (a millisecond or more in a big process)."""
    query = _MapQuery(size=ctypes.sizeof(_MapQuery), query_addr=address)
    if _libc.ioctl(maps, PROCMAP_QUERY, ctypes.byref(query)) == 0:
        return query.inode
    prefix = f"{address:x}-".encode()
    with open("/proc/self/maps", "rb") as lines:
        for line in lines:
            if line.startswith(prefix):
                return int(line.split()[4])
    raise RuntimeError("a shared map missing from /proc/self/maps")


def shmem_number(maps: int) -> int:
    """The number the shmem counter gives this CPU next (one taken: a shared map of our own;
    `maps`: /proc/self/maps, open)."""
    address = shared_page()
    try:
        return _inode_of_map(maps, address)
    finally:
        _munmap(address, PAGE)


class Scrambler:
    """The zygote's: both counters' places on its CPU made fresh before each candidate."""

    def __init__(self) -> None:
        self.next_shmem = -1  # what the next probe reads if nothing else took a number
        self.maps = -1  # /proc/self/maps, opened at the first job (after the zygote's chroot)

    def scramble(self) -> None:
        if self.maps < 0:
            self.maps = os.open("/proc/self/maps", os.O_RDONLY | os.O_CLOEXEC)
        if shmem_number(self.maps) != self.next_shmem:
            move_shmem_inodes(secrets.randbelow(BATCH))
            self.next_shmem = shmem_number(self.maps)
        self.next_shmem += 1 + WORKER_SHMEM
        move_socket_inodes(secrets.randbelow(BATCH))
