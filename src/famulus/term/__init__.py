"""The terminal client (``famulus chat``): an HTTP client of the documented API,
so it works against any running famulus, local or remote."""
