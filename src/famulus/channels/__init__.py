"""Channels: other ways in to famulus (Telegram, the OpenAI-compatible API, MCP).

Each channel is just another client of sessions and runs; it submits and
follows runs through ``chat/follow.py`` and never knows HTTP itself.
"""
