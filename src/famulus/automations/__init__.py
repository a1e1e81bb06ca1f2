"""Automations: scheduled, interval and event-triggered agent tasks."""
