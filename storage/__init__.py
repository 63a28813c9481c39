"""Storage: the only package that opens SQLite. Schema, migrations, queries, transactions."""
