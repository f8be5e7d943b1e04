"""I-RELIEF: iterative RELIEF with soft neighbours, in batch and online.

The batch estimator (``_irelief``), online I-RELIEF for streams over very large N
(``_online``), what a valid online state is (``_online_state``) and its checkpoint files
(``_checkpoint``).  The public names are exported by :mod:`dmargin`.
"""
