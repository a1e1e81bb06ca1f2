"""Storage: the only package that speaks SQL.

One SQLite file in WAL mode. All writes go through a single writer thread so
they never contend for the lock; reads run on a small pool of read-only
connections off the event loop. Each area of data has one repository module
that owns all of its SQL.
"""
