"""SQL for long-term memory, one module per kind of thing it holds.

``facts`` (with entities and links), ``observations``, ``vectors``,
``profile`` (with dreams), ``learning``, ``recall`` (the full-text candidates
of a recall and the access it records), ``extraction`` (how far each session
has been read) and ``admin`` (stats, clear, audit). Every read returns frozen
dataclasses; JSON columns are decoded here so no caller sees a JSON string.
Like every store, writes go through the database's one writer and reads
through its reader pool.
"""
