"""The descriptor appends go through: opened safely, written once, fsynced now or later (store).

:class:`Appender` keeps one ``O_WRONLY | O_APPEND`` descriptor on the live journal, opened
without following a symlink and checked against the identity (``st_dev``, ``st_ino``) of the
file the store's :class:`~skillnb.store.sidecar.tail.JournalTail` read and validated, so lines only
ever go to that file. It is opened once and kept while the journal stays the same file.

An append's lines are written with one ``os.write``. They are then fsynced at once, or the
fsync is *owed*: the store pays it with :meth:`Appender.settle` once it has let the writer lock
go (group commit, below). An owed fsync is always
paid before the descriptor is closed or replaced. A write that fails is undone: the partial
lines are cut and the tail forgets the file, so the next look reads it again.

Group commit: the lines of an append are written under the lock, and the fsync that makes
them durable runs when the outermost hold of the lock ends, after other processes may take
it. Writers waiting for the lock then append meanwhile, and one fsync, which flushes the
whole file, may cover several writers' appends; with several processes writing to one run,
fewer of them wait for the disk while holding the lock. Every writer still calls fsync, and
the fsyncs of several writers overlap: the file system commits the ones in flight together
(ext4's journal does), and the disk works on several at once. A shared "durable up to" mark
under a second lock, with which one writer fsyncs for all and the others skip theirs,
halves the fsyncs but puts them in single file: with 4 writer processes it reached about
2.5 times the rate of fsync under the lock where overlapping fsyncs reach about 3.5 to 4
(``benchmarks/store.py``'s race, same runs), and a single writer paid more, so it is not
used. Nothing is acknowledged earlier: a caller that holds the store's lock around its
appends (as :class:`~skillnb.service.journal.RunJournal` does) gets control back from its
``with`` block only once the fsync is done, and one that calls ``append`` alone, once
``append`` returns. Other processes may read lines that are not yet durable (as with
``sync=False``); any of them that appends and acknowledges fsyncs those lines with its own.
Should that fsync fail, its lines cannot be cut any more (others may follow them): the error
is raised to the writer, whose write is then of unknown durability, and the journal is read
again from the file.

Store layer. The caller holds the store's thread lock around every method.
"""

from __future__ import annotations

import os

from skillnb.store.durable import PhaseHook, file_ops, flush, open_file, write_all
from skillnb.store.sidecar.tail import JournalTail

__all__ = ["Appender"]


class Appender:
    """The append descriptor of the journal ``tail`` follows.

    Args:
        tail: the store's view of the live journal (its path, identity and committed end).
        hook: called with ``append.written`` and ``append.synced`` (crash tests stop there);
            ``None``: nothing is called.

    """

    def __init__(self, tail: JournalTail, hook: PhaseHook | None) -> None:
        self._tail = tail
        self._hook = hook
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self.owes_fsync = False
        """Lines were written and their fsync is left to :meth:`settle`."""

    def descriptor(self) -> int:
        """The open descriptor of the journal the tail read (opened or reopened as needed).

        Raises:
            UnsafePath: the journal is a symlink or not a regular file.

        """
        if self._fd is None or self._identity != self._tail.identity:
            self.close()
            fd = open_file(self._tail.path, os.O_WRONLY | os.O_APPEND)
            st = os.fstat(fd)
            self._fd, self._identity = fd, (st.st_dev, st.st_ino)
            if self._identity != self._tail.identity:  # replaced between two syscalls
                self._tail.reload()
                return self.descriptor()
        return self._fd

    def current(self, identity: tuple[int, int] | None) -> int | None:
        """The open descriptor when it is of the file ``identity`` names; else ``None``."""
        return self._fd if identity == self._identity and identity is not None else None

    def write(self, data: bytes, *, sync: bool, later: bool, fd: int | None = None) -> None:
        """Write ``data`` at the end of the journal, all or nothing.

        Args:
            data: whole lines (see :func:`~skillnb.store.sidecar.journal.encode_events`).
            sync: make them durable against a crash of the machine.
            later: with ``sync``, owe the fsync to :meth:`settle` instead of paying it now.
            fd: what :meth:`descriptor` just returned, if the caller asked (else asked here).

        Raises:
            OSError: the write or the fsync failed; the lines were cut again.

        """
        if fd is None:
            fd = self.descriptor()
        try:
            write_all(fd, data)
            if self._hook is not None:  # no call at all on every commit outside crash tests
                self._hook("append.written")
            if sync and not later:
                flush(fd)
        except BaseException:
            self._undo()
            raise
        if sync and later:
            self.owes_fsync = True
        elif self._hook is not None:
            self._hook("append.synced")

    def settle(self) -> None:
        """Pay an owed fsync (nothing when none is owed).

        Raises:
            OSError: the fsync failed. The lines stay (another writer may already follow
                them): the tail forgets the file, and the caller reports the failure.

        """
        if not self.owes_fsync:
            return
        self.owes_fsync = False
        if self._fd is None:
            return
        try:
            file_ops().flush(self._fd)  # durable.flush, one call less on every commit
        except BaseException:
            self.close()
            self._tail.close()  # the journal is read again from the file
            raise
        if self._hook is not None:
            self._hook("append.synced")

    def cut_to(self, end: int) -> None:
        """Cut the journal back to ``end`` bytes, durably (a torn tail moved aside; lock held)."""
        fd = self.descriptor()
        os.ftruncate(fd, end)
        flush(fd)

    def close(self) -> None:
        """Pay an owed fsync, then close the descriptor (closed even when the fsync fails)."""
        try:
            self.settle()
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = self._identity = None

    def _undo(self) -> None:
        """After a failed write or fsync: cut the partial lines, forget the file position."""
        try:
            if self._fd is not None:
                os.ftruncate(self._fd, self._tail.end)
        finally:
            self.close()
            self._tail.close()
