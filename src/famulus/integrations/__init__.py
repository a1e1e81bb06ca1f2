"""Integrations with the person's own accounts and outside services (web, mail, calendar)."""
