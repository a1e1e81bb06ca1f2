"""``python -m famulus``: the same command as ``famulus``."""

from famulus.cli import app

if __name__ == "__main__":
    app(prog_name="famulus")
