"""Channels: ways to talk to famulus from outside its own API (Telegram, …).

A channel is just another client of sessions and runs: it submits messages
with ``chat.follow`` and renders the run's events in its own medium.
"""
