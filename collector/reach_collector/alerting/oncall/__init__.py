"""On call: the ``users``, ``schedules``, ``escalation_policies`` and ``routing`` sections (``config``)
and who is on call at an instant and why (``rotation``).
"""
