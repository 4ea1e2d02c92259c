"""`gputui exporter`: what gputui sees, served to Prometheus under dcgm-exporter's names.

- `families.py`: a Snapshot (plus fit answers and catalog names)
  as Prometheus metric families. Pure; the tests parse its output.
- `poller.py`: polls the source once per interval on a background thread and
  keeps the families of the last poll, so a scrape never waits on NVML and ten
  scrapers do not mean ten polls.
- `server.py`: the HTTP endpoint (prometheus_client's WSGI app), with optional
  TLS and basic auth, behind request guards that never print a traceback.
- `connections.py`: the bounded acceptor (deadlines, worker threads).
- `errorlog.py`: the one-line, rate-limited log the request path writes to.
- `listen.py`: `--listen HOST:PORT`, bounded.
"""
