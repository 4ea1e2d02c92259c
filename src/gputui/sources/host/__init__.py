"""The host side of a poll: CPU, memory, and who each GPU process is."""
