"""Sessions and their message history."""
