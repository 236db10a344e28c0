"""Start-up hook directory for `reach-otel run` (its sitecustomize is put first on PYTHONPATH)."""
