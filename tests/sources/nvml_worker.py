"""Runs NvmlSource in its own process for the contract suite (tests/sources/conftest.py).

The simulated libnvidia-ml.so.1 reads its scenario once per process, and the
test process must not load a real or fake NVML library behind the other
tests' back. Protocol on stdin/stdout: the worker answers `ready` once open,
then one snapshot per `poll` line, until `close`; every answer is a 4-byte
big-endian length and a pickle (an exception is pickled in place of a reply).
"""

from __future__ import annotations

import pickle
import struct
import sys


def _send(value: object) -> None:
    data = pickle.dumps(value)
    sys.stdout.buffer.write(struct.pack("!I", len(data)) + data)
    sys.stdout.buffer.flush()


def main() -> int:
    from gputui.sources.base import open_source

    try:
        source, _ = open_source("nvml", with_host=True)  # by name, as `--source nvml` opens it
    except Exception as exc:
        _send(RuntimeError(f"{type(exc).__name__}: {exc}"))
        return 1
    _send("ready")
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "close":
                break
            try:
                _send(source.poll())
            except Exception as exc:
                _send(RuntimeError(f"poll() raised {type(exc).__name__}: {exc}"))
    finally:
        source.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
