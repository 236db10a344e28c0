"""Package data: the Grafana dashboards as JSON, written by `dashboards/build.py` (do not edit)."""
