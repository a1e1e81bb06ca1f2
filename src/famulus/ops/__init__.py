"""Installing and operating famulus: backup and restore, doctor, the systemd unit.

These run as CLI commands beside (or instead of) a server; none of them starts
one, and none needs the HTTP layer.
"""
