"""Running the app as a school would: several replicas behind HAProxy (replicas.py, haproxy.cfg)."""
