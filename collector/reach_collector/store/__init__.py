"""Storage: the DuckDB schema and the store that owns every SQL statement."""
