"""Plain data types every layer shares (Snapshot and friends), and their JSON schema."""
