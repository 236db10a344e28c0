"""Everything computed from stored spans, with ``now`` always an argument: golden and multi-agent
metrics (``metrics``), the agent topology (``topology``), a handoff's one outcome
(``handoff_outcome``), and the trace JSON of §9 (``views``, ``trace_columns``). Queries run on
any store through its dialect (``store.dialect``); nothing here writes.
"""
