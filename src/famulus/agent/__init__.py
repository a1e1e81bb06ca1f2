"""The agent: prompt assembly, toolsets, the run loop, compaction, token accounting.

Nothing here knows about HTTP; ``chat`` drives it and supplies an event sink.
"""
