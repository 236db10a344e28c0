"""HTTP routers, one per resource; they validate and delegate to ingest/ and store/."""
