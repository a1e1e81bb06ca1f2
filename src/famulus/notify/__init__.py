"""Notifiers: where automation results go (Telegram, e-mail, webhook)."""
