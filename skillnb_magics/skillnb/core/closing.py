"""A base for objects that hold files, connections or locks (core layer).

Subclasses define :meth:`Closing.close`; ``with obj: ...`` then closes them on the way out,
whatever happened inside.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["Closing"]


class Closing:
    """Closed by ``with``: ``__enter__`` returns the object, ``__exit__`` calls ``close``."""

    def close(self) -> None:
        """Release what the object holds (subclasses define it)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
