"""A mapped file: one fixed-size segment of a log, memory-mapped, with write and flush marks.

CommitLog segments and ConsumeQueue files are all ``MappedFile``s. The file is created at its
full size up front (``ftruncate``: sparse, instant), named by the logical offset of its first
byte (20 digits, zero-padded), and mapped read-write once. Writers copy bytes into the map and
advance ``wrote``; ``flush`` fsyncs the file descriptor (which writes back dirty mapped pages on
Linux) and advances ``flushed``. Readers take memoryview slices of the map: no copies.

**Writes through a map must land on allocated blocks.** Storing into a page of a sparse file
makes the kernel allocate a block at fault time; if the disk is full the only way it can say so
is SIGBUS, which kills the process without a log line. So writers ``reserve`` before they write:
the range from the write position to a window beyond it is ``fallocate``d, which either backs
it with blocks or fails with ENOSPC as an ordinary ``OSError`` before a single byte is written.
One ``fallocate`` per window keeps appends free of syscalls, and the same call asks
for the pages in the page cache (``MADV_WILLNEED``), which makes the first write to each page
cheap. This holds on filesystems that honour ``fallocate`` (ext4, XFS, tmpfs); copy-on-write
filesystems (btrfs with snapshots, ZFS) may still need new blocks when a page is written.

It does not know what the bytes mean, and it is not thread-safe except for ``sync_fd``, which a
flusher may run in a worker thread while the owner keeps appending.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import re
from pathlib import Path
from typing import Final

from rocketq.store.errors import StoreFileError

__all__ = ["MappedFile", "StoreFileError", "allocate", "file_name", "fsync_dir", "load_segments"]

log = logging.getLogger(__name__)

PAGE_SIZE: Final = mmap.PAGESIZE
RESERVE_WINDOW: Final = 4 * 1024 * 1024
"""How far beyond the writer blocks are allocated and pages requested, in one step, by default
(the CommitLog). Bounded so that a new 1 GiB segment costs neither a 1 GiB allocation up front
nor the memory to cache it. Files of which many are written at once (one ConsumeQueue file per
queue) pass a smaller window: what is reserved counts as used disk space."""
NAME_DIGITS: Final = 20
_NAME = re.compile(r"^\d{20}$")


def file_name(offset: int) -> str:
    return f"{offset:0{NAME_DIGITS}d}"


def is_segment_name(name: str) -> bool:
    return bool(_NAME.match(name))


class MappedFile:
    """One segment file mapped in memory."""

    # slots: the C appends read and move ``wrote``, ``size``, ``reserved`` and ``start`` at their
    # slots (native/attributes.c), cheaper than through an instance dict
    __slots__ = ("_fd", "buf", "closed", "flushed", "path", "repaired_from", "reserve_window", "reserved", "size",
                 "start", "view", "wrote")

    def __init__(self, path: Path, size: int, *, create: bool = False, reserve_window: int = RESERVE_WINDOW) -> None:
        """Map an existing segment, or with ``create`` make a new one (which must not exist)."""
        if not is_segment_name(path.name):
            raise StoreFileError(f"{path}: a segment file name is 20 digits")
        self.path = path
        self.size = size
        self.start = int(path.name)
        self.wrote = 0
        """Bytes written from the segment start (the next write position)."""
        self.flushed = 0
        """Bytes known to be on disk from the segment start."""
        self.repaired_from: int | None = None
        """Set by ``load_segments`` on a short last file it extended: the bytes it kept."""
        self.reserve_window = reserve_window
        self.reserved = 0
        """Bytes from the segment start known to be allocated (fallocate) and requested into the
        page cache; page-aligned or the whole file. Below ``wrote`` bytes are allocated anyway."""
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        try:
            self._fd = os.open(path, flags, 0o644)
        except OSError as exc:
            raise StoreFileError(f"cannot open segment {path}: {exc.strerror}") from None
        try:
            if create:
                os.ftruncate(self._fd, size)
            actual = os.fstat(self._fd).st_size
            if actual != size:
                raise StoreFileError(f"{path} is {actual} bytes, expected {size}")
            self.buf = mmap.mmap(self._fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(self._fd)
            raise
        self.view = memoryview(self.buf)
        self.closed = False

    @property
    def end(self) -> int:
        """Logical offset just past the segment."""
        return self.start + self.size

    @property
    def write_offset(self) -> int:
        """Logical offset of the next write."""
        return self.start + self.wrote

    @property
    def remaining(self) -> int:
        return self.size - self.wrote

    @property
    def is_full(self) -> bool:
        return self.wrote >= self.size

    def reserve(self, upto: int) -> None:
        """Allocate blocks for the bytes from the write position to ``upto`` and a window beyond.

        Raises OSError (ENOSPC when the disk is full) having written nothing; a later call can
        try again. With little space left it settles for exactly ``upto``.
        """
        start = max(self.reserved, self.wrote - self.wrote % PAGE_SIZE)
        if upto <= start:
            return
        self.reserved = allocate(self._fd, start, upto, self.size, self.reserve_window)
        self.buf.madvise(mmap.MADV_WILLNEED, start, self.reserved - start)

    def dirty_pages(self) -> int:
        return (self.wrote // PAGE_SIZE) - (self.flushed // PAGE_SIZE)

    def sync_fd(self) -> None:
        """fdatasync the file: blocking, safe to call from a worker thread."""
        os.fdatasync(self._fd)

    @property
    def fd(self) -> int:
        return self._fd

    def truncate_tail(self, position: int) -> None:
        """Discard everything from ``position`` on: the bytes read as zeros afterwards.

        Shrinking then re-growing the file drops the tail's blocks (and the page cache zeroes
        the partial page) without writing up to a gigabyte of zeros.
        """
        if not 0 <= position <= self.size:
            raise ValueError(f"truncate position {position} outside 0..{self.size}")
        os.ftruncate(self._fd, position)
        os.ftruncate(self._fd, self.size)
        self.wrote = min(self.wrote, position)
        self.flushed = min(self.flushed, position)
        self.reserved = min(self.reserved, position - position % PAGE_SIZE)  # the tail's blocks are gone

    def close(self) -> None:
        """Unmap and close; idempotent. A reader still holding a slice keeps the map alive."""
        if self.closed:
            return
        self.closed = True
        self.view.release()
        try:
            self.buf.close()
        except BufferError:
            # A pull response still references this segment; the map is released with it.
            log.debug("segment %s still referenced by a reader; unmapping later", self.path.name)
        os.close(self._fd)

    def destroy(self) -> None:
        """Close and delete the file."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def __repr__(self) -> str:
        return f"MappedFile({self.path.name}, wrote={self.wrote}, flushed={self.flushed})"


