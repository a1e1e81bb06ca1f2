"""The web client's static files."""
