"""The ground floor: errors, sanitising, safe TOML and file reads, output, shipped data."""