def allocate(fd: int, start: int, upto: int, size: int, window: int = RESERVE_WINDOW) -> int:
    """Allocate the file's blocks from ``start`` to ``upto`` plus ``window`` (within ``size``);
    returns the end allocated: page-aligned, or ``size``.

    When the window does not fit on the disk, only up to ``upto`` (rounded up to a page) is
    tried, so the last free blocks are still used; if that fails too the OSError is raised.
    """
    needed = min(size, upto + (-upto) % PAGE_SIZE)
    wanted = min(size, upto + max(window, PAGE_SIZE))
    if wanted < size:
        wanted -= wanted % PAGE_SIZE
    try:
        os.posix_fallocate(fd, start, wanted - start)
        return wanted
    except OSError as exc:
        if exc.errno != errno.ENOSPC or needed >= wanted:
            raise
    os.posix_fallocate(fd, start, needed - start)
    return needed


def fsync_dir(directory: Path) -> None:
    """Make a directory's entries durable (a new or removed file survives a power loss)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def list_segments(directory: Path) -> list[Path]:
    """Segment files of a directory in offset order; other names are reported and skipped."""
    if not directory.is_dir():
        return []
    paths = []
    for entry in directory.iterdir():
        if is_segment_name(entry.name) and entry.is_file():
            paths.append(entry)
        else:
            log.warning("ignoring %s: not a store segment file", entry)
    return sorted(paths, key=lambda p: int(p.name))


def load_segments(directory: Path, size: int, *, unit: int = 1, setting: str = "the file size setting",
                  reserve_window: int = RESERVE_WINDOW) -> list[MappedFile]:
    """Map a directory's segments; checks that they are contiguous and of the expected size.

    The last file may be short: a crash while it was being created, or a copy cut off. Its
    bytes are kept (cut to whole ``unit``s) and it is extended back to ``size``; recovery then
    finds where its valid data ends, and ``repaired_from`` on it says a repair happened. A
    zero-length last file holds nothing and is removed. Any other size mismatch (an older
    file, or a last file that is larger: ``setting`` was changed) or a gap stops the store.
    """
    paths = list_segments(directory)
    if paths and paths[-1].stat().st_size == 0:
        log.warning("removing empty segment %s left by an interrupted roll", paths[-1])
        paths.pop().unlink()
    for path in paths[:-1]:  # before the last file is touched: a changed setting must not repair it
        actual = path.stat().st_size
        if actual != size:
            raise StoreFileError(f"{path} is {actual} bytes, expected {size}: is {setting}={size} what "
                                 "the store was written with?")
    repaired = _extend_short_last(paths[-1], size, unit) if paths else None
    files: list[MappedFile] = []
    try:
        for path in paths:
            try:
                mapped = MappedFile(path, size, reserve_window=reserve_window)
            except StoreFileError as exc:
                raise StoreFileError(f"{exc}: is {setting}={size} what the store was written with?") from None
            if files and files[-1].end != mapped.start:
                mapped.close()
                raise StoreFileError(f"{path}: expected a segment starting at {files[-1].end}; "
                                     "files are missing from the middle of the log")
            files.append(mapped)
    except BaseException:
        for mapped in files:
            mapped.close()
        raise
    if files:
        files[-1].repaired_from = repaired
    return files


def _extend_short_last(path: Path, size: int, unit: int) -> int | None:
    """Extend a last segment shorter than ``size``; returns the bytes kept, None if whole."""
    actual = path.stat().st_size
    if actual >= size:
        return None
    kept = actual - actual % unit
    log.warning("%s is %d bytes, expected %d: a crash while it was created or an incomplete copy; "
                "extending it (its first %d bytes are kept, recovery finds where they end)",
                path, actual, size, kept)
    try:
        os.truncate(path, kept)
        os.truncate(path, size)
    except OSError as exc:
        raise StoreFileError(f"cannot extend the short segment {path}: {exc.strerror}") from None
    return kept
