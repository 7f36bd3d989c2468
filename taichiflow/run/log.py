"""The run's log file (run.log), echoed to the terminal unless quiet."""
from __future__ import annotations

import datetime
import sys
from pathlib import Path

from ..io import naming


class RunLog:
    def __init__(self, path, echo: bool = True):
        self.path, self.echo = path, echo

    def __enter__(self):
        with naming(self.path):
            self._file = open(self.path, "a", encoding="utf-8")
        return self

    def write(self, message: str):
        """A line of the log, also on the terminal unless quiet."""
        self.record(message)
        if self.echo:
            print(message, file=sys.stderr)

    def record(self, message: str):
        """A line of the log only (an error the command line prints itself)."""
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        with naming(self.path):  # (a full disk's write error knows no file name)
            self._file.write(f"{stamp} {message}\n")
            self._file.flush()

    def warn(self, message: str):
        """A line of the log that the terminal shows even when quiet."""
        self.record(f"WARNING: {message}")
        print(f"taichiflow: warning: {message}", file=sys.stderr)

    def __exit__(self, *exc):
        self._file.close()
        return False


class NoLog:
    """The log of a rank other than 0 of an MPI run: rank 0 keeps the run's one log."""

    def write(self, message: str):
        pass

    def record(self, message: str):
        pass

    def warn(self, message: str):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def append(path, *messages: str) -> None:
    """Lines added to a log that no run holds open (an attempt that ended before its run began)."""
    with RunLog(Path(path), echo=False) as log:
        for message in messages:
            log.record(message)
