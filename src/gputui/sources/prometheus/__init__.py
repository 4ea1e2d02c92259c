"""A fleet read from a Prometheus server (the HTTP API client and the cluster source)."""
