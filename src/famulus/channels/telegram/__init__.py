"""Two-way Telegram: long-polls the Bot API and answers approved chats.

- ``botapi``: a small typed client for the Bot API methods used;
- ``markdown``: the agent's Markdown as the HTML Telegram renders, in parts;
- ``pairing``: one-time codes that let the owner approve a chat;
- ``reply``: one answer, streamed by editing messages at a polite rate;
- ``conversation``: what one update from an approved chat does;
- ``channel``: the polling loop and its state (what GET /channels/telegram shows).
"""
