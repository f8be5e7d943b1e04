"""I-RELIEF: iterative RELIEF with soft neighbours, in batch and online.

Online I-RELIEF streams very large N, and its state survives in checked, atomically
written checkpoint files.  The public names are exported by :mod:`dmargin`.
"""
