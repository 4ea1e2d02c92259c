"""`gputui exporter`: serve this host's GPUs on /metrics for Prometheus.

Only argparse at import time; prometheus_client, the source and the catalog
load inside `run`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gputui.commands import add_source_arguments, open_given_source

DEFAULT_LISTEN = "127.0.0.1:9835"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "exporter",
        help="serve GPU metrics for Prometheus (dcgm-exporter names) on /metrics",
        description=(
            "Serve this host's GPUs on /metrics in the Prometheus text format, under "
            "dcgm-exporter's metric names, units and labels, plus gputui_* metrics for "
            "processes, throttle reasons, the catalog card and model fit. Polls once per "
            "--interval in the background; scrapes read the last poll. Listens on "
            f"{DEFAULT_LISTEN} unless --listen says otherwise. Docs: docs/cluster.md."
        ),
    )
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN}; 0.0.0.0:9835 for all interfaces)",
    )
    add_source_arguments(p, "host", path_type=Path)  # the registry's one-host sources
    p.add_argument(
        "--interval", type=float, default=5.0, help="seconds between polls (default 5; 0.2-3600)"
    )
    p.add_argument(
        "--hostname", metavar="NAME", help="the Hostname label (default: this host's name)"
    )
    p.add_argument(
        "--models",
        type=Path,
        metavar="MODELS.toml",
        help="export gputui_fit_max_batch for these models (default: ./gputui.toml or the "
        "user config's models.toml when present; never the shipped examples)",
    )
    p.add_argument(
        "--full-cmdline",
        action="store_true",
        help="also export each process's full command line (arguments can hold secrets)",
    )
    p.add_argument(
        "--tls-cert", type=Path, metavar="FILE", help="serve HTTPS with this certificate"
    )
    p.add_argument("--tls-key", type=Path, metavar="FILE", help="private key of --tls-cert")
    p.add_argument(
        "--tls-client-ca",
        type=Path,
        metavar="FILE",
        help="require client certificates signed by this CA (mutual TLS)",
    )
    p.add_argument(
        "--basic-auth-file",
        type=Path,
        metavar="FILE",
        help="require HTTP basic auth: user:password lines, mode 600 (needs TLS)",
    )
    p.set_defaults(run=run)


def _check_args(args: argparse.Namespace) -> None:
    from gputui.core.errors import UserError

    if not 0.2 <= args.interval <= 3600:
        raise UserError(f"--interval: {args.interval:g} s is out of range (0.2 to 3600)")
    if args.scenario is not None:
        from gputui.commands import checked_scenario

        args.scenario = checked_scenario(args.scenario)
    if (args.tls_cert is None) != (args.tls_key is None):
        raise UserError("--tls-cert and --tls-key go together")
    if args.tls_client_ca is not None and args.tls_cert is None:
        raise UserError("--tls-client-ca needs --tls-cert and --tls-key")
    if args.basic_auth_file is not None and args.tls_cert is None:
        raise UserError(
            "--basic-auth-file needs --tls-cert and --tls-key: without TLS the password "
            "would cross the network in clear"
        )
    # Every file an option names: a regular file of bounded size, checked before anything
    # starts; each is read through core/inputfile where it is used.
    from gputui.core.inputfile import check_option_file

    for flag in ("scenario", "models", "tls_cert", "tls_key", "tls_client_ca", "basic_auth_file"):
        path = getattr(args, flag)
        if path is not None:
            check_option_file(path, f"--{flag.replace('_', '-')}")
    if args.hostname is not None:
        from gputui.core.textsafe import is_visible

        if not args.hostname.strip() or not is_visible(args.hostname):
            raise UserError("--hostname: must be a non-empty name without control characters")


def _models(path: Path | None) -> tuple[Any, ...]:
    """The models to fit: --models, else a local or user models file; not the examples.

    Any file `gputui fit` reads (the importer registry); a model the exporter cannot
    answer per GPU is refused with one line, never dropped."""
    from gputui.core.errors import UserError
    from gputui.exporter.fitting import unservable
    from gputui.fit import load_any, shown
    from gputui.fit.paths import resolve_models_path

    resolved, origin = resolve_models_path(path)
    if origin == "shipped examples":
        return ()
    models = load_any(resolved)
    for model in models:
        why = unservable(model)
        if why is not None:
            raise UserError(f"--models {shown(resolved)}: {why}")
    return models


def run(args: argparse.Namespace) -> int:
    import sys

    from gputui.core.errors import UserError

    _check_args(args)
    try:
        from prometheus_client import CollectorRegistry
    except ImportError:  # pragma: no cover - a core dependency; only a broken install lacks it
        raise UserError(
            "the exporter needs the prometheus-client package: pip install prometheus-client"
        ) from None

    from gputui.exporter.poller import Poller
    from gputui.exporter.server import (
        MetricsServer,
        TlsFiles,
        is_loopback,
        load_users,
        parse_listen,
    )

    host, port = parse_listen(args.listen)
    users = load_users(args.basic_auth_file) if args.basic_auth_file is not None else None
    tls = (
        TlsFiles(args.tls_cert, args.tls_key, args.tls_client_ca)
        if args.tls_cert is not None
        else None
    )
    models = _models(args.models)
    source, fallback = open_given_source(args)
    if fallback is not None:
        print(
            f"gputui exporter: NVML unavailable ({fallback}); serving SIMULATED GPUs",
            file=sys.stderr,
        )

    from gputui.catalog import load_catalog

    poller = Poller(
        source,
        interval=args.interval,
        hostname=args.hostname,
        full_cmdline=bool(args.full_cmdline),
        catalog=load_catalog(),
        models=models,
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(poller)
    try:
        server = MetricsServer(
            registry, host, port, tls=tls, users=users, generation=lambda: poller.generation
        )
    except UserError:
        source.close()
        raise
    if not is_loopback(host):
        print(
            f"gputui exporter: warning: listening on {host}, reachable from other machines; "
            "process names and users are visible to anyone who can connect"
            + ("" if tls is not None else " (no TLS)"),
            file=sys.stderr,
        )
    import signal

    def _terminate(signum: int, _frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _terminate)
    poller.start()
    print(
        f"gputui exporter: serving {server.url} ({source.name} source)", file=sys.stderr, flush=True
    )
    try:
        server.serve_forever()
    finally:
        poller.stop()
        server.shutdown()
        source.close()
    return 0
