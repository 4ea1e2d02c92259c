"""Alert rules over snapshots: a pure engine (`engine.AlertEngine`), its rules and their
config (`rules`), and what each NVIDIA XID means (`xid`, data in `xid.toml`).

Imports only model/ and core/: the dashboard, `gputui watch` and a recorder all run
the same engine on the snapshots they already have.
"""
