"""Recordings: every poll of a session kept in one SQLite file, to replay and report on.

`store.Recorder` writes (`gputui record`, `gputui --record FILE`); `reader.open_recording`
reads (`gputui replay`, the replay source, `gputui report`). Below sources/ and history/:
this package imports only model/ and core/ (docs/architecture.md, docs/record.md).
"""
