"""The team store: runs kept in PostgreSQL, behind the same contract as the sidecar (store layer).

:class:`~skillnb.store.postgres.store.PostgresStore` with its schema and upgrades, sessions,
pooled connections, the one-round-trip append on libpq, batch items as rows, ``LISTEN``/``NOTIFY``
waits, listings and URL handling. The database driver is imported only when a store is opened,
so :mod:`skillnb.store.postgres.url` stays cheap to import for telling a URL from a folder.
"""
