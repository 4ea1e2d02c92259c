"""Text and JSON renderings of snapshots, clusters and fit answers, for the CLI."""
