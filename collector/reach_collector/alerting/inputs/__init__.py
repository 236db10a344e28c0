"""What the rules read: the ``AlertData`` protocol (``data``), its answers from the collector's
store (``store_data``), and the long windows of the topology rules kept as settled per-minute
counts (``settled``, ``topology_windows``).
"""
