"""Who hears of an alert, and how: the pipeline route → inhibit → group → dedup/repeat/escalate
(``pipeline``, ``grouping``), delivery with retries and a record of each attempt (``delivery``),
the wire formats and sender (``webhook``), the Alertmanager push (``pusher``), the links a page
carries (``links``) and the collector's log lines of what alerting did (``log_lines``).
"""
