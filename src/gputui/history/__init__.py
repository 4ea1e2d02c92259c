"""Rolling histories of what the sources reported, for the charts and sparklines."""
