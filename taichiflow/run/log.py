"""The run's log file (run.log), echoed to the terminal unless quiet."""
from __future__ import annotations

import datetime
import sys


class RunLog:
    def __init__(self, path, echo: bool = True):
        self.path, self.echo = path, echo

    def __enter__(self):
        self._file = open(self.path, "a", encoding="utf-8")
        return self

    def write(self, message: str):
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        self._file.write(f"{stamp} {message}\n")
        self._file.flush()
        if self.echo:
            print(message, file=sys.stderr)

    def __exit__(self, *exc):
        self._file.close()
        return False
