"""One module per subcommand: `register(subparsers)` adds its parser, `run(args)` does the work.

Modules here import only argparse at top level; heavy imports go inside `run`.
"""
